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

mod actions;
mod copy;
mod keymap;
mod keys;
mod layout;
mod mouse;
pub mod settings;
mod split;
pub mod usage;

pub use actions::{Action, default_keymap};
pub use copy::{Selection, osc52};
pub use keymap::{Binding, key_label, parse_key};
pub use keys::encode_key;
pub use layout::{
    Layout, ListLine, MIN_COLS, MIN_ROWS, Section, list_lines, list_offset, list_row_entry,
};
pub use split::{MAX_PANES, PaneArea, split_areas};

/// The reason given for a detach from this interface.
pub const DETACH_REASON: &str = "detached from the TUI";
/// Rows the mouse wheel scrolls.
const WHEEL_ROWS: usize = 3;
/// Keys that are no action of the keymap, and what they do, for the help.
const OTHER_KEYS: [(&str, &str); 3] = [
    ("Ctrl-A", "while typing into a process: come back"),
    ("Esc", "cancel a prompt, end a search"),
    (
        "Mouse",
        "the wheel scrolls, a click selects (on a pane: focuses it)",
    ),
];

/// A line of the help.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HelpLine {
    Title,
    Blank,
    Key {
        label: String,
        does: &'static str,
    },
    /// How to scroll or close it.
    Last,
}
/// How long a notice stays in the bar.
const NOTICE_TIME: Duration = Duration::from_secs(8);

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
    /// Put text on the host's clipboard (OSC 52), as the person asked.
    Clipboard {
        text: String,
    },
    /// Tell the person (a bell, a desktop notice) that a task ended.
    Notify {
        text: String,
    },
    /// Run the entry's command again; `size` is the pane's.
    Restart {
        id: String,
        label: String,
        size: Option<TermSize>,
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
    /// A new entry to select, and what to say.
    Select {
        id: String,
        text: String,
    },
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
    Restart { id: String, label: String },
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
    /// A split view: the entries shown at once (two to [`MAX_PANES`], in order; empty for one
    /// pane). The focused pane is the selected entry's.
    pub split: Vec<String>,
    /// The other panes' live screens, as last fetched.
    pub split_panes: std::collections::HashMap<String, ScreenSnapshot>,
    /// The other panes must be fetched again.
    split_stale: bool,
    /// The panes changed: the PTYs are to be resized to them.
    resizes_due: bool,
    /// Lines the help is scrolled down, when it is taller than the terminal.
    pub help_scroll: u16,
    /// Whose live screen `pane` is (none for history): the mouse goes to that program only.
    pane_of: Option<String>,
    /// A button went down in the pane and its program was told: moves and the release go to
    /// it too, wherever they are (at the pane's nearest cell), as a terminal does.
    mouse_held: bool,
    /// The pane must be fetched again before the next frame.
    pane_stale: bool,
    /// The entries must be listed again before the next frame.
    entries_stale: bool,
    /// Something shown changed: a frame is wanted.
    frame_wanted: bool,
    /// The processes live in a server, so quitting leaves them running.
    pub processes_outlive: bool,
    pub term_size: (u16, u16),
    pub color: bool,
    pub quit: bool,
    /// Entries whose failed log was told in the bar already.
    pub log_errors_told: std::collections::HashSet<String>,
    /// What each running entry's tree costs, as last sampled.
    pub usage: std::collections::HashMap<String, crate::interface::app::usage::Usage>,
    /// `oino attach`: the one entry this terminal is attached to, and the key that detaches.
    pub attached: Option<Attached>,
    /// Text being selected in the pane (copy mode, or a drag).
    pub selection: Option<Selection>,
    /// From the settings: the list's width, the colors, the mouse, notices of ends.
    pub list_width: Option<u16>,
    pub theme: crate::interface::app::settings::Theme,
    pub mouse: bool,
    pub notify: crate::interface::app::settings::Notify,
}

/// An interface attached to one entry: its pane is the whole view and every key goes to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attached {
    pub id: String,
    pub detach_key: KeyEvent,
    /// The name of the detach key, as the bar shows it.
    pub detach_label: String,
    /// How it ended, once it has (the attach ends with it).
    pub ended: Option<EntryState>,
}

