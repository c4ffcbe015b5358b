//! The replies and events as they travel: structs of the protocol's own, apart from the core's,
//! so that renaming a field inside oino cannot change what clients read (`oino ls --json` and
//! the other `--json` outputs print these too). [`Travel`] converts each value of the core to
//! its wire form and back, here and nowhere else; the golden lines in `requests.rs` pin every
//! form.

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::call::{CallResult as CoreCallResult, DetachedTo as CoreDetachedTo};
use crate::core::project::{
    Project as ProjectFile, ProjectProcess, ProjectStarted as CoreProjectStarted,
    ProjectStopped as CoreProjectStopped, Restart as CoreRestart,
};
use crate::core::{
    CoreEvent, EntryInfo, EntryKind, EntryState, ErrorData as CoreErrorData,
    HistoryPage as CoreHistoryPage,
};
use crate::output::{LogCut as CoreLogCut, OutputSlice as CoreOutputSlice};
use crate::pty::{ProcessExit, TermSize};
use crate::screen::{
    Cell as CoreCell, CellAttrs, CellColor, CursorPos, MouseEncoding as CoreMouseEncoding,
    MouseEvents as CoreMouseEvents, MouseReporting, ScreenSnapshot, ScreenView as CoreScreenView,
};

/// A value of oino's that goes over the wire in a form of the protocol's.
pub trait Travel: Sized {
    /// Its form on the wire.
    type Wire: Serialize + DeserializeOwned;
    fn to_wire(self) -> Self::Wire;
    fn from_wire(wire: Self::Wire) -> Self;
}

/// Values that are their own wire form.
macro_rules! as_is {
    ($($type:ty),*) => {$(
        impl Travel for $type {
            type Wire = Self;
            fn to_wire(self) -> Self {
                self
            }
            fn from_wire(wire: Self) -> Self {
                wire
            }
        }
    )*};
}

as_is!(String, bool, u64, ());

impl<T: Travel> Travel for Option<T> {
    type Wire = Option<T::Wire>;
    fn to_wire(self) -> Self::Wire {
        self.map(T::to_wire)
    }
    fn from_wire(wire: Self::Wire) -> Self {
        wire.map(T::from_wire)
    }
}

impl<T: Travel> Travel for Vec<T> {
    type Wire = Vec<T::Wire>;
    fn to_wire(self) -> Self::Wire {
        self.into_iter().map(T::to_wire).collect()
    }
    fn from_wire(wire: Self::Wire) -> Self {
        wire.into_iter().map(T::from_wire).collect()
    }
}

/// The answer to `hello`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub server_pid: u32,
}

as_is!(Hello);

/// A terminal size in character cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    pub cols: u16,
    pub rows: u16,
}

impl Travel for TermSize {
    type Wire = Size;
    fn to_wire(self) -> Size {
        Size {
            cols: self.cols,
            rows: self.rows,
        }
    }
    fn from_wire(wire: Size) -> Self {
        Self {
            cols: wire.cols,
            rows: wire.rows,
        }
    }
}

/// Whether an entry is a call (someone waits for it) or a background task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Call,
    Task,
}

impl Travel for EntryKind {
    type Wire = Kind;
    fn to_wire(self) -> Kind {
        match self {
            Self::Call => Kind::Call,
            Self::Task => Kind::Task,
        }
    }
    fn from_wire(wire: Kind) -> Self {
        match wire {
            Kind::Call => Self::Call,
            Kind::Task => Self::Task,
        }
    }
}

/// Where an entry's process stands: `{"state": "exited", "code": 3}` and so on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum State {
    Running,
    Exited { code: i32 },
    Killed { signal: i32 },
    Orphaned { server_pid: u32 },
}

