//! The replies and events as they travel: structs of the protocol's own, apart from the core's,
//! so that renaming a field inside oino cannot change what clients read (`oino ls --json` and
//! the other `--json` outputs print these too). [`Travel`] converts each value of the core to
//! its wire form and back, here and nowhere else; the golden lines of `requests/tests.rs` pin
//! every form.

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::call::{
    CallResult as CoreCallResult, DetachCause as CoreDetachCause, DetachedTo as CoreDetachedTo,
};
use crate::core::project::{ProcessPhase, ProjectMark};
use crate::core::{
    CoreEvent, EntryInfo, EntryKind, EntryState, ErrorData as CoreErrorData,
    HistoryPage as CoreHistoryPage,
};
use crate::output::{
    LogCut as CoreLogCut, OutputSlice as CoreOutputSlice, SearchHit as CoreSearchHit,
};
use crate::pty::{ProcessExit, TermSize};

mod project;
mod screen;

pub use project::{
    After, Applied, Condition, Did, LeftRunning, Probe, Probes, Process, Project, ProjectApplied,
    ProjectStarted, ProjectStopped, Restart,
};
pub use screen::{
    Attrs, Cell, Color, Cursor, Mouse, MouseEncoding, MouseEvents, ScreenView, Snapshot,
};

/// A value of oino's that goes over the wire in a form of the protocol's.
pub trait Travel: Sized {
    /// Its form on the wire.
    type Wire: Serialize + DeserializeOwned;
    /// Turns it into its wire form.
    fn to_wire(self) -> Self::Wire;
    /// Turns a wire form back into it.
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
    /// The protocol version the server speaks.
    pub version: u32,
    /// The server's process id.
    pub server_pid: u32,
    /// The server's oino version.
    #[serde(default)]
    pub oino: String,
}

as_is!(Hello);

/// A terminal size in character cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    /// Width, in columns.
    pub cols: u16,
    /// Height, in rows.
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
    /// Someone waits for its result.
    Call,
    /// Detached into the background: it has a task id and a name.
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

/// Where an entry's process stands: `{"state": "exited", "code": 3}` and so on. A project's
/// process says more when its run's state does not say it all: `waiting`, `blocked`,
/// `restarting`, `gave_up`, `changed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum State {
    /// Its shell has not ended.
    Running,
    /// Its shell exited by itself.
    Exited {
        /// The exit status.
        code: i32,
    },
    /// A signal ended its shell.
    Killed {
        /// The signal's number (15 is SIGTERM).
        signal: i32,
    },
    /// Left running by a server that died, and listed by the next one as `CALLID.left`: only `kill`
    /// reaches it; other requests answer `not_running`.
    Orphaned {
        /// The pid of the server that died.
        server_pid: u32,
    },
    /// A project's process not started yet: it waits for these.
    Waiting {
        /// The names of the processes it waits for.
        waiting_for: Vec<String>,
    },
    /// A project's process that cannot start as things stand.
    Blocked {
        /// Why: "migrate exited 1", "db never became ready".
        reason: String,
        /// How its last run ended, if it ran.
        #[serde(flatten)]
        last: Last,
    },
    /// A project's process that ended, started again once its backoff is over.
    Restarting {
        /// What is left of the backoff, in ms.
        backoff_left_ms: u64,
        /// How its last run ended.
        #[serde(flatten)]
        last: Last,
    },
    /// A project's process left ended after its `restart_limit`.
    GaveUp {
        /// How its last run ended.
        #[serde(flatten)]
        last: Last,
    },
    /// A project's process that runs, while the file's definition of it differs.
    Changed {
        /// What differs: `cmd`, `cwd`, `env`, `env_file` or `probe`.
        change: String,
    },
}

/// How a run ended: `code` or `signal`, beside the state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Last {
    /// The exit status, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

impl Last {
    fn of(state: EntryState) -> Self {
        match state {
            EntryState::Exited { code } => Self {
                code: Some(code),
                signal: None,
            },
            EntryState::Killed { signal } => Self {
                code: None,
                signal: Some(signal),
            },
            _ => Self::default(),
        }
    }