impl App {
    /// The mouse reports the terminal should send: all of them as the settings allow; attached
    /// to one program, only those it asks for, while it asks (a shell never gets mouse tracking
    /// it did not turn on).
    #[must_use]
    pub fn wants_mouse(&self) -> crate::screen::MouseEvents {
        use crate::screen::MouseEvents;
        match (&self.attached, self.mouse) {
            (_, false) => MouseEvents::None,
            (Some(_), true) => self
                .pane
                .as_ref()
                .map_or(MouseEvents::None, |pane| pane.mouse.events),
            (None, true) => MouseEvents::AnyMotion,
        }
    }

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
            split: Vec::new(),
            split_panes: std::collections::HashMap::new(),
            split_stale: false,
            resizes_due: false,
            help_scroll: 0,
            pane_of: None,
            mouse_held: false,
            pane_stale: true,
            entries_stale: true,
            frame_wanted: true,
            processes_outlive: false,
            term_size,
            color,
            quit: false,
            log_errors_told: std::collections::HashSet::new(),
            usage: std::collections::HashMap::new(),
            attached: None,
            selection: None,
            list_width: None,
            theme: crate::interface::app::settings::Theme::default(),
            mouse: true,
            notify: crate::interface::app::settings::Notify::None,
        }
    }

    /// Takes the user's settings.
    pub fn configure(&mut self, config: crate::interface::app::settings::Config) {
        self.keymap = config.keymap;
        self.list_width = config.list_width;
        self.theme = config.theme;
        self.mouse = config.mouse;
        self.notify = config.notify;
    }

    /// Attaches to entry `id`: its pane fills the view, every key but `detach_key` goes to it.
    pub fn attach(&mut self, id: String, detach_key: KeyEvent, detach_label: String) {
        self.selected = Some(id.clone());
        self.zoom = true;
        self.mode = Mode::Focus;
        self.attached = Some(Attached {
            id,
            detach_key,
            detach_label,
            ended: None,
        });
    }

    /// Where things go; in a split view, `pane` and `header` are the focused pane's.
    #[must_use]
    pub fn layout(&self) -> Option<Layout> {
        self.single_layout()
            .map(|single| self.focused_layout(single))
    }

    /// The layout with one pane.
    fn single_layout(&self) -> Option<Layout> {
        Layout::new(
            self.term_size.0,
            self.term_size.1,
            self.zoom,
            self.list_width,
        )
    }

    /// The key bound to `action`, as the help names it (the first, when there are several).
    #[must_use]
    pub fn key_of(&self, action: Action) -> String {
        self.keymap
            .iter()
            .find(|binding| binding.action == action)
            .and_then(|binding| binding.label.split(' ').next())
            .unwrap_or("?")
            .to_owned()
    }

    /// The help's lines: every binding of the keymap, then the other keys.
    #[must_use]
    pub fn help_lines(&self) -> Vec<HelpLine> {
        let key = |label: &str, does| HelpLine::Key {
            label: label.to_owned(),
            does,
        };
        let mut lines = vec![HelpLine::Title, HelpLine::Blank];
        lines.extend(
            self.keymap
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
    pub fn help_overflow(&self) -> u16 {
        let lines = self.help_lines().len();
        let shown = usize::from(self.term_size.1.saturating_sub(2));
        u16::try_from(lines.saturating_sub(shown)).unwrap_or(u16::MAX)
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
            self.select_id(entry.id.clone());
        }
    }

    /// Takes a new list of the entries, in list order; keeps the selection, or selects the
    /// first.
    pub fn set_entries(&mut self, mut entries: Vec<EntryInfo>) {
        entries.sort_by_key(|entry| (Section::of(entry), entry.started_ms));
        // A log that could not be written, or reached its cap, is told once, where the person
        // looks.
        let told = |entry: &EntryInfo| entry.log_error.is_some() || entry.log_cut.is_some();
        let untold = entries
            .iter()
            .find(|entry| told(entry) && !self.log_errors_told.contains(&entry.id));
        if let Some(entry) = untold {
            let note = match (&entry.log_error, &entry.log_cut) {
                (Some(error), _) => crate::call::log_error_note(error),
                (None, Some(cut)) => crate::call::log_cut_note(cut, &entry.log_path),
                (None, None) => String::new(),
            };
            self.say(
                format!("{}: {note}", entry.label()),
                entry.log_error.is_some(),
            );
        }
        self.log_errors_told.extend(
            entries
                .iter()
                .filter(|entry| told(entry))
                .map(|entry| entry.id.clone()),
        );
        self.entries = entries;
        self.entries_stale = false;
        self.keep_split_to_entries();
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
        self.pane_of = None;
    }

    /// A new sample of what the running entries cost: a frame only when what it shows changed.
    pub fn set_usage(
        &mut self,
        usage: std::collections::HashMap<String, crate::interface::app::usage::Usage>,
    ) {
        let shown =
            |all: &std::collections::HashMap<String, crate::interface::app::usage::Usage>| {
                let mut texts: Vec<_> = all
                    .iter()
                    .map(|(id, usage)| (id.clone(), usage.cpu_text(), usage.memory_text()))
                    .collect();
                texts.sort();
                texts
            };
        if shown(&usage) != shown(&self.usage) {
            self.frame_wanted = true;
        }
        self.usage = usage;
    }

    /// Whether any entry runs (and so costs something to show).
    #[must_use]
    pub fn any_running(&self) -> bool {
        self.entries.iter().any(|entry| entry.state.is_running())
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
        // A name or a command in it shows its control characters, escaped.
        let text: String = text.into();
        self.notice = Some(Notice {
            text: crate::inert::escaped(&text).into_owned(),
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
            .map(|entry| crate::time::until_elapsed_changes(entry.started_ms, now_ms))
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
        let shown = if let CoreEvent::OutputChanged { id } = event {
            let beside = self.is_split() && self.split.contains(id);
            self.split_stale |= beside;
            beside || self.selected.as_deref() == Some(id.as_str())
        } else {
            self.split_stale = true;
            true
        };
        self.pane_stale |= shown;
        self.frame_wanted |= shown;
        match event {
            CoreEvent::OutputChanged { .. } => Vec::new(),
            CoreEvent::Started { id } => {
                self.entries_stale = true;
                if self.attached.is_some() {
                    // Others' calls keep their size.
                    return Vec::new();
                }
                self.size_for(id)
                    .map(|size| Effect::Resize {
                        id: id.clone(),
                        size,
                    })
                    .into_iter()
                    .collect()
            }
            CoreEvent::Waiting { id, prompt } => {
                self.entries_stale = true;
                if let Some(prompt) = prompt {
                    let label = self
                        .entries
                        .iter()
                        .find(|entry| entry.id == *id)
                        .map_or(id.as_str(), |entry| {
                            entry.task_id.as_deref().unwrap_or(&entry.id)
                        });
                    self.say(
                        format!(
                            "{label} waits for input: {prompt} ({} to type into it)",
                            self.key_of(Action::Focus)
                        ),
                        false,
                    );
                }
                Vec::new()
            }
            CoreEvent::Ready { .. } => {
                self.entries_stale = true;
                Vec::new()
            }
            CoreEvent::Ended { id, state } if self.is_attached_to(id) => {
                if let Some(attached) = &mut self.attached {
                    attached.ended = Some(*state);
                }
                self.quit = true;
                Vec::new()
            }
            CoreEvent::Detached { .. } | CoreEvent::Ended { .. } => {
                self.entries_stale = true;
                let notice = self.end_notice(event);
                if let Mode::Focus = self.mode {
                    if !self
                        .selected_entry()
                        .is_some_and(|entry| entry.state.is_running())
                    {
                        self.mode = Mode::Normal;
                    }
                }
                notice.into_iter().collect()
            }
        }
    }

    /// A task's end, told as the settings ask (nothing by default).
    fn end_notice(&self, event: &CoreEvent) -> Option<Effect> {
        let CoreEvent::Ended { id, state } = event else {
            return None;
        };
        if self.notify == crate::interface::app::settings::Notify::None {
            return None;
        }
        let task = self
            .entries
            .iter()
            .find(|entry| entry.id == *id && entry.kind == EntryKind::Task)?;
        Some(Effect::Notify {
            text: format!(
                "task {} `{}` {state}",
                task.task_id.as_deref().unwrap_or(&task.id),
                task.label()
            ),
        })
    }

    /// What an effect came to.
    pub fn handle_outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Done(text) => self.say(text, false),
            Outcome::Failed(text) => self.say(text, true),
            Outcome::Scroll(scroll) => self.scroll = scroll,
            Outcome::Select { id, text } => {
                self.select_id(id);
                self.say(text, false);
            }
        }
        self.entries_stale = true;
        self.pane_stale = true;
        self.frame_wanted = true;
    }

    /// Whether a frame was asked for since the last time this was called.
    pub fn take_frame_request(&mut self) -> bool {
        std::mem::take(&mut self.frame_wanted)
    }

    /// Whether the entries must be listed again before the next frame.
    #[must_use]
    pub fn entries_stale(&self) -> bool {
        self.entries_stale
    }

    /// Everything on screen may have changed unseen (events were lost): fetch it all again.
    pub fn mark_stale(&mut self) {
        self.entries_stale = true;
        self.pane_stale = true;
        self.frame_wanted = true;
    }

    /// Whether the processes outlive this interface (they live in a server).
    pub fn set_processes_outlive(&mut self, outlive: bool) {
        self.processes_outlive = outlive;
    }

    /// The selected entry's screen as fetched, or `None` when it could not be.
    pub fn set_pane(&mut self, pane: Option<(String, ScreenSnapshot)>) {
        let (of, pane) = pane.unzip();
        self.pane_of = of;
        self.pane = pane;
    }

    /// Input from the terminal.
    pub fn handle_input(&mut self, input: Input) -> Vec<Effect> {
        self.pane_stale = true;
        self.frame_wanted = true;
        match input {
            Input::Key(key) if key.kind != KeyEventKind::Release => self.handle_key(key),
            Input::Paste(text) => self.handle_paste(&text),
            Input::Mouse(mouse) => self.handle_mouse(mouse),
            Input::Resize { cols, rows } => {
                self.term_size = (cols, rows);
                self.split_stale = true;
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

    /// Resizing the terminal resizes every running PTY to its pane (attached, only its own).
    fn resize_all(&self) -> Vec<Effect> {
        let attached = self.attached.as_ref().map(|attached| attached.id.as_str());
        self.entries
            .iter()
            .filter(|entry| entry.state.is_running())
            .filter(|entry| attached.is_none_or(|id| id == entry.id))
            .filter_map(|entry| {
                Some(Effect::Resize {
                    id: entry.id.clone(),
                    size: self.size_for(&entry.id)?,
                })
            })
            .collect()
    }

    fn handle_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        // A notice lasts until the next key (or its time runs out).
        self.notice = None;
        if self.selection.is_some_and(|selection| !selection.by_mouse) {
            return self.handle_copy_key(key);
        }
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Normal => self.handle_normal_key(key),
            Mode::Focus => self.handle_focus_key(key),
            Mode::Prompt(prompt) => self.handle_prompt_key(prompt, key),
            Mode::Confirm(confirm) => self.handle_confirm_key(&confirm, key),
            // Arrows scroll a help taller than the terminal; any other key closes it.
            Mode::Help => {
                let step: i32 = match key.code {
                    KeyCode::Down | KeyCode::Char('j') => 1,
                    KeyCode::Up | KeyCode::Char('k') => -1,
                    KeyCode::PageDown | KeyCode::Char(' ') => 10,
                    KeyCode::PageUp => -10,
                    _ => return Vec::new(),
                };
                let scrolled =
                    (i32::from(self.help_scroll) + step).clamp(0, i32::from(self.help_overflow()));
                self.help_scroll = u16::try_from(scrolled).unwrap_or(0);
                self.mode = Mode::Help;
                Vec::new()
            }
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
        action.run(self)
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

    fn restart(&self, id: String) -> Effect {
        let label = self
            .entries
            .iter()
            .find(|entry| entry.id == id)
            .map_or_else(|| id.clone(), |entry| entry.label().to_owned());
        Effect::Restart {
            id,
            label,
            size: self.pane_size(),
        }
    }

    fn handle_confirm_key(&mut self, confirm: &Confirm, key: KeyEvent) -> Vec<Effect> {
        if !matches!(key.code, KeyCode::Char('y' | 'Y')) {
            return Vec::new();
        }
        match confirm {
            Confirm::Kill { id, .. } => vec![Effect::Kill { id: id.clone() }],
            Confirm::Restart { id, .. } => vec![self.restart(id.clone())],
            Confirm::Quit { .. } => {
                self.quit = true;
                Vec::new()
            }
        }
    }

    fn is_attached_to(&self, id: &str) -> bool {
        self.attached
            .as_ref()
            .is_some_and(|attached| attached.id == id)
    }

    fn handle_focus_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if let Some(attached) = &self.attached {
            if key.code == attached.detach_key.code
                && key.modifiers == attached.detach_key.modifiers
            {
                self.quit = true;
            } else {
                self.mode = Mode::Focus;
                return self.keys_to_process(key);
            }
            return Vec::new();
        }
        if key.code == KeyCode::Char('a') && key.modifiers == KeyModifiers::CONTROL {
            return Vec::new();
        }
        self.mode = Mode::Focus;
        self.keys_to_process(key)
    }

    /// A key as the selected process's terminal would send it.
    fn keys_to_process(&self, key: KeyEvent) -> Vec<Effect> {
        let application_cursor = self
            .pane
            .as_ref()
            .is_some_and(|pane| pane.application_cursor);
        match (self.selected.clone(), encode_key(key, application_cursor)) {
            (Some(id), Some(bytes)) => vec![Effect::Write { id, bytes }],
            _ => Vec::new(),
        }
    }

    /// Copy mode: a selection from the pane's cursor (or the start of its last row with text).
    fn start_copy(&mut self) {
        let Some(pane) = &self.pane else {
            self.say("nothing to copy from", true);
            return;
        };
        let start = pane.cursor.map_or_else(
            || {
                let last = pane
                    .rows
                    .iter()
                    .rposition(|row| row.iter().any(|cell| !cell.text.trim().is_empty()))
                    .unwrap_or(0);
                (u16::try_from(last).unwrap_or(0), 0)
            },
            |cursor| (cursor.row, cursor.col),
        );
        self.selection = Some(Selection {
            anchor: start,
            cursor: start,
            by_mouse: false,
        });
    }

    /// A key in copy mode: motion keys move the selection's end, `y` copies, `Esc` cancels.
    fn handle_copy_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let (Some(mut selection), Some(pane)) = (self.selection, self.pane.as_ref()) else {
            self.selection = None;
            return Vec::new();
        };
        let (rows, cols) = (pane.size.rows, pane.size.cols);
        match selection.key(key, rows, cols) {
            copy::CopyKey::Moved | copy::CopyKey::Nothing => {
                self.selection = Some(selection);
                Vec::new()
            }
            copy::CopyKey::Cancel => {
                self.selection = None;
                Vec::new()
            }
            copy::CopyKey::Copy => self.copy_selection(),
        }
    }

    /// Copies the selection to the clipboard, and ends it.
    fn copy_selection(&mut self) -> Vec<Effect> {
        let text = match (self.selection.take(), &self.pane) {
            (Some(selection), Some(pane)) => selection.text(pane),
            _ => return Vec::new(),
        };
        self.say(
            format!(
                "copied {} characters to the clipboard",
                text.chars().count()
            ),
            false,
        );
        vec![Effect::Clipboard { text }]
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

    /// A drag in the pane selects text; letting go copies it. `None` when the event is not
    /// for the selection.
    fn select_by_mouse(
        &mut self,
        kind: MouseEventKind,
        in_pane: bool,
        spot: (u16, u16),
    ) -> Option<Vec<Effect>> {
        match kind {
            MouseEventKind::Down(MouseButton::Left) if in_pane && self.pane.is_some() => {
                self.selection = Some(Selection {
                    anchor: spot,
                    cursor: spot,
                    by_mouse: true,
                });
                return Some(Vec::new());
            }
            MouseEventKind::Drag(MouseButton::Left)
                if self.selection.is_some_and(|selection| selection.by_mouse) =>
            {
                if let Some(selection) = &mut self.selection {
                    selection.cursor = spot;
                }
                return Some(Vec::new());
            }
            MouseEventKind::Up(MouseButton::Left)
                if self.selection.is_some_and(|selection| selection.by_mouse) =>
            {
                // A click alone copies nothing.
                if self
                    .selection
                    .is_some_and(|selection| selection.anchor != selection.cursor)
                {
                    return Some(self.copy_selection());
                }
                self.selection = None;
                return Some(Vec::new());
            }
            _ => {}
        }
        None
    }

    fn handle_mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        let Some(layout) = self.layout() else {
            return Vec::new();
        };
        let position = ratatui::layout::Position::new(mouse.column, mouse.row);
        // A click on another pane of a split view moves the focus there.
        if let (MouseEventKind::Down(_), false) = (mouse.kind, self.mouse_held) {
            let clicked = self.pane_areas().into_iter().find(|area| {
                (area.pane.contains(position) || area.header.contains(position))
                    && self.selected.as_deref() != Some(area.id.as_str())
            });
            if let Some(area) = clicked {
                self.select_id(area.id);
                return Vec::new();
            }
        }
        let held = self.mouse_held
            && matches!(mouse.kind, MouseEventKind::Drag(_) | MouseEventKind::Up(_));
        if let Some(effects) = self
            .live_program(held || layout.pane.contains(position))
            .and_then(|(id, pane)| {
                let pane_area = layout.pane;
                let col = mouse.column.clamp(pane_area.left(), pane_area.right() - 1) - pane_area.x;
                let row = mouse.row.clamp(pane_area.top(), pane_area.bottom() - 1) - pane_area.y;
                let bytes = program_mouse(pane, mouse, col, row, self.mode == Mode::Focus)?;
                Some(if bytes.is_empty() {
                    Vec::new()
                } else {
                    vec![Effect::Write { id, bytes }]
                })
            })
        {
            self.mouse_held = match mouse.kind {
                MouseEventKind::Down(_) => !effects.is_empty(),
                MouseEventKind::Up(_) => false,
                _ => self.mouse_held,
            };
            return effects;
        }
        self.mouse_held = false;
        // A drag in the pane selects; letting go copies.
        let in_pane = layout.pane.contains(position);
        let spot = (
            mouse.row.clamp(layout.pane.top(), layout.pane.bottom() - 1) - layout.pane.y,
            mouse
                .column
                .clamp(layout.pane.left(), layout.pane.right() - 1)
                - layout.pane.x,
        );
        if let Some(effects) = self.select_by_mouse(mouse.kind, in_pane, spot) {
            return effects;
        }
        match mouse.kind {
            // A full-screen program's output makes no history to look back on.
            MouseEventKind::ScrollUp
                if self
                    .live_program(true)
                    .is_some_and(|(_, pane)| pane.alternate_screen) => {}
            MouseEventKind::ScrollUp => self.scroll = self.scroll.saturating_add(WHEEL_ROWS),
            MouseEventKind::ScrollDown => self.scroll = self.scroll.saturating_sub(WHEEL_ROWS),
            MouseEventKind::Down(MouseButton::Left)
                if self.mode == Mode::Normal
                    && layout
                        .list
                        .contains(ratatui::layout::Position::new(mouse.column, mouse.row)) =>
            {
                if let Some(index) = list_row_entry(self, layout, mouse.row) {
                    self.select_index(index);
                }
            }
            _ => {}
        }
        Vec::new()
    }

    /// The selected entry's id and live screen, when it is running, `inside` its pane, and
    /// the screen shown is its own (not one fetched before the selection moved).
    fn live_program(&self, inside: bool) -> Option<(String, &ScreenSnapshot)> {
        let entry = self.selected_entry()?;
        let own = self.pane_of.as_deref() == Some(entry.id.as_str());
        (inside && own && self.scroll == 0 && entry.state.is_running())
            .then(|| self.pane.as_ref().map(|pane| (entry.id.clone(), pane)))
            .flatten()
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

/// What a mouse event in a live pane writes to its program: `None` when the event is oino's
/// (the program reads no mouse and is not full-screen, or a click outside focus); nothing when
/// the program takes it but is told nothing (a kind it did not ask for).
fn program_mouse(
    pane: &ScreenSnapshot,
    mouse: MouseEvent,
    col: u16,
    row: u16,
    focused: bool,
) -> Option<Vec<u8>> {
    let wheel = match mouse.kind {
        MouseEventKind::ScrollUp => Some(true),
        MouseEventKind::ScrollDown => Some(false),
        _ => None,
    };
    // Clicks and moves are the program's once it has the keys too; the wheel always.
    if !(focused || wheel.is_some()) {
        return None;
    }
    if pane.mouse.events != crate::screen::MouseEvents::None {
        return Some(
            mouse::report(pane.mouse, mouse.kind, mouse.modifiers, col, row).unwrap_or_default(),
        );
    }
    match wheel {
        Some(up) if pane.alternate_screen => Some(mouse::wheel_as_arrows(
            up,
            pane.application_cursor,
            WHEEL_ROWS,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
