//! The application state of the full-screen interface, and how it changes.
//!
//! `App::handle_input` and `App::handle_core_event` are the `update` half: they change the state
//! and return [`Effect`]s (start, detach, kill, write, resize) for the event loop to carry out on
//! the core; outcomes come back as notices. The `render` half lives in `ui` and only reads the
//! state. Keys map to one [`Action`] enum through the keymap, which also writes the hints and the
//! help.

use std::time::{Duration, Instant};

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use crate::core::{CoreEvent, EntryInfo, EntryKind, EntryState, HistoryPage};
use crate::pty::TermSize;
use crate::screen::ScreenSnapshot;

/// The reason given for a detach from this interface.
pub const DETACH_REASON: &str = "detached from the TUI";
/// Rows the mouse wheel scrolls.
const WHEEL_ROWS: usize = 3;
/// How long a notice stays in the bar.
const NOTICE_TIME: Duration = Duration::from_secs(8);
/// The smallest terminal the layout works in.
pub const MIN_COLS: u16 = 40;
pub const MIN_ROWS: u16 = 8;

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

/// What the pane needs fetched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaneRequest {
    Live {
        id: String,
        size: Option<TermSize>,
    },
    History {
        id: String,
        lines_back: u64,
        size: TermSize,
    },
}

/// What the event loop does for the app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Find the search's next match and scroll to it.
    Search {
        id: String,
        query: String,
        newer: bool,
        scroll: usize,
        rows: u16,
    },
    Start {
        command: String,
        size: TermSize,
    },
    Detach {
        id: String,
        name: Option<String>,
    },
    Kill {
        id: String,
    },
    Write {
        id: String,
        bytes: Vec<u8>,
    },
    Resize {
        id: String,
        size: TermSize,
    },
}

/// What an effect came to, reported back to the app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done(String),
    Failed(String),
    /// A search found its match: scroll there.
    Scroll(usize),
}

/// Input from the terminal (or a headless script).
#[derive(Debug)]
pub enum Input {
    Key(KeyEvent),
    Paste(String),
    Mouse(MouseEvent),
    Resize {
        cols: u16,
        rows: u16,
    },
    /// A signal asks oino to end now.
    Stop,
    /// Draw now, then answer: everything sent before is on the screen.
    Barrier(tokio::sync::oneshot::Sender<()>),
}

/// A line being typed in the bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub purpose: PromptPurpose,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptPurpose {
    /// The name of the task the call `id` becomes.
    DetachName {
        id: String,
    },
    NewCommand,
    Search,
}

/// A question answered with `y`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirm {
    Kill { id: String, label: String },
    Quit { running: usize },
}

/// Where keys go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Keys go to the selected process.
    Focus,
    Prompt(Prompt),
    Confirm(Confirm),
    Help,
}

/// A message in the bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub text: String,
    pub is_error: bool,
    pub shown_at: Instant,
}

/// Where things go on the screen, computed from its size alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub list: ratatui::layout::Rect,
    pub header: ratatui::layout::Rect,
    pub pane: ratatui::layout::Rect,
    pub bar: ratatui::layout::Rect,
}

impl Layout {
    /// The layout for a terminal of `cols` x `rows`, or `None` when it is too small.
    #[must_use]
    pub fn new(cols: u16, rows: u16, zoom: bool) -> Option<Self> {
        use ratatui::layout::Rect;
        if cols < MIN_COLS || rows < MIN_ROWS {
            return None;
        }
        let list_cols = if zoom { 0 } else { (cols / 4).clamp(24, 40) };
        // The list has a one-column rule on its right.
        let pane_x = if zoom { 0 } else { list_cols + 1 };
        let body_rows = rows - 1;
        Some(Self {
            list: Rect::new(0, 0, list_cols, body_rows),
            header: Rect::new(pane_x, 0, cols - pane_x, 1),
            pane: Rect::new(pane_x, 1, cols - pane_x, body_rows - 1),
            bar: Rect::new(0, rows - 1, cols, 1),
        })
    }

