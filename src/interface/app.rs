//! The application state of the full-screen interface, and how it changes.
//!
//! `App::handle_input` and `App::handle_core_event` are the `update` half: they change the state
//! and return [`Effect`]s (start, detach, kill, write, resize) for the event loop to carry out on
//! the core; outcomes come back as notices. The `render` half lives in `ui` and only reads the
//! state. Keys map to one [`Action`] enum through the keymap, which also writes the hints and the
//! help.

use std::time::{Duration, Instant};

use notices::NOTICE_TIME;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, MouseEvent};

use crate::core::{CoreEvent, EntryInfo, EntryKind, HistoryPage};
use crate::pty::TermSize;
use crate::screen::ScreenSnapshot;

mod actions;
mod confirm;
mod copy;
mod filter;
mod focus;
mod help;
mod keymap;
mod keys;
mod layout;
mod mouse;
mod notices;
mod prompt;
mod search;
pub mod settings;
mod split;
pub mod usage;

pub(crate) use actions::{Action, default_keymap};
pub(crate) use confirm::{Confirm, Running};
pub(crate) use copy::{Selection, characters, osc52};
pub use focus::Attached;
pub(crate) use help::{Help, HelpLine, OTHER_KEYS};
pub(crate) use keymap::{Binding, key_label, parse_key};
pub(crate) use keys::encode_key;
pub(crate) use layout::host_down_rows;
pub use layout::{
    Layout, ListLine, MIN_COLS, MIN_ROWS, Section, list_lines, list_offset, list_row_entry,
};
pub(crate) use prompt::{Prompt, PromptPurpose};
pub(crate) use search::{Search, not_found_text};

/// The reason given for a detach from this interface.
pub(crate) const DETACH_REASON: &str = "detached from the TUI";

/// What the pane needs fetched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PaneRequest {
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
pub(crate) enum Effect {
    /// Find the search's next match and scroll to it: from the current match (when it is in
    /// view), else from the rows in view.
    Search {
        id: String,
        query: String,
        newer: bool,
        scroll: usize,
        rows: u16,
        current: Option<u64>,
    },
    /// Run a person's call: here, or on the far host named.
    Start {
        command: String,
        size: TermSize,
        host: Option<String>,
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
    /// Stop the project of `file` (`oino down`).
    ProjectDown {
        file: std::path::PathBuf,
        name: String,
    },
    /// Start the project of `file`, or apply its changed file (`oino up`).
    ProjectUp {
        file: std::path::PathBuf,
        name: String,
    },
    Resize {
        id: String,
        size: TermSize,
    },
}

/// What an effect came to, reported back to the app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Done(String),
    Failed(String),
    /// A search for `query` found its match: scroll there.
    Found {
        query: String,
        scroll: usize,
        hit: crate::output::SearchHit,
    },
    /// A new entry to select, and what to say, if anything.
    Select {
        id: String,
        text: Option<String>,
    },
}

/// Input from the terminal (or a headless script).
#[derive(Debug)]
pub enum Input {
    /// A key pressed.
    Key(KeyEvent),
    /// Text pasted (bracketed paste), whole.
    Paste(String),
    /// A mouse event, when oino takes the mouse.
    Mouse(MouseEvent),
    /// The terminal's new size.
    Resize {
        /// Width, in columns.
        cols: u16,
        /// Height, in rows.
        rows: u16,
    },
    /// A signal asks oino to end now.
    Stop,
    /// Draw now, then answer: everything sent before is on the screen.
    Barrier(tokio::sync::oneshot::Sender<()>),
    /// From now on, draw every elapsed time as of this moment and this many milliseconds more
    /// (and half a minute, when more), sample no cpu or memory and draw no pid: a screen that
    /// stands still, for a picture or a comparison of whole screens.
    FreezeClock(u64),
}