impl Travel for EntryState {
    type Wire = State;
    fn to_wire(self) -> State {
        match self {
            Self::Running => State::Running,
            Self::Exited { code } => State::Exited { code },
            Self::Killed { signal } => State::Killed { signal },
            Self::Orphaned { server_pid } => State::Orphaned { server_pid },
        }
    }
    fn from_wire(wire: State) -> Self {
        match wire {
            State::Running => Self::Running,
            State::Exited { code } => Self::Exited { code },
            State::Killed { signal } => Self::Killed { signal },
            State::Orphaned { server_pid } => Self::Orphaned { server_pid },
        }
    }
}

/// How much of a capped log was kept and left out, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogCut {
    pub cap: u64,
    pub head: u64,
    pub left_out: u64,
    pub newest: u64,
}

impl Travel for CoreLogCut {
    type Wire = LogCut;
    fn to_wire(self) -> LogCut {
        LogCut {
            cap: self.cap,
            head: self.head,
            left_out: self.left_out,
            newest: self.newest,
        }
    }
    fn from_wire(wire: LogCut) -> Self {
        Self {
            cap: wire.cap,
            head: wire.head,
            left_out: wire.left_out,
            newest: wire.newest,
        }
    }
}

/// One call or task: what `list` gives, and `oino ls --json` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    pub kind: Kind,
    pub task_id: Option<String>,
    pub name: Option<String>,
    pub title: Option<String>,
    pub command: String,
    pub cwd: PathBuf,
    pub pid: u32,
    /// Milliseconds since the Unix epoch.
    pub started_ms: u64,
    pub detached_ms: Option<u64>,
    pub ended_ms: Option<u64>,
    #[serde(flatten)]
    pub state: State,
    pub timed_out: bool,
    pub bytes: u64,
    pub detach_offset: u64,
    pub log_path: PathBuf,
    pub log_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_cut: Option<LogCut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for_input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
}

impl Travel for EntryInfo {
    type Wire = Entry;
    fn to_wire(self) -> Entry {
        Entry {
            id: self.id,
            kind: self.kind.to_wire(),
            task_id: self.task_id,
            name: self.name,
            title: self.title,
            command: self.command,
            cwd: self.cwd,
            pid: self.pid,
            started_ms: self.started_ms,
            detached_ms: self.detached_ms,
            ended_ms: self.ended_ms,
            state: self.state.to_wire(),
            timed_out: self.timed_out,
            bytes: self.bytes,
            detach_offset: self.detach_offset,
            log_path: self.log_path,
            log_error: self.log_error,
            log_cut: self.log_cut.to_wire(),
            waiting_for_input: self.waiting_for_input,
            ready: self.ready,
        }
    }
    fn from_wire(wire: Entry) -> Self {
        Self {
            id: wire.id,
            kind: Travel::from_wire(wire.kind),
            task_id: wire.task_id,
            name: wire.name,
            title: wire.title,
            command: wire.command,
            cwd: wire.cwd,
            pid: wire.pid,
            started_ms: wire.started_ms,
            detached_ms: wire.detached_ms,
            ended_ms: wire.ended_ms,
            state: Travel::from_wire(wire.state),
            timed_out: wire.timed_out,
            bytes: wire.bytes,
            detach_offset: wire.detach_offset,
            log_path: wire.log_path,
            log_error: wire.log_error,
            log_cut: Travel::from_wire(wire.log_cut),
            waiting_for_input: wire.waiting_for_input,
            ready: wire.ready,
        }
    }
}

/// How a process ended: `{"code": 0}` or `{"signal": 9}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Travel for ProcessExit {
    type Wire = Exit;
    fn to_wire(self) -> Exit {
        match self {
            Self::Code(code) => Exit::Code(code),
            Self::Signal(signal) => Exit::Signal(signal),
        }
    }
    fn from_wire(wire: Exit) -> Self {
        match wire {
            Exit::Code(code) => Self::Code(code),
            Exit::Signal(signal) => Self::Signal(signal),
        }
    }
}

/// The task a call was detached to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetachedTo {
    pub task_id: String,
    pub reason: String,
}

