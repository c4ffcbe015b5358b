//! Lines of a call's clean text as they come, matched against a pattern: what a detach on a
//! ready line, a project's ready pattern and an agent's wait for a line all look for.

use regex::Regex;

/// A line longer than this is matched by its first part only: a flood with no newline must not
/// grow without bound.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// Finds the first line of text fed in pieces that matches a pattern.
pub(crate) struct LineMatcher {
    pattern: Regex,
    /// The last line so far, not ended yet.
    open: String,
}

impl LineMatcher {
    #[must_use]
    pub fn new(pattern: Regex) -> Self {
        Self {
            pattern,
            open: String::new(),
        }
    }

    #[must_use]
    pub fn pattern(&self) -> &Regex {
        &self.pattern
    }

    /// Adds a piece of text; returns the first ended line, in it or ended by it, that matches
    /// (without its newline or trailing blanks).
    pub fn feed(&mut self, text: &str) -> Option<String> {
        let mut found = None;
        let mut rest = text;
        while let Some(end) = rest.find('\n') {
            let (piece, after) = rest.split_at(end);
            rest = &after[1..];
            let line = self.take_line(piece);
            if found.is_none() && self.pattern.is_match(&line) {
                found = Some(line.trim_end().to_owned());
            }
        }
        self.extend_open(rest);
        found
    }

    /// Whether the line not ended yet matches (a prompt waits on one): the line, if it does.
    #[must_use]
    pub(crate) fn open_line_match(&self) -> Option<String> {
        (!self.open.is_empty() && self.pattern.is_match(&self.open))
            .then(|| self.open.trim_end().to_owned())
    }

    fn take_line(&mut self, end: &str) -> String {
        self.extend_open(end);
        let line = std::mem::take(&mut self.open);
        line.strip_suffix('\r').map(str::to_owned).unwrap_or(line)
    }

    fn extend_open(&mut self, piece: &str) {
        let room = MAX_LINE_BYTES.saturating_sub(self.open.len());
        let mut cut = piece.len().min(room);
        while !piece.is_char_boundary(cut) {
            cut -= 1;
        }
        self.open.push_str(&piece[..cut]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(pattern: &str) -> LineMatcher {
        LineMatcher::new(Regex::new(pattern).expect("a pattern"))
    }

    #[test]
    fn a_line_split_across_pieces_is_matched_whole_and_only_once_ended() {
        let mut lines = matcher("^listening on :3000$");
        assert_eq!(lines.feed("compiling\nlisten"), None);
        assert_eq!(lines.feed("ing on :3000"), None);
        assert_eq!(
            lines.open_line_match().as_deref(),
            Some("listening on :3000")
        );
        assert_eq!(
            lines.feed("\nready\n").as_deref(),
            Some("listening on :3000")
        );
        assert_eq!(lines.open_line_match(), None);
    }

    #[test]
    fn the_first_match_wins_and_endless_lines_stay_bounded() {
        let mut lines = matcher("ready");
        assert_eq!(
            lines.feed("a ready  \nb ready\n").as_deref(),
            Some("a ready")
        );
        let mut flood = matcher("never");
        for _ in 0..100 {
            assert_eq!(flood.feed(&"é".repeat(10_000)), None);
        }
        assert!(flood.open.len() <= MAX_LINE_BYTES);
    }
}