    fn state(self) -> EntryState {
        match (self.code, self.signal) {
            (Some(code), _) => EntryState::Exited { code },
            (None, Some(signal)) => EntryState::Killed { signal },
            (None, None) => EntryState::NotStarted,
        }
    }
}

/// What a kill did: `{"name": "web", "state": "killed", "signal": 15, "processes": 3}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Killed {
    /// How it is listed: its task name, else its title, else its id.
    #[serde(default)]
    pub name: String,
    /// Its state after.
    #[serde(flatten)]
    pub state: State,
    /// How many processes its tree had when the kill began (0 when it had ended).
    pub processes: u64,
}

impl Travel for crate::core::Killed {
    type Wire = Killed;
    fn to_wire(self) -> Killed {
        Killed {
            name: self.name,
            state: self.state.to_wire(),
            processes: self.processes as u64,
        }
    }
    fn from_wire(wire: Killed) -> Self {
        Self {
            name: wire.name,
            state: EntryState::from_wire(wire.state),
            processes: usize::try_from(wire.processes).unwrap_or(usize::MAX),
        }
    }
}

impl Travel for EntryState {
    type Wire = State;
    fn to_wire(self) -> State {
        match self {
            Self::Running => State::Running,
            Self::Exited { code } => State::Exited { code },
            Self::Killed { signal } => State::Killed { signal },
            Self::Orphaned { server_pid } => State::Orphaned { server_pid },
            Self::NotStarted => State::Waiting {
                waiting_for: Vec::new(),
            },
        }
    }
    fn from_wire(wire: State) -> Self {
        match wire {
            State::Running | State::Changed { .. } => Self::Running,
            State::Exited { code } => Self::Exited { code },
            State::Killed { signal } => Self::Killed { signal },
            State::Orphaned { server_pid } => Self::Orphaned { server_pid },
            State::Waiting { .. } => Self::NotStarted,
            State::Blocked { last, .. }
            | State::Restarting { last, .. }
            | State::GaveUp { last } => last.state(),
        }
    }
}

/// The state shown for a run in `state`, when its project's process says more (`phase`).
fn state_with_phase(state: EntryState, phase: Option<ProcessPhase>) -> State {
    let last = Last::of(state);
    match phase {
        None => state.to_wire(),
        Some(ProcessPhase::Waiting { waiting_for }) => State::Waiting { waiting_for },
        Some(ProcessPhase::Blocked { reason }) => State::Blocked { reason, last },
        Some(ProcessPhase::Restarting { backoff_left_ms }) => State::Restarting {
            backoff_left_ms,
            last,
        },
        Some(ProcessPhase::GaveUp) => State::GaveUp { last },
        Some(ProcessPhase::Changed { change }) => State::Changed { change },
    }
}

/// What a project's process says beyond its run's state, from `state`.
fn phase_of(state: &State) -> Option<ProcessPhase> {
    match state {
        State::Waiting { waiting_for } => Some(ProcessPhase::Waiting {
            waiting_for: waiting_for.clone(),
        }),
        State::Blocked { reason, .. } => Some(ProcessPhase::Blocked {
            reason: reason.clone(),
        }),
        State::Restarting {
            backoff_left_ms, ..
        } => Some(ProcessPhase::Restarting {
            backoff_left_ms: *backoff_left_ms,
        }),
        State::GaveUp { .. } => Some(ProcessPhase::GaveUp),
        State::Changed { change } => Some(ProcessPhase::Changed {
            change: change.clone(),
        }),
        _ => None,
    }
}

