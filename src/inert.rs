//! Text for a terminal is inert: names, commands, prompts, paths and messages that oino prints
//! show their control characters escaped, so that a command holding `\e]52;c;…\a` (a clipboard
//! write) or `\e]0;…\a` (a title) is seen, not carried out, when `oino ls` lists it. Only a pane's
//! model interprets a program's bytes.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a control character: C0, DEL, or C1 (U+0080–U+009F, which some terminals take
/// as the 8-bit forms of ESC sequences: U+009B is CSI).
#[must_use]
pub(crate) fn is_control(c: char) -> bool {
    matches!(c, '\0'..='\x1f' | '\x7f'..='\u{9f}')
}

/// `text` with every control character escaped (`\e`, `\n`, `\x07`, `\x9b`): for one line of a
/// table or a message.
#[must_use]
pub fn escaped(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// `text` with every control character escaped but line feeds and tabs: for messages of several
/// lines.
#[must_use]
pub(crate) fn escaped_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

/// JSON text with DEL and the C1 controls escaped as `\uXXXX` too (serde escapes only C0): the
/// same JSON, inert on a terminal. Outside strings JSON holds only ASCII, so every such
/// character is within a string.
#[must_use]
pub fn json(text: String) -> String {
    if !text.chars().any(|c| matches!(c, '\x7f'..='\u{9f}')) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if matches!(c, '\x7f'..='\u{9f}') {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_control(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_control(c) || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\x1b' => out.push_str("\\e"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            _ => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_carried_out() {
        assert_eq!(
            escaped("make \u{1b}]0;TITLE\u{7}; echo \u{1b}]52;c;aGk=\u{7}"),
            "make \\e]0;TITLE\\x07; echo \\e]52;c;aGk=\\x07"
        );
        assert_eq!(escaped("a\u{9b}31mb\u{85}c\u{7f}"), "a\\x9b31mb\\x85c\\x7f");
        assert_eq!(escaped("two\nlines\tand\r"), "two\\nlines\\tand\\r");
        assert_eq!(escaped_lines("two\nlines\tand\r"), "two\nlines\tand\\r");
        assert!(matches!(escaped("plain é ✓"), Cow::Borrowed("plain é ✓")));
        assert_eq!(escaped("\u{a0}é"), "\u{a0}é");
        let encoded = serde_json::to_string("a\u{9b}31m\u{7f}\u{1b}").expect("json");
        let inert = json(encoded);
        assert_eq!(inert, r#""a\u009b31m\u007f\u001b""#);
        assert_eq!(
            serde_json::from_str::<String>(&inert).expect("still JSON"),
            "a\u{9b}31m\u{7f}\u{1b}"
        );
    }
}
