//! The help mode: every binding of the keymap and the other keys, scrolled with the arrows
//! when taller than the terminal; any other key closes it.

use crossterm::event::{KeyCode, KeyEvent};

use super::{App, Effect, Mode, ModeKeys};

/// Keys that are no action of the keymap, and what they do, for the help.
pub(crate) const OTHER_KEYS: [(&str, &str); 3] = [
    ("Ctrl-A", "while typing into a process: come back"),
    ("Esc", "cancel a prompt, end a search, clear the filter"),
    (
        "Mouse",
        "the wheel scrolls, a click selects (on a pane: focuses it)",
    ),
];

/// A line of the help.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HelpLine {
    Title,
    Blank,
    Key {
        label: String,
        does: &'static str,
    },
    /// How to scroll or close it.
    Last,
}

/// The help, open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Help {
    /// Lines scrolled down, when it is taller than the terminal.
    pub scroll: u16,
}

impl ModeKeys for Help {
    fn key(self, app: &mut App, key: KeyEvent) -> Vec<Effect> {
        let step: i32 = match key.code {
            KeyCode::Down | KeyCode::Char('j') => 1,
            KeyCode::Up | KeyCode::Char('k') => -1,
            KeyCode::PageDown | KeyCode::Char(' ') => 10,
            KeyCode::PageUp => -10,
            _ => return Vec::new(),
        };
        let scrolled = (i32::from(self.scroll) + step).clamp(0, i32::from(app.help_overflow()));
        app.mode = Mode::Help(Help {
            scroll: u16::try_from(scrolled).unwrap_or(0),
        });
        Vec::new()
    }
}

impl App {
    /// The help's lines: every binding of the keymap, then the other keys.
    #[must_use]
    pub(crate) fn help_lines(&self) -> Vec<HelpLine> {
        let key = |label: &str, does| HelpLine::Key {
            label: label.to_owned(),
            does,
        };
        let mut lines = vec![HelpLine::Title, HelpLine::Blank];
        lines.extend(
            self.settings
                .keymap
                .iter()
                .map(|binding| key(&binding.label, binding.action.describe())),
        );
        lines.push(HelpLine::Blank);
        lines.extend(OTHER_KEYS.iter().map(|(label, does)| key(label, does)));
        lines.extend([HelpLine::Blank, HelpLine::Last]);
        lines
    }

    /// Lines of the help past what the terminal shows (inside its border).
    #[must_use]
    pub(crate) fn help_overflow(&self) -> u16 {
        let lines = self.help_lines().len();
        let shown = usize::from(self.term_size.1.saturating_sub(2));
        u16::try_from(lines.saturating_sub(shown)).unwrap_or(u16::MAX)
    }
}
