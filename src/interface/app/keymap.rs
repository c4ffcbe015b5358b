//! Keys: a binding of keys to an [`Action`] (the actions and their default keys are in
//! `actions.rs`), and key names as the settings file writes them.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::Action;

/// Keys bound to one action, and how the hints show them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub keys: Vec<(KeyCode, KeyModifiers)>,
    pub label: String,
    /// The word in the bar, or `None` to leave it to the help.
    pub hint: Option<&'static str>,
    pub action: Action,
}

/// Parses a key name: `d`, `enter`, `esc`, `ctrl-a`, `alt-x`, `up`, `pgup`, `f5`, …
pub(crate) fn parse_key(name: &str) -> Result<KeyEvent, String> {
    let mut modifiers = KeyModifiers::NONE;
    let mut rest = name;
    loop {
        let lower = rest.to_ascii_lowercase();
        if let Some(stripped) = lower.strip_prefix("ctrl-") {
            modifiers |= KeyModifiers::CONTROL;
            rest = &rest[rest.len() - stripped.len()..];
        } else if let Some(stripped) = lower.strip_prefix("alt-") {
            modifiers |= KeyModifiers::ALT;
            rest = &rest[rest.len() - stripped.len()..];
        } else if let Some(stripped) = lower.strip_prefix("shift-") {
            modifiers |= KeyModifiers::SHIFT;
            rest = &rest[rest.len() - stripped.len()..];
        } else {
            break;
        }
    }
    let code = match rest.to_ascii_lowercase().as_str() {
        "enter" | "return" => KeyCode::Enter,
        "esc" | "escape" => KeyCode::Esc,
        "tab" if modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
        "tab" => KeyCode::Tab,
        "backspace" => KeyCode::Backspace,
        "space" => KeyCode::Char(' '),
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pgup" | "pageup" => KeyCode::PageUp,
        "pgdn" | "pagedown" => KeyCode::PageDown,
        "insert" => KeyCode::Insert,
        "delete" | "del" => KeyCode::Delete,
        function if function.len() > 1 && function.starts_with('f') => function[1..]
            .parse()
            .ok()
            .filter(|n| (1..=12).contains(n))
            .map(KeyCode::F)
            .ok_or_else(|| format!("unknown key `{name}`"))?,
        _ => {
            let mut chars = rest.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => {
                    if c.is_uppercase() {
                        modifiers |= KeyModifiers::SHIFT;
                    }
                    KeyCode::Char(c)
                }
                _ => {
                    return Err(format!(
                        "unknown key `{name}`: try d, enter, esc, ctrl-a, up, pgup, f5"
                    ));
                }
            }
        }
    };
    // Terminals report a shifted letter as the capital alone.
    if matches!(code, KeyCode::Char(c) if c.is_lowercase()) {
        modifiers.remove(KeyModifiers::SHIFT);
    }
    Ok(KeyEvent::new(code, modifiers))
}

/// A key's name as people write it: `ctrl-a` is `Ctrl-A`, `f12` is `F12`.
#[must_use]
pub(crate) fn key_label(name: &str) -> String {
    // A key alone that is one character is that character: `x` and `X` are two keys.
    if name.chars().count() == 1 {
        return name.to_owned();
    }
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match (chars.next(), chars.as_str()) {
                (Some(first), "") => first.to_uppercase().collect(),
                (Some(first), rest) => format!("{}{rest}", first.to_uppercase()),
                (None, _) => "-".to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_read_as_people_write_them() {
        assert_eq!(key_label("ctrl-a"), "Ctrl-A");
        assert_eq!(key_label("ctrl-]"), "Ctrl-]");
        assert_eq!(key_label("f12"), "F12");
        assert_eq!(key_label("alt-x"), "Alt-X");
        assert_eq!(key_label("x"), "x");
        assert_eq!(key_label("X"), "X");
        assert_eq!(key_label("-"), "-");
        assert_eq!(key_label("delete"), "Delete");
    }
}
