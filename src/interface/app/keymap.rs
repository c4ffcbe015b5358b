//! The keymap: one [`Action`] per thing a key can do, and the default keys that the hints and the
//! help are written from.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    SelectNext,
    SelectPrevious,
    SelectFirst,
    SelectLast,
    Detach,
    DetachNow,
    NewCall,
    Restart,
    Kill,
    Focus,
    PageUp,
    PageDown,
    Live,
    Search,
    NextMatch,
    PreviousMatch,
    Zoom,
    Split,
    NextPane,
    ClosePane,
    Copy,
    Help,
    Quit,
}

impl Action {
    /// Every action, with the name the settings file binds keys to.
    const NAMED: [(Self, &'static str); 23] = [
        (Self::SelectNext, "select-next"),
        (Self::SelectPrevious, "select-previous"),
        (Self::SelectFirst, "select-first"),
        (Self::SelectLast, "select-last"),
        (Self::Detach, "detach"),
        (Self::DetachNow, "detach-now"),
        (Self::NewCall, "new"),
        (Self::Restart, "restart"),
        (Self::Kill, "kill"),
        (Self::Focus, "type"),
        (Self::PageUp, "page-up"),
        (Self::PageDown, "page-down"),
        (Self::Live, "live"),
        (Self::Search, "search"),
        (Self::NextMatch, "next-match"),
        (Self::PreviousMatch, "previous-match"),
        (Self::Zoom, "zoom"),
        (Self::Split, "split"),
        (Self::NextPane, "next-pane"),
        (Self::ClosePane, "close-pane"),
        (Self::Copy, "copy"),
        (Self::Help, "help"),
        (Self::Quit, "quit"),
    ];

    /// The names the settings file binds keys to, in the help's order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::NAMED.iter().map(|(_, name)| *name)
    }

    /// The action a settings file names.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMED
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(action, _)| *action)
    }

    /// What the action does, for the help.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::SelectNext => "select the next call or task",
            Self::SelectPrevious => "select the previous call or task",
            Self::SelectFirst => "select the first",
            Self::SelectLast => "select the last",
            Self::Detach => "detach the selected call into a named background task",
            Self::DetachNow => "detach at once, with a name made from the command",
            Self::NewCall => "start a new call",
            Self::Restart => "run the selected command again (asks first while it runs)",
            Self::Kill => "kill the selected call or task (asks first)",
            Self::Focus => "type into the selected process (Ctrl-A to come back)",
            Self::PageUp => "scroll back through the output",
            Self::PageDown => "scroll forward",
            Self::Live => "back to the live output",
            Self::Search => "search the output, history included",
            Self::NextMatch => "next match (while searching)",
            Self::PreviousMatch => "previous match (while searching)",
            Self::Zoom => "zoom the pane to the whole screen and back",
            Self::Split => "show the next call in a pane beside (up to four)",
            Self::NextPane => "move the focus to the next pane",
            Self::ClosePane => "close the focused pane",
            Self::Copy => "select text in the pane to copy (y copies; a drag too)",
            Self::Help => "this help",
            Self::Quit => "quit (asks first while processes run)",
        }
    }
}

/// Keys bound to one action, and how the hints show them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub keys: Vec<(KeyCode, KeyModifiers)>,
    pub label: String,
    /// The word in the bar, or `None` to leave it to the help.
    pub hint: Option<&'static str>,
    pub action: Action,
}

fn plain(code: KeyCode) -> (KeyCode, KeyModifiers) {
    (code, KeyModifiers::NONE)
}

/// The default keys.
#[must_use]
pub fn default_keymap() -> Vec<Binding> {
    use KeyCode::{Char, Down, End, Enter, Home, PageDown, PageUp, Tab, Up};
    let bind = |keys: Vec<(KeyCode, KeyModifiers)>, label: &str, hint, action| Binding {
        keys,
        label: label.to_owned(),
        hint,
        action,
    };
    vec![
        bind(
            vec![plain(Char('j')), plain(Down)],
            "j ↓",
            None,
            Action::SelectNext,
        ),
        bind(
            vec![plain(Char('k')), plain(Up)],
            "k ↑",
            None,
            Action::SelectPrevious,
        ),
        bind(
            vec![plain(Char('g')), plain(Home)],
            "g",
            None,
            Action::SelectFirst,
        ),
        bind(
            vec![plain(Char('G')), (Char('G'), KeyModifiers::SHIFT)],
            "G",
            None,
            Action::SelectLast,
        ),
        bind(vec![plain(Char('d'))], "d", Some("detach"), Action::Detach),
        bind(
            vec![(Char('b'), KeyModifiers::CONTROL)],
            "Ctrl-B",
            None,
            Action::DetachNow,
        ),
        bind(vec![plain(Char('n'))], "n", Some("new"), Action::NewCall),
        bind(vec![plain(Char('r'))], "r", None, Action::Restart),
        bind(vec![plain(Char('x'))], "x", Some("kill"), Action::Kill),
        bind(
            vec![plain(Enter), plain(Char('i'))],
            "Enter i",
            Some("type"),
            Action::Focus,
        ),
        bind(vec![plain(PageUp)], "PgUp", None, Action::PageUp),
        bind(vec![plain(PageDown)], "PgDn", None, Action::PageDown),
        bind(vec![plain(End)], "End", None, Action::Live),
        bind(vec![plain(Char('/'))], "/", Some("search"), Action::Search),
        bind(vec![plain(Char('n'))], "n", None, Action::NextMatch),
        bind(
            vec![plain(Char('N')), (Char('N'), KeyModifiers::SHIFT)],
            "N",
            None,
            Action::PreviousMatch,
        ),
        bind(vec![plain(Char('z'))], "z", Some("zoom"), Action::Zoom),
        bind(vec![plain(Char('s'))], "s", None, Action::Split),
        bind(vec![plain(Tab)], "Tab", None, Action::NextPane),
        bind(
            vec![plain(Char('S')), (Char('S'), KeyModifiers::SHIFT)],
            "S",
            None,
            Action::ClosePane,
        ),
        bind(vec![plain(Char('v'))], "v", None, Action::Copy),
        bind(vec![plain(Char('?'))], "?", Some("help"), Action::Help),
        bind(vec![plain(Char('q'))], "q", Some("quit"), Action::Quit),
    ]
}

/// Parses a key name: `d`, `enter`, `esc`, `ctrl-a`, `alt-x`, `up`, `pgup`, `f5`, …
pub fn parse_key(name: &str) -> Result<KeyEvent, String> {
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
pub fn key_label(name: &str) -> String {
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
    fn every_action_has_a_name_and_key_names_read_as_people_write_them() {
        for (action, name) in Action::NAMED {
            assert_eq!(Action::from_name(name), Some(action));
        }
        assert!(default_keymap().iter().all(|binding| {
            Action::NAMED
                .iter()
                .any(|(action, _)| *action == binding.action)
        }));
        assert_eq!(key_label("ctrl-a"), "Ctrl-A");
        assert_eq!(key_label("ctrl-]"), "Ctrl-]");
        assert_eq!(key_label("f12"), "F12");
        assert_eq!(key_label("alt-x"), "Alt-X");
    }
}