/// How much of a capped log was kept and left out, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogCut {
    /// The cap (`log_cap`).
    pub cap: u64,
    /// Kept from the start.
    pub head: u64,
    /// Left out after the head.
    pub left_out: u64,
    /// The newest output kept, after the gap.
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
    /// The call id (`c1`, or the one `run` was given); a task keeps it.
    pub id: String,
    /// A call, or a task once detached.
    pub kind: Kind,
    /// The task id (`t3`); `None` while it is a call.
    pub task_id: Option<String>,
    /// The task's name; `None` while it is a call.
    pub name: Option<String>,
    /// Shown instead of the command, when one was given.
    pub title: Option<String>,
    /// The shell command, run by `bash -c`.
    pub command: String,
    /// The folder it runs in.
    pub cwd: PathBuf,
    /// The shell's pid, also its process group's.
    pub pid: u32,
    /// Milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// When it became a task, in milliseconds since the Unix epoch; `None` while it is a call.
    pub detached_ms: Option<u64>,
    /// When it ended, in milliseconds since the Unix epoch; `None` while it runs.
    pub ended_ms: Option<u64>,
    /// How it stands: `state`, with `code`, `signal` or `server_pid` beside it in the entry.
    #[serde(flatten)]
    pub state: State,
    /// Its timeout passed: it was killed, or detached to a task.
    pub timed_out: bool,
    /// Raw output readable so far, in bytes: a boundary (never within a character or an escape
    /// sequence).
    pub bytes: u64,
    /// Raw offset where the task's own output starts (0 for a call): a boundary.
    pub detach_offset: u64,
    /// Its log: the raw output.
    pub log_path: PathBuf,
    /// Why the log could not be written; the newest output is then kept in memory, and reads say
    /// where output was lost.
    pub log_error: Option<String>,
    /// Present once the log reached its cap: what it kept and left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_cut: Option<LogCut>,
    /// Present while it waits for someone to type: the line the cursor is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for_input: Option<String>,
    /// Present for a project's process with a ready pattern: whether a line of its output matched
    /// it yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Present for a run of a project's process: the project's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Present for a run of a project's process: the project's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_file: Option<PathBuf>,
    /// Present for a run of a project's process: the process's name in its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// Present for a run of a project's process: which run it is, from 1 (0: none yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<u32>,
    /// Present for a run of a project's process: how many times the process was restarted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarts: Option<u32>,
    /// A run of a project's process that a newer run replaced (`ls` shows it with `--all`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
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
            state: state_with_phase(
                self.state,
                self.project.as_ref().and_then(|mark| mark.phase.clone()),
            ),
            timed_out: self.timed_out,
            bytes: self.bytes,
            detach_offset: self.detach_offset,
            log_path: self.log_path,
            log_error: self.log_error,
            log_cut: self.log_cut.to_wire(),
            waiting_for_input: self.waiting_for_input,
            ready: self.ready,
            project: self.project.as_ref().map(|mark| mark.project.clone()),
            project_file: self.project.as_ref().map(|mark| mark.file.clone()),
            process: self.project.as_ref().map(|mark| mark.process.clone()),
            run: self.project.as_ref().map(|mark| mark.run),
            restarts: self.project.as_ref().map(|mark| mark.restarts),
            superseded: self.project.as_ref().is_some_and(|mark| !mark.latest),
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
            state: Travel::from_wire(wire.state.clone()),
            timed_out: wire.timed_out,
            bytes: wire.bytes,
            detach_offset: wire.detach_offset,
            log_path: wire.log_path,
            log_error: wire.log_error,
            log_cut: Travel::from_wire(wire.log_cut),
            waiting_for_input: wire.waiting_for_input,
            ready: wire.ready,
            project: wire.project.map(|project| ProjectMark {
                project,
                file: wire.project_file.unwrap_or_default(),
                process: wire.process.unwrap_or_default(),
                run: wire.run.unwrap_or_default(),
                latest: !wire.superseded,
                restarts: wire.restarts.unwrap_or_default(),
                phase: phase_of(&wire.state),
            }),
        }
    }
}

/// How a process ended: `{"code": 0}` or `{"signal": 9}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// This signal (its number) ended it.
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
    /// The task's id (`t3`).
    pub task_id: String,
    /// Why: the words of `detach`, the timeout, `waiting for input: PROMPT`, or
    /// `PROGRAM (full screen) waits for keys`.
    pub reason: String,
    /// Why, for a client to decide on (the words are for people).
    #[serde(default)]
    pub cause: DetachCause,
}