/// Where keys go. Each mode with a state of its own keeps it, and its keys, in its own file
/// (`prompt`, `confirm`, `help`; copy mode is the keyboard's [`Selection`], in `copy`); a new
/// mode is a variant here and a line in `App::handle_key`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Keys move through the list and run the keymap's actions.
    Normal,
    /// Keys go to the selected process (`focus`).
    Focus,
    /// A line typed in the bar: a task's name, a new command, a search.
    Prompt(Prompt),
    /// A question in the bar (kill, restart, quit) that `y` answers.
    Confirm(Confirm),
    /// The keys' help, open.
    Help(Help),
}

/// The keys of a mode. It is taken out of the app while a key is handled (the app is in
/// [`Mode::Normal`] meanwhile) and puts itself back to go on.
trait ModeKeys {
    fn key(self, app: &mut App, key: KeyEvent) -> Vec<Effect>;
}

/// A message in the bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// What it says, its control characters escaped.
    pub text: String,
    /// Shown as an error (bold, in the theme's `failed` color).
    pub is_error: bool,
    /// When it was shown: it goes after 8 s.
    pub shown_at: Instant,
}

/// What must be fetched or done before the next frame: the front end's cache of the core's
/// model is refreshed only where something changed.
#[derive(Clone, Copy, Debug, Default)]
#[allow(clippy::struct_excessive_bools)] // Independent needs, set and taken apart.
struct Due {
    /// The entries must be listed again.
    entries: bool,
    /// The pane must be fetched again.
    pane: bool,
    /// The other panes of a split view must be fetched again.
    split: bool,
    /// The panes changed: the PTYs are to be resized to them.
    resizes: bool,
    /// Something shown changed: a frame is wanted.
    frame: bool,
}

/// The state of the interface.
#[allow(clippy::struct_excessive_bools)] // Independent switches of the view.
pub struct App {
    /// Entries in list order: running calls, tasks, finished.
    pub entries: Vec<EntryInfo>,
    /// The selected entry's call id; `None` before there is one.
    pub selected: Option<String>,
    /// Where keys go now.
    pub mode: Mode,
    /// The pane fills the screen: no list.
    pub zoom: bool,
    /// Rows scrolled back from the live output.
    pub scroll: usize,
    /// The active search, if any.
    pub search: Option<Search>,
    /// The list shows only the entries that hold this text (see `filter.rs`).
    pub filter: Option<String>,
    /// The message in the bar, until it expires.
    pub notice: Option<Notice>,
    /// The selected entry's screen, as last fetched.
    pub pane: Option<ScreenSnapshot>,
    /// A split view: the entries shown at once (two to [`MAX_PANES`], in order; empty for one
    /// pane). The focused pane is the selected entry's.
    pub split: Vec<String>,
    /// The other panes' live screens, as last fetched.
    pub split_panes: std::collections::HashMap<String, ScreenSnapshot>,
    /// Whose live screen `pane` is (none for history): the mouse goes to that program only.
    pane_of: Option<String>,
    /// The number of the pane's first line when it shows history (0 is the oldest).
    pub(crate) pane_first_line: Option<u64>,
    /// A button went down in the pane and its program was told: moves and the release go to
    /// it too, wherever they are (at the pane's nearest cell), as a terminal does.
    mouse_held: bool,
    /// What must be fetched or done before the next frame.
    due: Due,
    /// The processes live in a server, so quitting leaves them running.
    pub processes_outlive: bool,
    /// The terminal's size: columns, rows.
    pub term_size: (u16, u16),
    /// Whether oino's chrome has colors (not under `NO_COLOR`).
    pub color: bool,
    /// Set when the interface is to end.
    pub quit: bool,
    /// The moment every elapsed time is drawn as of, once a headless script froze the clock.
    pub frozen_ms: Option<u64>,
    /// Entries whose failed log was told in the bar already.
    pub log_errors_told: std::collections::HashSet<String>,
    /// A call that waits for input (its id, its prompt) before the list has it: told once it
    /// does, by its name.
    untold_wait: Option<(String, String)>,
    /// What each running entry's tree costs, as last sampled.
    pub usage: std::collections::HashMap<String, crate::interface::app::usage::Usage>,
    /// `oino attach`: the one entry this terminal is attached to, and the key that detaches.
    pub attached: Option<Attached>,
    /// Text being selected in the pane (copy mode, or a drag).
    pub selection: Option<Selection>,
    /// The keymap, the list's width, the colors, the mouse, notices of ends.
    pub settings: settings::Config,
    /// The far hosts listed below this machine's entries, in order (none: one machine).
    pub hosts: Vec<crate::interface::fleet::HostView>,
}