impl Travel for CoreDetachedTo {
    type Wire = DetachedTo;
    fn to_wire(self) -> DetachedTo {
        DetachedTo {
            task_id: self.task_id,
            reason: self.reason,
        }
    }
    fn from_wire(wire: DetachedTo) -> Self {
        Self {
            task_id: wire.task_id,
            reason: wire.reason,
        }
    }
}

/// What a call returns to its waiter: the answer to `run`, and `oino run --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallResult {
    pub text: String,
    pub is_error: bool,
    pub exit: Option<Exit>,
    pub timed_out: bool,
    pub detached: Option<DetachedTo>,
    pub full_output_path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_cut: Option<LogCut>,
}

impl Travel for CoreCallResult {
    type Wire = CallResult;
    fn to_wire(self) -> CallResult {
        CallResult {
            text: self.text,
            is_error: self.is_error,
            exit: self.exit.to_wire(),
            timed_out: self.timed_out,
            detached: self.detached.to_wire(),
            full_output_path: self.full_output_path,
            log_error: self.log_error,
            log_cut: self.log_cut.to_wire(),
        }
    }
    fn from_wire(wire: CallResult) -> Self {
        Self {
            text: wire.text,
            is_error: wire.is_error,
            exit: Travel::from_wire(wire.exit),
            timed_out: wire.timed_out,
            detached: Travel::from_wire(wire.detached),
            full_output_path: wire.full_output_path,
            log_error: wire.log_error,
            log_cut: Travel::from_wire(wire.log_cut),
        }
    }
}

/// Clean text of raw bytes `[from, next_offset)`: the answer to `output`, and each line of
/// `oino logs --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputSlice {
    pub text: String,
    pub from: u64,
    pub next_offset: u64,
}

impl Travel for CoreOutputSlice {
    type Wire = OutputSlice;
    fn to_wire(self) -> OutputSlice {
        OutputSlice {
            text: self.text,
            from: self.from,
            next_offset: self.next_offset,
        }
    }
    fn from_wire(wire: OutputSlice) -> Self {
        Self {
            text: wire.text,
            from: wire.from,
            next_offset: wire.next_offset,
        }
    }
}

/// A page of an entry's whole output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPage {
    pub lines: Vec<String>,
    pub first_line: u64,
    pub lines_back: u64,
    pub total_lines: u64,
}

impl Travel for CoreHistoryPage {
    type Wire = HistoryPage;
    fn to_wire(self) -> HistoryPage {
        HistoryPage {
            lines: self.lines,
            first_line: self.first_line,
            lines_back: self.lines_back,
            total_lines: self.total_lines,
        }
    }
    fn from_wire(wire: HistoryPage) -> Self {
        Self {
            lines: wire.lines,
            first_line: wire.first_line,
            lines_back: wire.lines_back,
            total_lines: wire.total_lines,
        }
    }
}

/// How a project's start went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectStarted {
    pub started: Vec<String>,
    pub running: Vec<String>,
    pub not_started: Vec<String>,
}

impl Travel for CoreProjectStarted {
    type Wire = ProjectStarted;
    fn to_wire(self) -> ProjectStarted {
        ProjectStarted {
            started: self.started,
            running: self.running,
            not_started: self.not_started,
        }
    }
    fn from_wire(wire: ProjectStarted) -> Self {
        Self {
            started: wire.started,
            running: wire.running,
            not_started: wire.not_started,
        }
    }
}

/// How a project's stop went: what was stopped, in order, and what was not running.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectStopped {
    pub stopped: Vec<String>,
    pub not_running: Vec<String>,
}

impl Travel for CoreProjectStopped {
    type Wire = ProjectStopped;
    fn to_wire(self) -> ProjectStopped {
        ProjectStopped {
            stopped: self.stopped,
            not_running: self.not_running,
        }
    }
    fn from_wire(wire: ProjectStopped) -> Self {
        Self {
            stopped: wire.stopped,
            not_running: wire.not_running,
        }
    }
}