    /// The size of the PTYs: the pane's.
    #[must_use]
    pub fn pane_size(&self) -> TermSize {
        TermSize::new(self.pane.width, self.pane.height)
    }
}

/// The section of the list an entry is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Running,
    Tasks,
    Finished,
}

impl Section {
    #[must_use]
    pub fn of(entry: &EntryInfo) -> Self {
        match (entry.state, entry.kind) {
            (EntryState::Running, EntryKind::Call) => Self::Running,
            (EntryState::Running, EntryKind::Task) => Self::Tasks,
            _ => Self::Finished,
        }
    }

    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Self::Running => "Running",
            Self::Tasks => "Tasks",
            Self::Finished => "Finished",
        }
    }
}

/// The state of the interface.
#[allow(clippy::struct_excessive_bools)] // Independent switches of the view.
pub struct App {
    pub keymap: Vec<Binding>,
    /// Entries in list order: running calls, tasks, finished.
    pub entries: Vec<EntryInfo>,
    pub selected: Option<String>,
    pub mode: Mode,
    pub zoom: bool,
    /// Rows scrolled back from the live output.
    pub scroll: usize,
    /// The active search, if any.
    pub search: Option<String>,
    pub notice: Option<Notice>,
    /// The selected entry's screen, as last fetched.
    pub pane: Option<ScreenSnapshot>,
    /// The pane must be fetched again before the next frame.
    pub pane_stale: bool,
    /// The entries must be listed again before the next frame.
    pub entries_stale: bool,
    /// The processes live in a server, so quitting leaves them running.
    pub processes_outlive: bool,
    pub term_size: (u16, u16),
    pub color: bool,
    pub quit: bool,
    /// Entries whose failed log was told in the bar already.
    pub log_errors_told: std::collections::HashSet<String>,
}

impl App {
    #[must_use]
    pub fn new(term_size: (u16, u16), color: bool) -> Self {
        Self {
            keymap: default_keymap(),
            entries: Vec::new(),
            selected: None,
            mode: Mode::Normal,
            zoom: false,
            scroll: 0,
            search: None,
            notice: None,
            pane: None,
            pane_stale: true,
            entries_stale: true,
            processes_outlive: false,
            term_size,
            color,
            quit: false,
            log_errors_told: std::collections::HashSet::new(),
        }
    }

    #[must_use]
    pub fn layout(&self) -> Option<Layout> {
        Layout::new(self.term_size.0, self.term_size.1, self.zoom)
    }

    /// The size every PTY should have.
    #[must_use]
    pub fn pane_size(&self) -> Option<TermSize> {
        self.layout().map(|layout| layout.pane_size())
    }

    #[must_use]
    pub fn selected_entry(&self) -> Option<&EntryInfo> {
        let id = self.selected.as_deref()?;
        self.entries.iter().find(|entry| entry.id == id)
    }

    fn selected_index(&self) -> Option<usize> {
        let id = self.selected.as_deref()?;
        self.entries.iter().position(|entry| entry.id == id)
    }

    fn select_index(&mut self, index: usize) {
        if let Some(entry) = self.entries.get(index) {
            if self.selected.as_deref() != Some(&entry.id) {
                self.selected = Some(entry.id.clone());
                self.scroll = 0;
            }
        }
    }