/// Why a call became a task: `asked`, `input`, `keys`, `timeout`, `link_dropped`,
/// `background`; a cause this client does not know reads as `asked`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetachCause {
    /// It waits for someone to type at a prompt.
    Input,
    /// A full-screen program waits for keys.
    Keys,
    /// Its waiter's timeout passed.
    Timeout,
    /// The link to its waiter on another machine dropped.
    LinkDropped,
    /// It was started in the background.
    Background,
    /// Someone asked: a person's key, `oino detach`, a waiter's delay or ready line.
    #[default]
    #[serde(other)]
    Asked,
}

impl Travel for CoreDetachCause {
    type Wire = DetachCause;
    fn to_wire(self) -> DetachCause {
        match self {
            Self::Asked => DetachCause::Asked,
            Self::Input => DetachCause::Input,
            Self::Keys => DetachCause::Keys,
            Self::Timeout => DetachCause::Timeout,
            Self::LinkDropped => DetachCause::LinkDropped,
            Self::Background => DetachCause::Background,
        }
    }
    fn from_wire(wire: DetachCause) -> Self {
        match wire {
            DetachCause::Asked => Self::Asked,
            DetachCause::Input => Self::Input,
            DetachCause::Keys => Self::Keys,
            DetachCause::Timeout => Self::Timeout,
            DetachCause::LinkDropped => Self::LinkDropped,
            DetachCause::Background => Self::Background,
        }
    }
}

impl Travel for CoreDetachedTo {
    type Wire = DetachedTo;
    fn to_wire(self) -> DetachedTo {
        DetachedTo {
            task_id: self.task_id,
            reason: self.reason,
            cause: self.cause.to_wire(),
        }
    }
    fn from_wire(wire: DetachedTo) -> Self {
        Self {
            task_id: wire.task_id,
            reason: wire.reason,
            cause: Travel::from_wire(wire.cause),
        }
    }
}

/// What a call returns to its waiter: the answer to `run`, and `oino run --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallResult {
    /// The output as clean text, at most `max_bytes` (past it, a head and a tail and a line saying
    /// what was left out), then a line on how it failed, or the detach marker.
    pub text: String,
    /// It failed: a non-zero exit, a signal, or a timeout that killed it (a detach is no error).
    pub is_error: bool,
    /// How the shell ended; `None` when it was detached (it still runs).
    pub exit: Option<Exit>,
    /// Its timeout passed: it was killed, or detached (`on_timeout`).
    pub timed_out: bool,
    /// The task it became, when it was detached.
    pub detached: Option<DetachedTo>,
    /// The log with the whole output, when `text` was cut (and the log is whole).
    pub full_output_path: Option<PathBuf>,
    /// Why the log could not be written (the newest output is then kept in memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_error: Option<String>,
    /// Present once the log reached its cap: what it kept and left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_cut: Option<LogCut>,
    /// When `text` was cut and the call detached: the raw offset of its output where what was
    /// left out begins (the task's output is read on from there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_from: Option<u64>,
    /// The shell's folder when it ended, for a call that asked (`report_folder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<PathBuf>,
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
            omitted_from: self.omitted_from,
            folder: self.folder,
        }
    }
    fn from_wire(wire: CallResult) -> Self {
        Self {
            // Inert whoever sent it: a server on another machine may not be what it should.
            text: crate::output::made_clean(wire.text),
            is_error: wire.is_error,
            exit: Travel::from_wire(wire.exit),
            timed_out: wire.timed_out,
            detached: Travel::from_wire(wire.detached),
            full_output_path: wire.full_output_path,
            log_error: wire.log_error,
            log_cut: Travel::from_wire(wire.log_cut),
            omitted_from: wire.omitted_from,
            folder: wire.folder,
        }
    }
}