/// A cell's color.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Color {
    #[default]
    Default,
    Indexed(u8),
    Rgb(u8, u8, u8),
}

impl Travel for CellColor {
    type Wire = Color;
    fn to_wire(self) -> Color {
        match self {
            Self::Default => Color::Default,
            Self::Indexed(index) => Color::Indexed(index),
            Self::Rgb(red, green, blue) => Color::Rgb(red, green, blue),
        }
    }
    fn from_wire(wire: Color) -> Self {
        match wire {
            Color::Default => Self::Default,
            Color::Indexed(index) => Self::Indexed(index),
            Color::Rgb(red, green, blue) => Self::Rgb(red, green, blue),
        }
    }
}

/// A cell's attributes.
#[allow(clippy::struct_excessive_bools)] // Independent flags of one cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attrs {
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub inverse: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub blink: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub strikethrough: bool,
}

/// One character cell, compact (short names, defaults left out): a screen goes over the socket
/// on every change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    #[serde(rename = "t", default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub fg: Color,
    #[serde(default, skip_serializing_if = "is_default")]
    pub bg: Color,
    #[serde(rename = "a", default, skip_serializing_if = "is_default")]
    pub attrs: Attrs,
    #[serde(rename = "w", default, skip_serializing_if = "is_default")]
    pub wide: bool,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl Travel for CellAttrs {
    type Wire = Attrs;
    fn to_wire(self) -> Attrs {
        Attrs {
            bold: self.bold,
            dim: self.dim,
            italic: self.italic,
            underline: self.underline,
            inverse: self.inverse,
            blink: self.blink,
            strikethrough: self.strikethrough,
        }
    }
    fn from_wire(wire: Attrs) -> Self {
        Self {
            bold: wire.bold,
            dim: wire.dim,
            italic: wire.italic,
            underline: wire.underline,
            inverse: wire.inverse,
            blink: wire.blink,
            strikethrough: wire.strikethrough,
        }
    }
}

impl Travel for CoreCell {
    type Wire = Cell;
    fn to_wire(self) -> Cell {
        Cell {
            text: self.text,
            fg: self.fg.to_wire(),
            bg: self.bg.to_wire(),
            attrs: self.attrs.to_wire(),
            wide: self.wide,
        }
    }
    fn from_wire(wire: Cell) -> Self {
        Self {
            text: wire.text,
            fg: Travel::from_wire(wire.fg),
            bg: Travel::from_wire(wire.bg),
            attrs: Travel::from_wire(wire.attrs),
            wide: wire.wide,
        }
    }
}

/// A cursor position, zero-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub row: u16,
    pub col: u16,
}

impl Travel for CursorPos {
    type Wire = Cursor;
    fn to_wire(self) -> Cursor {
        Cursor {
            row: self.row,
            col: self.col,
        }
    }
    fn from_wire(wire: Cursor) -> Self {
        Self {
            row: wire.row,
            col: wire.col,
        }
    }
}

/// Which mouse events a program asked for (DECSET 9, 1000, 1002, 1003).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MouseEvents {
    #[default]
    None,
    Press,
    PressRelease,
    ButtonMotion,
    AnyMotion,
}

/// How it wants them written (DECSET 1005, 1006).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MouseEncoding {
    #[default]
    Default,
    Utf8,
    Sgr,
}

/// A program's mouse reporting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mouse {
    pub events: MouseEvents,
    pub encoding: MouseEncoding,
}