    /// Takes a new list of the entries, in list order; keeps the selection, or selects the
    /// first.
    pub fn set_entries(&mut self, mut entries: Vec<EntryInfo>) {
        entries.sort_by_key(|entry| (Section::of(entry), entry.started_ms));
        // A log that could not be written is told once, where the person looks.
        let untold = entries
            .iter()
            .find(|entry| entry.log_error.is_some() && !self.log_errors_told.contains(&entry.id));
        if let Some(entry) = untold {
            self.say(
                format!(
                    "{}: {}",
                    entry.label(),
                    crate::call::log_error_note(entry.log_error.as_deref().unwrap_or_default())
                ),
                true,
            );
        }
        self.log_errors_told.extend(
            entries
                .iter()
                .filter(|entry| entry.log_error.is_some())
                .map(|entry| entry.id.clone()),
        );
        self.entries = entries;
        self.entries_stale = false;
        if self.selected_index().is_none() {
            self.selected = self.entries.first().map(|entry| entry.id.clone());
            self.scroll = 0;
        }
    }

    /// What the pane needs fetched, if it is stale: the selected entry's live screen at the
    /// pane's size, or, scrolled back, a page of its history from the log.
    pub fn pane_request(&mut self) -> Option<PaneRequest> {
        if !std::mem::take(&mut self.pane_stale) {
            return None;
        }
        let size = self.pane_size();
        let Some(id) = self.selected.clone() else {
            self.pane = None;
            return None;
        };
        if self.scroll == 0 {
            return Some(PaneRequest::Live { id, size });
        }
        size.map(|size| PaneRequest::History {
            id,
            lines_back: self.scroll as u64,
            size,
        })
    }

    /// A page of history arrived for the pane.
    pub fn set_history(&mut self, page: &HistoryPage, size: TermSize) {
        // Clamped to the history there is.
        self.scroll = usize::try_from(page.lines_back).unwrap_or(usize::MAX);
        self.pane = Some(ScreenSnapshot::from_lines(size, &page.lines, self.scroll));
    }

    /// Ends a notice whose time is up.
    pub fn expire_notice(&mut self) {
        if self
            .notice
            .as_ref()
            .is_some_and(|notice| notice.shown_at.elapsed() > NOTICE_TIME)
        {
            self.notice = None;
        }
    }

    /// Says something in the bar.
    pub fn say(&mut self, text: impl Into<String>, is_error: bool) {
        self.notice = Some(Notice {
            text: text.into(),
            is_error,
            shown_at: Instant::now(),
        });
    }

    /// How long until something shown changes with time alone (an elapsed time, a notice that
    /// expires); `None` when nothing does.
    #[must_use]
    pub fn next_tick(&self, now_ms: u64) -> Option<Duration> {
        let elapsed = self
            .entries
            .iter()
            .filter(|entry| entry.state.is_running())
            .map(|entry| crate::interface::ui::until_elapsed_changes(entry.started_ms, now_ms))
            .min()
            .map(Duration::from_millis);
        let notice = self
            .notice
            .as_ref()
            .map(|notice| NOTICE_TIME.saturating_sub(notice.shown_at.elapsed()));
        elapsed.into_iter().chain(notice).min()
    }

    /// A core event. Returns effects (new entries get the pane's size).
    pub fn handle_core_event(&mut self, event: &CoreEvent) -> Vec<Effect> {
        match event {
            CoreEvent::OutputChanged { .. } => Vec::new(),
            CoreEvent::Started { id } => {
                self.entries_stale = true;
                self.pane_size()
                    .map(|size| Effect::Resize {
                        id: id.clone(),
                        size,
                    })
                    .into_iter()
                    .collect()
            }
            CoreEvent::Detached { .. } | CoreEvent::Ended { .. } => {
                self.entries_stale = true;
                if let Mode::Focus = self.mode {
                    if !self
                        .selected_entry()
                        .is_some_and(|entry| entry.state.is_running())
                    {
                        self.mode = Mode::Normal;
                    }
                }
                Vec::new()
            }
        }
    }