impl App {
    /// An interface for a terminal of `term_size` (columns, rows), with colors or not, and no
    /// entries yet.
    #[must_use]
    pub fn new(term_size: (u16, u16), color: bool) -> Self {
        Self {
            entries: Vec::new(),
            selected: None,
            mode: Mode::Normal,
            zoom: false,
            scroll: 0,
            search: None,
            filter: None,
            notice: None,
            pane: None,
            split: Vec::new(),
            split_panes: std::collections::HashMap::new(),
            pane_of: None,
            pane_first_line: None,
            mouse_held: false,
            due: Due {
                entries: true,
                pane: true,
                frame: true,
                ..Due::default()
            },
            processes_outlive: false,
            term_size,
            color,
            quit: false,
            log_errors_told: std::collections::HashSet::new(),
            untold_wait: None,
            usage: std::collections::HashMap::new(),
            frozen_ms: None,
            attached: None,
            selection: None,
            settings: settings::Config::default(),
            hosts: Vec::new(),
        }
    }

    /// Takes the user's settings.
    pub(crate) fn configure(&mut self, config: crate::interface::app::settings::Config) {
        self.settings = config;
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
            self.settings.list_width,
        )
    }

    /// The key bound to `action`, as the help names it (the first, when there are several).
    #[must_use]
    pub(crate) fn key_of(&self, action: Action) -> String {
        self.settings
            .keymap
            .iter()
            .find(|binding| binding.action == action)
            .and_then(|binding| binding.label.split(' ').next())
            .unwrap_or("?")
            .to_owned()
    }

    /// The size every PTY should have.
    #[must_use]
    pub(crate) fn pane_size(&self) -> Option<TermSize> {
        self.layout().map(|layout| layout.pane_size())
    }

    #[must_use]
    pub(crate) fn selected_entry(&self) -> Option<&EntryInfo> {
        let id = self.selected.as_deref()?;
        self.entries.iter().find(|entry| entry.id == id)
    }

    /// The far host of the selected entry; `None` for this machine's.
    pub(crate) fn selected_host(&self) -> Option<&str> {
        let id = self.selected.as_deref()?;
        crate::interface::fleet::split_id(id).map(|(host, _)| host)
    }

    /// Where an entry's machine comes in the list: 0 for this one, then each far host's.
    pub(crate) fn host_rank(&self, entry: &EntryInfo) -> usize {
        crate::interface::fleet::split_id(&entry.id).map_or(0, |(host, _)| {
            self.hosts
                .iter()
                .position(|view| view.name == host)
                .map_or(usize::MAX, |index| index + 1)
        })
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
    pub(crate) fn set_entries(&mut self, mut entries: Vec<EntryInfo>) {
        // A project's process is one row: its newest run (or why it has none).
        entries.retain(|entry| entry.project.as_ref().is_none_or(|mark| mark.latest));
        // A project's rows keep the server's order: its file's.
        entries.sort_by_key(|entry| {
            let project = entry.project.as_ref().map(|mark| mark.project.clone());
            let started = if project.is_some() {
                0
            } else {
                entry.started_ms
            };
            (self.host_rank(entry), Section::of(entry), project, started)
        });
        self.tell_entries(&entries);
        // A project's process selected stays selected when a new run of it (or its first)
        // takes its row.
        let process = self
            .selected_entry()
            .and_then(|entry| entry.project.as_ref())
            .map(|mark| (mark.file.clone(), mark.process.clone()));
        self.entries = entries;
        self.due.entries = false;
        self.keep_split_to_entries();
        if let (None, Some((file, name))) = (self.selected_index(), process) {
            let row = self.entries.iter().find(|entry| {
                entry
                    .project
                    .as_ref()
                    .is_some_and(|mark| mark.file == file && mark.process == name)
            });
            self.selected = row.map(|entry| entry.id.clone());
            self.due.pane = true;
        }
        self.keep_selection_listed();
        self.tell_untold_wait();
    }

    /// What the pane needs fetched, if it is stale: the selected entry's live screen at the
    /// pane's size, or, scrolled back, a page of its history from the log.
    pub(crate) fn pane_request(&mut self) -> Option<PaneRequest> {
        if !std::mem::take(&mut self.due.pane) {
            return None;
        }
        let size = self.pane_size();
        let Some(id) = self.selected.clone() else {
            self.pane = None;
            return None;
        };
        // A project's process that has not run has nothing to show but why (in its header).
        if self
            .selected_entry()
            .and_then(|entry| entry.project.as_ref())
            .is_some_and(|mark| mark.run == 0)
        {
            self.pane = None;
            return None;
        }
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
    pub(crate) fn set_history(&mut self, page: &HistoryPage, size: TermSize) {
        // Clamped to the history there is.
        self.scroll = usize::try_from(page.lines_back).unwrap_or(usize::MAX);
        self.pane = Some(ScreenSnapshot::from_lines(size, &page.lines, self.scroll));
        self.pane_of = None;
        self.pane_first_line = Some(page.first_line);
    }

    /// The entries whose rows the list shows now, and the selected one (its pane's header):
    /// the only ones whose cost is looked up, however long the list.
    #[must_use]
    pub(crate) fn entries_in_view(&self) -> Vec<EntryInfo> {
        let lines = list_lines(self);
        let height = self
            .layout()
            .map_or(0, |layout| usize::from(layout.list.height));
        let offset = list_offset(self, &lines, height);
        let mut shown: Vec<EntryInfo> = lines
            .iter()
            .skip(offset)
            .take(height)
            .filter_map(|line| match line {
                ListLine::Entry(index) => self.entries.get(*index).cloned(),
                _ => None,
            })
            .collect();
        let selected = self.selected.as_deref();
        if let Some(entry) = self
            .entries
            .iter()
            .find(|entry| Some(entry.id.as_str()) == selected)
        {
            if !shown.iter().any(|shown| shown.id == entry.id) {
                shown.push(entry.clone());
            }
        }
        shown
    }

    /// A new sample of what the running entries cost: a frame only when what it shows changed.
    pub(crate) fn set_usage(
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
            self.due.frame = true;
        }
        self.usage = usage;
    }

    /// Whether any entry runs (and so costs something to show).
    #[must_use]
    pub(crate) fn any_running(&self) -> bool {
        self.entries.iter().any(|entry| entry.state.is_running())
    }

    /// How long until something shown changes with time alone (an elapsed time, a notice that
    /// expires); `None` when nothing does.
    #[must_use]
    pub(crate) fn next_tick(&self, now_ms: u64) -> Option<Duration> {
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
    pub(crate) fn handle_core_event(&mut self, event: &CoreEvent) -> Vec<Effect> {
        let shown = if let CoreEvent::OutputChanged { id } = event {
            let beside = self.is_split() && self.split.contains(id);
            self.due.split |= beside;
            beside || self.selected.as_deref() == Some(id.as_str())
        } else {
            self.due.split = true;
            true
        };
        self.due.pane |= shown;
        self.due.frame |= shown;
        match event {
            CoreEvent::OutputChanged { .. } => Vec::new(),
            CoreEvent::Started { id } => {
                self.due.entries = true;
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
                self.due.entries = true;
                if let Some(prompt) = prompt {
                    self.tell_waiting(id, prompt);
                }
                Vec::new()
            }
            CoreEvent::Ready { .. } => {
                self.due.entries = true;
                Vec::new()
            }
            CoreEvent::Project { notice, .. } => {
                self.due.entries = true;
                if let Some(notice) = notice {
                    self.project_notice(notice);
                }
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
                self.due.entries = true;
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

    /// What an effect came to.
    pub(crate) fn handle_outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Done(text) => self.say(text, false),
            Outcome::Failed(text) => self.say(text, true),
            Outcome::Found { query, scroll, hit } => self.found(&query, scroll, hit),
            Outcome::Select { id, text } => {
                self.select_id(id);
                if let Some(text) = text {
                    self.say(text, false);
                }
            }
        }
        self.due.entries = true;
        self.due.pane = true;
        self.due.frame = true;
    }

    /// Whether a frame was asked for since the last time this was called.
    pub(crate) fn take_frame_request(&mut self) -> bool {
        std::mem::take(&mut self.due.frame)
    }

    /// Whether the entries must be listed again before the next frame.
    #[must_use]
    pub(crate) fn entries_stale(&self) -> bool {
        self.due.entries
    }

    /// Everything on screen may have changed unseen (events were lost): fetch it all again.
    pub(crate) fn mark_stale(&mut self) {
        self.due.entries = true;
        self.due.pane = true;
        self.due.frame = true;
    }

    /// Whether the processes outlive this interface (they live in a server).
    pub(crate) fn set_processes_outlive(&mut self, outlive: bool) {
        self.processes_outlive = outlive;
    }

    /// The selected entry's screen as fetched, or `None` when it could not be.
    pub(crate) fn set_pane(&mut self, pane: Option<(String, ScreenSnapshot)>) {
        let (of, pane) = pane.unzip();
        self.pane_of = of;
        self.pane_first_line = None;
        self.pane = pane;
    }

    /// Input from the terminal.
    pub(crate) fn handle_input(&mut self, input: Input) -> Vec<Effect> {
        self.due.pane = true;
        self.due.frame = true;
        match input {
            Input::Key(key) if key.kind != KeyEventKind::Release => self.handle_key(key),
            Input::Paste(text) => self.handle_paste(&text),
            Input::Mouse(mouse) => self.handle_mouse(mouse),
            Input::Resize { cols, rows } => {
                self.term_size = (cols, rows);
                self.due.split = true;
                self.resize_all()
            }
            Input::Stop => {
                self.quit = true;
                Vec::new()
            }
            Input::FreezeClock(ahead_ms) => {
                // Half a minute more: what starts within it shows the same whole minutes.
                let margin = if ahead_ms > 0 { 30_000 } else { 0 };
                self.frozen_ms = Some(
                    crate::time::now_ms()
                        .saturating_add(ahead_ms)
                        .saturating_add(margin),
                );
                self.usage.clear();
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
            Mode::Prompt(prompt) => prompt.key(self, key),
            Mode::Confirm(confirm) => confirm.key(self, key),
            Mode::Help(help) => help.key(self, key),
        }
    }

    fn action_for(&self, key: KeyEvent) -> Option<Action> {
        let searching = self.search.is_some();
        self.settings
            .keymap
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
        // Esc ends a search, else clears the list's filter.
        if key.code == KeyCode::Esc {
            if self.search.take().is_none() {
                self.set_filter("");
            }
            return Vec::new();
        }
        match self.action_for(key) {
            Some(action) => self.act(action),
            None => Vec::new(),
        }
    }

    /// Does what an action does.
    pub(crate) fn act(&mut self, action: Action) -> Vec<Effect> {
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
        // The name its description gave it (an agent's call asks for that one), else one from
        // its command.
        let proposed = crate::core::tasks::default_name(entry.title.as_deref(), &entry.command);
        self.mode = Mode::Prompt(Prompt {
            purpose: PromptPurpose::DetachName {
                id,
                proposed: proposed.clone(),
            },
            text: proposed,
            proposal: true,
        });
        Vec::new()
    }
}

#[cfg(test)]
mod tests;