impl Travel for MouseReporting {
    type Wire = Mouse;
    fn to_wire(self) -> Mouse {
        Mouse {
            events: match self.events {
                CoreMouseEvents::None => MouseEvents::None,
                CoreMouseEvents::Press => MouseEvents::Press,
                CoreMouseEvents::PressRelease => MouseEvents::PressRelease,
                CoreMouseEvents::ButtonMotion => MouseEvents::ButtonMotion,
                CoreMouseEvents::AnyMotion => MouseEvents::AnyMotion,
            },
            encoding: match self.encoding {
                CoreMouseEncoding::Default => MouseEncoding::Default,
                CoreMouseEncoding::Utf8 => MouseEncoding::Utf8,
                CoreMouseEncoding::Sgr => MouseEncoding::Sgr,
            },
        }
    }
    fn from_wire(wire: Mouse) -> Self {
        Self {
            events: match wire.events {
                MouseEvents::None => CoreMouseEvents::None,
                MouseEvents::Press => CoreMouseEvents::Press,
                MouseEvents::PressRelease => CoreMouseEvents::PressRelease,
                MouseEvents::ButtonMotion => CoreMouseEvents::ButtonMotion,
                MouseEvents::AnyMotion => CoreMouseEvents::AnyMotion,
            },
            encoding: match wire.encoding {
                MouseEncoding::Default => CoreMouseEncoding::Default,
                MouseEncoding::Utf8 => CoreMouseEncoding::Utf8,
                MouseEncoding::Sgr => CoreMouseEncoding::Sgr,
            },
        }
    }
}

/// An entry's screen, as a front end draws it: the answer to `snapshot`.
#[allow(clippy::struct_excessive_bools)] // Independent modes of one screen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub size: Size,
    /// `size.rows` rows of `size.cols` cells.
    pub rows: Vec<Vec<Cell>>,
    pub cursor: Option<Cursor>,
    pub scroll_offset: usize,
    pub scrollback_rows: usize,
    pub alternate_screen: bool,
    pub application_cursor: bool,
    pub bracketed_paste: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub mouse: Mouse,
}

impl Travel for ScreenSnapshot {
    type Wire = Snapshot;
    fn to_wire(self) -> Snapshot {
        Snapshot {
            size: self.size.to_wire(),
            rows: self.rows.to_wire(),
            cursor: self.cursor.to_wire(),
            scroll_offset: self.scroll_offset,
            scrollback_rows: self.scrollback_rows,
            alternate_screen: self.alternate_screen,
            application_cursor: self.application_cursor,
            bracketed_paste: self.bracketed_paste,
            mouse: self.mouse.to_wire(),
        }
    }
    fn from_wire(wire: Snapshot) -> Self {
        Self {
            size: Travel::from_wire(wire.size),
            rows: Travel::from_wire(wire.rows),
            cursor: Travel::from_wire(wire.cursor),
            scroll_offset: wire.scroll_offset,
            scrollback_rows: wire.scrollback_rows,
            alternate_screen: wire.alternate_screen,
            application_cursor: wire.application_cursor,
            bracketed_paste: wire.bracketed_paste,
            mouse: Travel::from_wire(wire.mouse),
        }
    }
}

/// A screen as lines of text: what `oino screen --json` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenView {
    pub cols: u16,
    pub rows: u16,
    pub lines: Vec<String>,
    pub cursor: Option<Cursor>,
    pub alternate_screen: bool,
}

impl Travel for CoreScreenView {
    type Wire = ScreenView;
    fn to_wire(self) -> ScreenView {
        ScreenView {
            cols: self.cols,
            rows: self.rows,
            lines: self.lines,
            cursor: self.cursor.to_wire(),
            alternate_screen: self.alternate_screen,
        }
    }
    fn from_wire(wire: ScreenView) -> Self {
        Self {
            cols: wire.cols,
            rows: wire.rows,
            lines: wire.lines,
            cursor: Travel::from_wire(wire.cursor),
            alternate_screen: wire.alternate_screen,
        }
    }
}

/// What the server tells a subscriber, one a line (`{"event": "lagged"}` too, when it fell
/// behind: read as a sign to list again).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum Event {
    Started {
        id: String,
    },
    OutputChanged {
        id: String,
    },
    Detached {
        id: String,
        task_id: String,
        name: String,
    },
    Ended {
        id: String,
        state: State,
    },
    Waiting {
        id: String,
        prompt: Option<String>,
    },
    Ready {
        id: String,
        ready: Option<bool>,
    },
}