    /// What an effect came to.
    pub fn handle_outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Done(text) => self.say(text, false),
            Outcome::Failed(text) => self.say(text, true),
            Outcome::Scroll(scroll) => self.scroll = scroll,
        }
        self.entries_stale = true;
    }

    /// Input from the terminal.
    pub fn handle_input(&mut self, input: Input) -> Vec<Effect> {
        match input {
            Input::Key(key) if key.kind != KeyEventKind::Release => self.handle_key(key),
            Input::Paste(text) => self.handle_paste(&text),
            Input::Mouse(mouse) => {
                self.handle_mouse(mouse);
                Vec::new()
            }
            Input::Resize { cols, rows } => {
                self.term_size = (cols, rows);
                self.resize_all()
            }
            Input::Stop => {
                self.quit = true;
                Vec::new()
            }
            // Key releases, and barriers (the loop answers them), change nothing here.
            Input::Key(_) | Input::Barrier(_) => Vec::new(),
        }
    }

    /// Resizing the terminal resizes every running PTY to the pane.
    fn resize_all(&self) -> Vec<Effect> {
        let Some(size) = self.pane_size() else {
            return Vec::new();
        };
        self.entries
            .iter()
            .filter(|entry| entry.state.is_running())
            .map(|entry| Effect::Resize {
                id: entry.id.clone(),
                size,
            })
            .collect()
    }

    fn handle_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        // A notice lasts until the next key (or its time runs out).
        self.notice = None;
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Normal => self.handle_normal_key(key),
            Mode::Focus => self.handle_focus_key(key),
            Mode::Prompt(prompt) => self.handle_prompt_key(prompt, key),
            Mode::Confirm(confirm) => self.handle_confirm_key(&confirm, key),
            // Any key closes the help.
            Mode::Help => Vec::new(),
        }
    }

    fn action_for(&self, key: KeyEvent) -> Option<Action> {
        let searching = self.search.is_some();
        self.keymap
            .iter()
            .filter(|binding| binding.keys.contains(&(key.code, key.modifiers)))
            .map(|binding| binding.action)
            // `n` is a new call, or the next match while searching.
            .find(|action| match action {
                Action::NewCall => !searching,
                Action::NextMatch | Action::PreviousMatch => searching,
                _ => true,
            })
    }

    fn handle_normal_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.code == KeyCode::Esc {
            self.search = None;
            return Vec::new();
        }
        match self.action_for(key) {
            Some(action) => self.act(action),
            None => Vec::new(),
        }
    }

    /// Does what an action does.
    pub fn act(&mut self, action: Action) -> Vec<Effect> {
        let count = self.entries.len();
        match action {
            Action::SelectNext => {
                let next = self
                    .selected_index()
                    .map_or(0, |index| (index + 1).min(count.saturating_sub(1)));
                self.select_index(next);
            }
            Action::SelectPrevious => {
                let previous = self
                    .selected_index()
                    .map_or(0, |index| index.saturating_sub(1));
                self.select_index(previous);
            }
            Action::SelectFirst => self.select_index(0),
            Action::SelectLast => self.select_index(count.saturating_sub(1)),
            Action::Detach | Action::DetachNow => return self.detach(action == Action::DetachNow),
            Action::NewCall => {
                self.mode = Mode::Prompt(Prompt {
                    purpose: PromptPurpose::NewCommand,
                    text: String::new(),
                });
            }
            Action::Kill => match self.selected_entry() {
                Some(entry) if entry.state.is_running() => {
                    self.mode = Mode::Confirm(Confirm::Kill {
                        id: entry.id.clone(),
                        label: entry.label().to_owned(),
                    });
                }
                Some(_) => self.say("it has already ended", true),
                None => self.say("nothing to kill", true),
            },
            Action::Focus => match self.selected_entry() {
                Some(entry) if entry.state.is_running() => {
                    self.mode = Mode::Focus;
                    self.scroll = 0;
                }
                Some(_) => self.say("it has ended: there is nothing to type into", true),
                None => self.say("no call selected", true),
            },
            Action::PageUp => {
                let page = self.page_rows();
                self.scroll = self.scroll.saturating_add(page);
            }
            Action::PageDown => {
                let page = self.page_rows();
                self.scroll = self.scroll.saturating_sub(page);
            }
            Action::Live => self.scroll = 0,
            Action::Search => {
                self.mode = Mode::Prompt(Prompt {
                    purpose: PromptPurpose::Search,
                    text: String::new(),
                });
            }
            Action::NextMatch => return self.search_effect(true),
            Action::PreviousMatch => return self.search_effect(false),
            Action::Zoom => {
                self.zoom = !self.zoom;
                return self.resize_all();
            }
            Action::Help => self.mode = Mode::Help,
            Action::Quit => {
                let running = self
                    .entries
                    .iter()
                    .filter(|entry| entry.state.is_running())
                    .count();
                if running == 0 {
                    self.quit = true;
                } else {
                    self.mode = Mode::Confirm(Confirm::Quit { running });
                }
            }
        }
        Vec::new()
    }

    fn page_rows(&self) -> usize {
        self.pane_size()
            .map_or(1, |size| usize::from(size.rows).saturating_sub(1).max(1))
    }

    fn detach(&mut self, at_once: bool) -> Vec<Effect> {
        let Some(entry) = self.selected_entry() else {
            self.say("no call selected", true);
            return Vec::new();
        };
        if entry.kind == EntryKind::Task {
            self.say(
                format!("`{}` is already a background task", entry.label()),
                true,
            );
            return Vec::new();
        }
        if !entry.state.is_running() {
            self.say("it has ended: only a running call can be detached", true);
            return Vec::new();
        }
        let id = entry.id.clone();
        if at_once {
            return vec![Effect::Detach { id, name: None }];
        }
        let text = crate::core::tasks::derive_name(&entry.command);
        self.mode = Mode::Prompt(Prompt {
            purpose: PromptPurpose::DetachName { id },
            text,
        });
        Vec::new()
    }

    fn handle_prompt_key(&mut self, mut prompt: Prompt, key: KeyEvent) -> Vec<Effect> {
        match (key.code, key.modifiers) {
            (KeyCode::Esc, _) | (KeyCode::Char('c'), KeyModifiers::CONTROL) => Vec::new(),
            (KeyCode::Enter, _) => self.submit(prompt),
            (KeyCode::Backspace, _) => {
                prompt.text.pop();
                self.mode = Mode::Prompt(prompt);
                Vec::new()
            }
            (KeyCode::Char('u'), KeyModifiers::CONTROL) => {
                prompt.text.clear();
                self.mode = Mode::Prompt(prompt);
                Vec::new()
            }
            (KeyCode::Char(c), KeyModifiers::NONE | KeyModifiers::SHIFT) => {
                prompt.text.push(c);
                self.mode = Mode::Prompt(prompt);
                Vec::new()
            }
            _ => {
                self.mode = Mode::Prompt(prompt);
                Vec::new()
            }
        }
    }

    fn submit(&mut self, prompt: Prompt) -> Vec<Effect> {
        let text = prompt.text.trim().to_owned();
        match prompt.purpose {
            PromptPurpose::DetachName { id } => vec![Effect::Detach {
                id,
                name: (!text.is_empty()).then_some(text),
            }],
            PromptPurpose::NewCommand if text.is_empty() => Vec::new(),
            PromptPurpose::NewCommand => match self.pane_size() {
                Some(size) => vec![Effect::Start {
                    command: text,
                    size,
                }],
                None => Vec::new(),
            },
            PromptPurpose::Search => {
                self.search = (!text.is_empty()).then_some(text);
                self.scroll = 0;
                self.search_effect(false)
            }
        }
    }

    fn handle_confirm_key(&mut self, confirm: &Confirm, key: KeyEvent) -> Vec<Effect> {
        if !matches!(key.code, KeyCode::Char('y' | 'Y')) {
            return Vec::new();
        }
        match confirm {
            Confirm::Kill { id, .. } => vec![Effect::Kill { id: id.clone() }],
            Confirm::Quit { .. } => {
                self.quit = true;
                Vec::new()
            }
        }
    }

    fn handle_focus_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.code == KeyCode::Char('a') && key.modifiers == KeyModifiers::CONTROL {
            return Vec::new();
        }
        self.mode = Mode::Focus;
        let application_cursor = self
            .pane
            .as_ref()
            .is_some_and(|pane| pane.application_cursor);
        match (self.selected.clone(), encode_key(key, application_cursor)) {
            (Some(id), Some(bytes)) => vec![Effect::Write { id, bytes }],
            _ => Vec::new(),
        }
    }

    fn handle_paste(&mut self, text: &str) -> Vec<Effect> {
        match &mut self.mode {
            Mode::Focus => {
                let Some(id) = self.selected.clone() else {
                    return Vec::new();
                };
                let bracketed = self.pane.as_ref().is_some_and(|pane| pane.bracketed_paste);
                let mut bytes = Vec::with_capacity(text.len() + 12);
                if bracketed {
                    bytes.extend_from_slice(b"\x1b[200~");
                }
                bytes.extend_from_slice(text.as_bytes());
                if bracketed {
                    bytes.extend_from_slice(b"\x1b[201~");
                }
                vec![Effect::Write { id, bytes }]
            }
            Mode::Prompt(prompt) => {
                prompt.text.extend(text.chars().filter(|c| !c.is_control()));
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn handle_mouse(&mut self, mouse: MouseEvent) {
        let Some(layout) = self.layout() else {
            return;
        };
        match mouse.kind {
            MouseEventKind::ScrollUp => self.scroll = self.scroll.saturating_add(WHEEL_ROWS),
            MouseEventKind::ScrollDown => self.scroll = self.scroll.saturating_sub(WHEEL_ROWS),
            MouseEventKind::Down(MouseButton::Left)
                if self.mode == Mode::Normal
                    && layout
                        .list
                        .contains(ratatui::layout::Position::new(mouse.column, mouse.row)) =>
            {
                if let Some(index) = crate::interface::ui::list_row_entry(self, layout, mouse.row) {
                    self.select_index(index);
                }
            }
            _ => {}
        }
    }

    /// The search for the nearest match below the rows in view (`newer`) or above them.
    fn search_effect(&self, newer: bool) -> Vec<Effect> {
        match (&self.search, &self.selected, self.pane_size()) {
            (Some(query), Some(id), Some(size)) => vec![Effect::Search {
                id: id.clone(),
                query: query.clone(),
                newer,
                scroll: self.scroll,
                rows: size.rows,
            }],
            _ => Vec::new(),
        }
    }
}

/// Whether `line` contains `query`: case-insensitive unless the query has capitals.
#[must_use]
pub fn matches_query(line: &str, query: &str) -> bool {
    match_ranges(line, query).next().is_some()
}

/// Where `query` occurs in `line`, as char ranges (smart case).
pub fn match_ranges<'a>(
    line: &'a str,
    query: &'a str,
) -> impl Iterator<Item = std::ops::Range<usize>> + 'a {
    let fold = !query.chars().any(char::is_uppercase);
    let haystack: Vec<char> = if fold {
        line.chars().flat_map(char::to_lowercase).collect()
    } else {
        line.chars().collect()
    };
    let needle: Vec<char> = query.chars().collect();
    let width = needle.len();
    (0..haystack.len().saturating_sub(width.saturating_sub(1)))
        .filter(move |&start| width > 0 && haystack[start..start + width] == needle[..])
        .map(move |start| start..start + width)
}

