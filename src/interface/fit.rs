//! Text cut to a width in terminal columns: what does not fit keeps its start and ends with `…`,
//! so that a cut is always seen (the header, the bar's notices, names and prompts quoted in them).

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The mark that ends a cut text.
pub(crate) const ELLIPSIS: char = '…';

/// The columns `text` takes on a terminal.
#[must_use]
pub(crate) fn columns(text: &str) -> usize {
    text.width()
}

/// `text` in at most `width` columns: whole when it fits, else its start and `…` (nothing when
/// `width` is 0).
#[must_use]
pub(crate) fn cut(text: &str, width: usize) -> String {
    if columns(text) <= width {
        return text.to_owned();
    }
    let Some(room) = width.checked_sub(1) else {
        return String::new();
    };
    let mut kept = String::new();
    let mut used = 0;
    for c in text.chars() {
        let wide = c.width().unwrap_or(0);
        if used + wide > room {
            break;
        }
        used += wide;
        kept.push(c);
    }
    kept.push(ELLIPSIS);
    kept
}

/// `text` in rows of at most `width` columns, broken at spaces (a word wider than a row is
/// broken where the row ends), at most `rows` of them (the last one cut when more would follow);
/// one empty row for empty text.
#[must_use]
pub(crate) fn wrap(text: &str, width: usize, rows: usize) -> Vec<String> {
    let width = width.max(1);
    // Each row's start in `text`, and its text.
    let mut wrapped: Vec<(usize, String)> = vec![(0, String::new())];
    let mut used = 0;
    let mut offset = 0;
    for word in text.split(' ') {
        let fits = used + usize::from(used > 0) + columns(word) <= width;
        if fits || used == 0 {
            if used > 0 {
                if let Some((_, row)) = wrapped.last_mut() {
                    row.push(' ');
                }
                used += 1;
            }
        } else {
            wrapped.push((offset, String::new()));
            used = 0;
        }
        let mut at = offset;
        for c in word.chars() {
            let wide = c.width().unwrap_or(0);
            if used + wide > width && used > 0 {
                wrapped.push((at, String::new()));
                used = 0;
            }
            if let Some((_, row)) = wrapped.last_mut() {
                row.push(c);
            }
            used += wide;
            at += c.len_utf8();
        }
        offset += word.len() + 1;
    }
    if wrapped.len() > rows {
        let last = rows.max(1) - 1;
        let start = wrapped[last].0;
        wrapped.truncate(last);
        wrapped.push((start, cut(&text[start..], width)));
    }
    wrapped.into_iter().map(|(_, row)| row).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrap_fills_rows_and_cuts_the_last_it_may_have() {
        assert_eq!(wrap("", 4, 2), [""]);
        assert_eq!(wrap("abcdefgh", 4, 3), ["abcd", "efgh"]);
        assert_eq!(wrap("abcdefghij", 4, 2), ["abcd", "efg…"]);
        assert_eq!(wrap("日本語", 4, 2), ["日本", "語"]);
        // Broken at spaces.
        assert_eq!(
            wrap("no route to gpu · retried after 1 s", 12, 4),
            ["no route to", "gpu ·", "retried", "after 1 s"]
        );
        assert_eq!(wrap("no route to gpu", 12, 1), ["no route to…"]);
    }

    #[test]
    fn a_cut_keeps_the_start_and_ends_with_an_ellipsis() {
        assert_eq!(cut("type a line", 20), "type a line");
        assert_eq!(cut("type a line", 11), "type a line");
        assert_eq!(cut("type a line", 10), "type a li…");
        assert_eq!(cut("type", 1), "…");
        assert_eq!(cut("type", 0), "");
        // Wide characters count two columns, and are never halved.
        assert_eq!(cut("日本語の名前", 6), "日本…");
        assert_eq!(columns(&cut("日本語の名前", 6)), 5);
    }
}