impl Travel for CoreEvent {
    type Wire = Event;
    fn to_wire(self) -> Event {
        match self {
            Self::Started { id } => Event::Started { id },
            Self::OutputChanged { id } => Event::OutputChanged { id },
            Self::Detached { id, task_id, name } => Event::Detached { id, task_id, name },
            Self::Ended { id, state } => Event::Ended {
                id,
                state: state.to_wire(),
            },
            Self::Waiting { id, prompt } => Event::Waiting { id, prompt },
            Self::Ready { id, ready } => Event::Ready { id, ready },
        }
    }
    fn from_wire(wire: Event) -> Self {
        match wire {
            Event::Started { id } => Self::Started { id },
            Event::OutputChanged { id } => Self::OutputChanged { id },
            Event::Detached { id, task_id, name } => Self::Detached { id, task_id, name },
            Event::Ended { id, state } => Self::Ended {
                id,
                state: Travel::from_wire(state),
            },
            Event::Waiting { id, prompt } => Self::Waiting { id, prompt },
            Event::Ready { id, ready } => Self::Ready { id, ready },
        }
    }
}

/// When a project's process that ended is started again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    Never,
    OnFailure,
    Always,
}

/// One process of a project file, checked (its folder absolute).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    pub name: String,
    pub cmd: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub autostart: bool,
    pub restart: Restart,
    pub restart_limit: u32,
    pub backoff_ms: u64,
    pub ready: Option<String>,
    pub after: Vec<String>,
}

/// A project file, as a client read it: what `project` starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub file: PathBuf,
    pub processes: Vec<Process>,
}

impl Travel for ProjectProcess {
    type Wire = Process;
    fn to_wire(self) -> Process {
        Process {
            name: self.name,
            cmd: self.cmd,
            cwd: self.cwd,
            env: self.env,
            autostart: self.autostart,
            restart: match self.restart {
                CoreRestart::Never => Restart::Never,
                CoreRestart::OnFailure => Restart::OnFailure,
                CoreRestart::Always => Restart::Always,
            },
            restart_limit: self.restart_limit,
            backoff_ms: self.backoff_ms,
            ready: self.ready,
            after: self.after,
        }
    }
    fn from_wire(wire: Process) -> Self {
        Self {
            name: wire.name,
            cmd: wire.cmd,
            cwd: wire.cwd,
            env: wire.env,
            autostart: wire.autostart,
            restart: match wire.restart {
                Restart::Never => CoreRestart::Never,
                Restart::OnFailure => CoreRestart::OnFailure,
                Restart::Always => CoreRestart::Always,
            },
            restart_limit: wire.restart_limit,
            backoff_ms: wire.backoff_ms,
            ready: wire.ready,
            after: wire.after,
        }
    }
}

impl Travel for ProjectFile {
    type Wire = Project;
    fn to_wire(self) -> Project {
        Project {
            file: self.file,
            processes: self.processes.to_wire(),
        }
    }
    fn from_wire(wire: Project) -> Self {
        Self {
            file: wire.file,
            processes: Travel::from_wire(wire.processes),
        }
    }
}

/// What a front end acts on beside a refusal's words: the `key` asked for, `log_path` for a
/// forgotten entry, `left_by_server` (a pid) for one a server that died left running.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_by_server: Option<u32>,
}

impl Travel for CoreErrorData {
    type Wire = ErrorData;
    fn to_wire(self) -> ErrorData {
        ErrorData {
            key: self.key,
            log_path: self.log_path,
            left_by_server: self.left_by_server,
        }
    }
    fn from_wire(wire: ErrorData) -> Self {
        Self {
            key: wire.key,
            log_path: wire.log_path,
            left_by_server: wire.left_by_server,
        }
    }
}