/// The bytes a terminal sends for a key.
#[must_use]
pub fn encode_key(key: KeyEvent, application_cursor: bool) -> Option<Vec<u8>> {
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let cursor = |letter: u8| {
        if application_cursor {
            vec![0x1b, b'O', letter]
        } else {
            vec![0x1b, b'[', letter]
        }
    };
    let mut bytes = match key.code {
        KeyCode::Char(c) if ctrl => {
            let lower = c.to_ascii_lowercase();
            match lower {
                'a'..='z' => vec![lower as u8 - b'a' + 1],
                ' ' | '@' | '2' => vec![0],
                '[' | '3' => vec![0x1b],
                '\\' | '4' => vec![0x1c],
                ']' | '5' => vec![0x1d],
                '^' | '6' => vec![0x1e],
                '_' | '7' | '/' => vec![0x1f],
                _ => return None,
            }
        }
        KeyCode::Char(c) => c.to_string().into_bytes(),
        KeyCode::Enter => vec![b'\r'],
        KeyCode::Tab => vec![b'\t'],
        KeyCode::BackTab => b"\x1b[Z".to_vec(),
        KeyCode::Backspace => vec![0x7f],
        KeyCode::Esc => vec![0x1b],
        KeyCode::Up => cursor(b'A'),
        KeyCode::Down => cursor(b'B'),
        KeyCode::Right => cursor(b'C'),
        KeyCode::Left => cursor(b'D'),
        KeyCode::Home => cursor(b'H'),
        KeyCode::End => cursor(b'F'),
        KeyCode::PageUp => b"\x1b[5~".to_vec(),
        KeyCode::PageDown => b"\x1b[6~".to_vec(),
        KeyCode::Insert => b"\x1b[2~".to_vec(),
        KeyCode::Delete => b"\x1b[3~".to_vec(),
        KeyCode::F(n) => match n {
            1 => b"\x1bOP".to_vec(),
            2 => b"\x1bOQ".to_vec(),
            3 => b"\x1bOR".to_vec(),
            4 => b"\x1bOS".to_vec(),
            5 => b"\x1b[15~".to_vec(),
            6 => b"\x1b[17~".to_vec(),
            7 => b"\x1b[18~".to_vec(),
            8 => b"\x1b[19~".to_vec(),
            9 => b"\x1b[20~".to_vec(),
            10 => b"\x1b[21~".to_vec(),
            11 => b"\x1b[23~".to_vec(),
            12 => b"\x1b[24~".to_vec(),
            _ => return None,
        },
        _ => return None,
    };
    if alt {
        bytes.insert(0, 0x1b);
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn keys_become_the_bytes_a_terminal_sends() {
        let none = KeyModifiers::NONE;
        assert_eq!(
            encode_key(key(KeyCode::Char('a'), none), false),
            Some(b"a".to_vec())
        );
        assert_eq!(
            encode_key(key(KeyCode::Char('c'), KeyModifiers::CONTROL), false),
            Some(vec![3])
        );
        assert_eq!(
            encode_key(key(KeyCode::Up, none), false),
            Some(b"\x1b[A".to_vec())
        );
        assert_eq!(
            encode_key(key(KeyCode::Up, none), true),
            Some(b"\x1bOA".to_vec())
        );
        assert_eq!(
            encode_key(key(KeyCode::Char('x'), KeyModifiers::ALT), false),
            Some(b"\x1bx".to_vec())
        );
        assert_eq!(
            encode_key(key(KeyCode::F(5), none), false),
            Some(b"\x1b[15~".to_vec())
        );
        assert_eq!(
            encode_key(key(KeyCode::Enter, none), false),
            Some(b"\r".to_vec())
        );
    }

    #[test]
    fn search_is_smart_case() {
        assert!(matches_query("Error: disk full", "error"));
        assert!(!matches_query("error: disk full", "Error"));
        assert_eq!(
            match_ranges("abcabc", "bc").collect::<Vec<_>>(),
            vec![1..3, 4..6]
        );
        assert_eq!(match_ranges("ab", "abc").count(), 0);
    }

    fn test_app() -> App {
        let mut app = App::new((100, 20), true);
        let entry = |id: &str| EntryInfo {
            id: id.to_owned(),
            kind: EntryKind::Call,
            task_id: None,
            name: None,
            title: None,
            command: format!("echo {id}"),
            cwd: std::path::PathBuf::from("/"),
            pid: 1,
            started_ms: 0,
            detached_ms: None,
            ended_ms: None,
            state: EntryState::Running,
            timed_out: false,
            bytes: 0,
            detach_offset: 0,
            log_path: std::path::PathBuf::from("/dev/null"),
            log_error: None,
        };
        app.entries = vec![entry("c1"), entry("c2"), entry("c3")];
        app.selected = Some("c1".into());
        app
    }

    fn mouse(kind: MouseEventKind, column: u16, row: u16) -> Input {
        Input::Mouse(MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    }

    #[test]
    fn a_click_selects_a_row_and_the_wheel_scrolls() {
        let mut app = test_app();
        // Row 0 is the section's title; rows 1..=3 the calls.
        app.handle_input(mouse(MouseEventKind::Down(MouseButton::Left), 3, 3));
        assert_eq!(app.selected.as_deref(), Some("c3"));
        app.handle_input(mouse(MouseEventKind::Down(MouseButton::Left), 3, 0));
        assert_eq!(app.selected.as_deref(), Some("c3"));
        app.handle_input(mouse(MouseEventKind::ScrollUp, 60, 5));
        app.handle_input(mouse(MouseEventKind::ScrollUp, 60, 5));
        assert_eq!(app.scroll, 2 * WHEEL_ROWS);
        app.handle_input(mouse(MouseEventKind::ScrollDown, 60, 5));
        assert_eq!(app.scroll, WHEEL_ROWS);
    }

    #[test]
    fn a_paste_into_a_focused_pane_is_bracketed_when_the_program_asked() {
        let mut app = test_app();
        app.act(Action::Focus);
        assert_eq!(app.mode, Mode::Focus);
        let mut screen = crate::screen::Screen::new(TermSize::new(20, 4), 0);
        app.pane = Some(screen.snapshot(0));
        assert_eq!(
            app.handle_input(Input::Paste("ls\n".into())),
            vec![Effect::Write {
                id: "c1".into(),
                bytes: b"ls\n".to_vec()
            }]
        );
        screen.feed(b"\x1b[?2004h");
        app.pane = Some(screen.snapshot(0));
        assert_eq!(
            app.handle_input(Input::Paste("ls\n".into())),
            vec![Effect::Write {
                id: "c1".into(),
                bytes: b"\x1b[200~ls\n\x1b[201~".to_vec()
            }]
        );
        // Ctrl-A gives the keys back; a key then is the interface's again.
        app.handle_input(Input::Key(key(KeyCode::Char('a'), KeyModifiers::CONTROL)));
        assert_eq!(app.mode, Mode::Normal);
        assert!(
            app.handle_input(Input::Key(key(KeyCode::Char('j'), KeyModifiers::NONE)))
                .is_empty()
        );
        assert_eq!(app.selected.as_deref(), Some("c2"));
    }

    #[test]
    fn every_action_has_a_key_and_the_layout_fits() {
        let keymap = default_keymap();
        for action in [
            Action::SelectNext,
            Action::Detach,
            Action::DetachNow,
            Action::Kill,
            Action::Focus,
            Action::Search,
            Action::Zoom,
            Action::Help,
            Action::Quit,
        ] {
            assert!(
                keymap.iter().any(|binding| binding.action == action),
                "{action:?}"
            );
        }
        assert_eq!(Layout::new(39, 20, false), None);
        let layout = Layout::new(120, 40, false).expect("fits");
        assert_eq!(layout.pane_size(), TermSize::new(120 - 31, 38));
        let zoomed = Layout::new(120, 40, true).expect("fits");
        assert_eq!(zoomed.pane_size(), TermSize::new(120, 38));
    }
}
