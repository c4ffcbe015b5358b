//! The keymap: one [`Action`] per thing a key can do, and the default keys that the hints and the
//! help are written from.

use crossterm::event::{KeyCode, KeyModifiers};

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
    Help,
    Quit,
}

impl Action {
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
            Self::Help => "this help",
            Self::Quit => "quit (asks first while processes run)",
        }
    }
}

/// Keys bound to one action, and how the hints show them.
#[derive(Clone, Debug)]
pub struct Binding {
    pub keys: Vec<(KeyCode, KeyModifiers)>,
    pub label: &'static str,
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
    use KeyCode::{Char, Down, End, Enter, Home, PageDown, PageUp, Up};
    let bind = |keys: Vec<(KeyCode, KeyModifiers)>, label, hint, action| Binding {
        keys,
        label,
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
        bind(vec![plain(Char('?'))], "?", Some("help"), Action::Help),
        bind(vec![plain(Char('q'))], "q", Some("quit"), Action::Quit),
    ]
}