/// Clean text of raw bytes `[from, next_offset)`: the answer to `output`, and each line of
/// `oino logs --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputSlice {
    /// Clean text: what a person saw, without the escape sequences; a line of its own says where
    /// output was left out or lost.
    pub text: String,
    /// The raw offset the text starts at: a boundary (a `since` within a character or a sequence
    /// moves to the next one).
    pub from: u64,
    /// The raw offset to read from next: a boundary.
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
            // Inert whoever sent it: a server on another machine may not be what it should.
            text: crate::output::made_clean(wire.text),
            from: wire.from,
            next_offset: wire.next_offset,
        }
    }
}

/// A page of an entry's whole output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPage {
    /// Each line's text, its colors and attributes as SGR sequences (`ESC [ … m`): each line sets
    /// what it needs and ends reset.
    pub lines: Vec<String>,
    /// The number of the page's first line (0 is the oldest).
    pub first_line: u64,
    /// Lines between the page's end and the last line (clamped to the output).
    pub lines_back: u64,
    /// Lines in the whole output.
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

/// What a search found: the matching line nearest to where it started, and how it ranks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The line found (0 is the oldest), or null when none matches in that direction.
    pub line: Option<u64>,
    /// Its rank among the matching lines, the newest first (1 is the newest); 0 with no line.
    pub rank: u64,
    /// How many lines of the whole output match.
    pub matches: u64,
}

impl Travel for CoreSearchHit {
    type Wire = SearchHit;
    fn to_wire(self) -> SearchHit {
        SearchHit {
            line: self.line,
            rank: self.rank,
            matches: self.matches,
        }
    }
    fn from_wire(wire: SearchHit) -> Self {
        Self {
            line: wire.line,
            rank: wire.rank,
            matches: wire.matches,
        }
    }
}

/// What the server tells a subscriber, one a line (`{"event": "lagged"}` too, when it fell
/// behind: read as a sign to list again).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum Event {
    /// A new entry: a call started, or one a dead server left running was found.
    Started {
        /// Its call id.
        id: String,
    },
    /// It wrote since its screen was last asked for: a notice, not the bytes.
    OutputChanged {
        /// Its call id.
        id: String,
    },
    /// A call became a task.
    Detached {
        /// Its call id.
        id: String,
        /// The task's id (`t3`).
        task_id: String,
        /// The task's name.
        name: String,
    },
    /// Its shell ended.
    Ended {
        /// Its call id.
        id: String,
        /// How it ended.
        state: State,
    },
    /// It began or stopped waiting for someone to type.
    Waiting {
        /// Its call id.
        id: String,
        /// The prompt line (the one the cursor is on) when it begins; `None` when it stops.
        prompt: Option<String>,
    },
    /// How a project's processes stand changed; `notice` is a line for a person, when there is
    /// one ("db exited 3: restart 1/5 in 1 s").
    Project {
        /// The project file.
        file: PathBuf,
        /// What happened, in words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        notice: Option<String>,
    },
    /// A project's process became ready, or waits to again.
    Ready {
        /// Its call id.
        id: String,
        /// `false` from its start, `true` once a line matched its ready pattern; `None` without
        /// one.
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
            Self::Project { file, notice } => Event::Project { file, notice },
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
            Event::Project { file, notice } => Self::Project { file, notice },
        }
    }
}

/// What a front end acts on beside a refusal's words: the `key` asked for, `log_path` for a
/// forgotten entry, `left_by_server` (a pid) for one a server that died left running.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorData {
    /// The key asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A forgotten entry's log: its output is still there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_path: Option<PathBuf>,
    /// The pid of the server that died leaving the entry running: only `kill` reaches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_by_server: Option<u32>,
    /// With a `version` refusal: what the server runs, as `runs oino 0.1.0 (protocol 11)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<String>,
}

impl Travel for CoreErrorData {
    type Wire = ErrorData;
    fn to_wire(self) -> ErrorData {
        ErrorData {
            key: self.key,
            log_path: self.log_path,
            left_by_server: self.left_by_server,
            runs: self.runs,
        }
    }
    fn from_wire(wire: ErrorData) -> Self {
        Self {
            key: wire.key,
            log_path: wire.log_path,
            left_by_server: wire.left_by_server,
            runs: wire.runs,
        }
    }
}
