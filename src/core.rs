//! The core: the one owner of the registry, the running calls, the tasks and their screens.
//!
//! Front ends (the CLI, later the TUI, the server and the agent bridge) hold a cloneable [`Core`]
//! and get owned values back: [`EntryInfo`] lists, [`ScreenSnapshot`]s, [`OutputSlice`]s, plus a
//! stream of [`CoreEvent`]s. Each call runs in a task of its own (a [`CallRunner`]); a detached
//! call's process is adopted by a task loop that keeps feeding the same log and screen.
//!
//! The entry table is a small map behind a mutex that is never held across an await, like the
//! registry's; everything slow (process I/O, kills, waits) happens outside it.

pub mod tasks;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use crate::time::unix_ms;

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, oneshot, watch};

use crate::call::{
    CallEnd, CallOptions, CallResult, CallRunner, DetachedTo, detach_marker, end_leftovers,
};
use crate::output::{OutputSink, OutputSlice, RawLog};
use crate::pty::{
    self, ProcessControl, ProcessExit, ProcessStream, PtyError, SpawnSpec, SpawnedProcess, TermSize,
};
use crate::registry::BashDetachRegistry;
use crate::screen::{DEFAULT_SCROLLBACK_ROWS, Screen, ScreenSnapshot};
use tasks::{TaskBook, TaskError};

/// Events a core reports.
const EVENT_BUFFER: usize = 1024;

/// Settings of a core.
#[derive(Clone, Debug)]
pub struct CoreConfig {
    /// Where call logs go; `None` for the user's state dir.
    pub log_dir: Option<PathBuf>,
    pub default_size: TermSize,
    pub scrollback_rows: usize,
    pub kill_grace: Duration,
    pub exit_grace: Duration,
    /// Finished calls kept in the list (each keeps a screen); older ones are forgotten, their
    /// logs stay on disk.
    pub max_finished: usize,
    /// Finished tasks kept, apart from calls: someone may still read a task's output.
    pub max_finished_tasks: usize,
}

/// The longest command: Linux takes no longer single argument (`MAX_ARG_STRLEN`, 32 pages).
pub const MAX_COMMAND_BYTES: usize = 128 * 1024 - 1;

/// Finished calls kept by default.
pub const DEFAULT_MAX_FINISHED: usize = 200;
/// Finished tasks kept by default.
pub const DEFAULT_MAX_FINISHED_TASKS: usize = 1000;
/// Forgotten entries whose logs can still be named.
const MAX_FORGOTTEN: usize = 10_000;
/// Finished entries whose screens keep their cells (colors, history); older ones keep text.
const FINISHED_SCREENS_KEPT: usize = 50;

impl Default for CoreConfig {
    fn default() -> Self {
        Self {
            log_dir: None,
            default_size: TermSize::DEFAULT,
            scrollback_rows: DEFAULT_SCROLLBACK_ROWS,
            kill_grace: pty::DEFAULT_KILL_GRACE,
            exit_grace: crate::call::DEFAULT_EXIT_GRACE,
            max_finished: DEFAULT_MAX_FINISHED,
            max_finished_tasks: DEFAULT_MAX_FINISHED_TASKS,
        }
    }
}

/// A call to start.
#[derive(Clone, Debug, Default)]
pub struct CallRequest {
    /// The call id (an agent's tool-call id); `None` to let the core make one (`c1`, `c2`, …).
    pub id: Option<String>,
    pub command: String,
    /// `None` for oino's own working directory.
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub size: Option<TermSize>,
    /// A title to show instead of the command.
    pub title: Option<String>,
    pub options: CallOptions,
    /// A program (the default) or a person: who reads what it writes.
    pub waiter: pty::Waiter,
}

impl CallRequest {
    #[must_use]
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            ..Self::default()
        }
    }

    /// Runs where, and with what, it would in this process: its folder (unless one is given, a
    /// relative one being taken from here) and its environment, not the server's.
    pub fn from_here(mut self) -> std::io::Result<Self> {
        let here = std::env::current_dir()?;
        self.cwd = Some(match self.cwd {
            Some(cwd) => here.join(cwd),
            None => here,
        });
        self.env = std::env::vars()
            .filter(|(name, _)| name != "OINO_SOCKET")
            .collect();
        Ok(self)
    }
}

/// Whether an entry is still a call (someone waits for it) or a background task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Call,
    Task,
}

/// Where an entry's process stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum EntryState {
    Running,
    Exited { code: i32 },
    Killed { signal: i32 },
}

impl EntryState {
    #[must_use]
    pub fn is_running(self) -> bool {
        self == Self::Running
    }

    /// The status a shell would report for it: the code, or 128 + the signal (0 while running).
    #[must_use]
    pub fn shell_status(self) -> i32 {
        match self {
            Self::Exited { code } => code,
            Self::Killed { signal } => 128 + signal,
            Self::Running => 0,
        }
    }
}

impl From<ProcessExit> for EntryState {
    fn from(exit: ProcessExit) -> Self {
        match exit {
            ProcessExit::Code(code) => Self::Exited { code },
            ProcessExit::Signal(signal) => Self::Killed { signal },
        }
    }
}

/// One call or task, as front ends list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryInfo {
    /// The call id.
    pub id: String,
    pub kind: EntryKind,
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
    pub state: EntryState,
    pub timed_out: bool,
    /// Raw bytes of output readable so far: a boundary, never within a character or a sequence.
    pub bytes: u64,
    /// Raw offset where the task's own output starts (0 for a call).
    pub detach_offset: u64,
    pub log_path: PathBuf,
    /// Why the log could not be written, if it could not.
    pub log_error: Option<String>,
}

impl EntryInfo {
    /// The name shown for the entry: task name, title, or command.
    #[must_use]
    pub fn label(&self) -> &str {
        self.name
            .as_deref()
            .or(self.title.as_deref())
            .unwrap_or(&self.command)
    }
}

/// A page of an entry's whole output, as clean lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPage {
    pub lines: Vec<String>,
    /// The number of the first line (0 is the oldest).
    pub first_line: u64,
    /// Lines between the page's end and the last line (clamped).
    pub lines_back: u64,
    pub total_lines: u64,
}

/// What the core reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum CoreEvent {
    Started {
        id: String,
    },
    /// New output since the entry's last snapshot: a notice, not the bytes.
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
        state: EntryState,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error(transparent)]
    Pty(#[from] PtyError),
    #[error(transparent)]
    Task(#[from] TaskError),
    #[error("no call or task `{0}`: list them with `oino ls`")]
    NotFound(String),
    #[error("call `{0}` is not running: only a running call can be detached")]
    NotRunning(String),
    #[error("`{0}` is already a background task")]
    AlreadyTask(String),
    #[error("a call with id `{0}` already exists: choose another id")]
    DuplicateId(String),
    #[error("the command is empty: give a command to run")]
    EmptyCommand,
    #[error(
        "the command is {0} bytes, more than `bash -c` takes ({MAX_COMMAND_BYTES}): write it to a \
         file and run the file"
    )]
    CommandTooLong(usize),
    #[error("cannot keep a log in {dir}: {message}")]
    Log { dir: PathBuf, message: String },
    #[error("cannot read the log of `{id}`: {message}")]
    ReadLog { id: String, message: String },
    #[error(
        "`{key}` ended and is no longer kept (only the newest {kept} ended ones are): its output \
         is in {}",
        log_path.display()
    )]
    Forgotten {
        key: String,
        kept: usize,
        log_path: PathBuf,
    },
}

/// What kind of failure an error is, as clients decide on it. Sent over the socket beside the
/// message (docs/protocol.md): wire API, never renamed or reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No call or task has that id or name.
    NoSuchEntry,
    /// It ended long ago and is no longer listed; its log is still on disk.
    Forgotten,
    /// A call with that id exists.
    DuplicateId,
    /// A task with that name exists.
    DuplicateName,
    /// The name breaks a rule of names.
    InvalidName,
    /// It is not running (it cannot be detached, or typed into).
    NotRunning,
    /// It is a task already.
    AlreadyTask,
    /// Something is too large (a command, a request).
    TooLarge,
    /// The request cannot be done as asked (bad JSON, a missing field, an empty command, a
    /// missing folder).
    BadRequest,
    /// Client and server speak different protocol versions.
    Version,
    /// The server belongs to another user.
    Forbidden,
    /// The server is out of a resource (file descriptors) for now.
    Busy,
    /// The server could not do it (a PTY, a log).
    Failed,
    /// A code this client does not know (a newer server).
    #[serde(other)]
    Unknown,
}

impl CoreError {
    /// The kind of failure, for clients to decide on.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Pty(PtyError::MissingCwd(_) | PtyError::CwdNotADirectory(_))
            | Self::EmptyCommand => ErrorCode::BadRequest,
            Self::Pty(PtyError::InputClosed) | Self::NotRunning(_) => ErrorCode::NotRunning,
            Self::Pty(PtyError::Open(_) | PtyError::Spawn(_) | PtyError::Resize(_))
            | Self::Log { .. }
            | Self::ReadLog { .. } => ErrorCode::Failed,
            Self::Task(TaskError::DuplicateName(_)) => ErrorCode::DuplicateName,
            Self::Task(TaskError::InvalidName { .. }) => ErrorCode::InvalidName,
            Self::NotFound(_) => ErrorCode::NoSuchEntry,
            Self::Forgotten { .. } => ErrorCode::Forgotten,
            Self::AlreadyTask(_) => ErrorCode::AlreadyTask,
            Self::DuplicateId(_) => ErrorCode::DuplicateId,
            Self::CommandTooLong(_) => ErrorCode::TooLarge,
        }
    }
}

/// A started call: its id, and its result once it ends or is detached.
#[derive(Debug)]
pub struct CallHandle {
    pub id: String,
    result: oneshot::Receiver<CallResult>,
}

impl CallHandle {
    /// Waits for the result.
    pub async fn result(self) -> CallResult {
        // The supervising task always sends; it is gone only if the runtime is shutting down.
        self.result.await.unwrap_or_else(|_| CallResult {
            text: "[oino is shutting down: the call was ended]".into(),
            is_error: true,
            exit: None,
            timed_out: false,
            detached: None,
            full_output_path: None,
            log_error: None,
        })
    }
}

#[derive(Clone, Debug)]
struct TaskStatus {
    task_id: String,
    name: String,
    detached_at: SystemTime,
    detach_offset: u64,
}

#[derive(Clone, Debug)]
struct EntryStatus {
    task: Option<TaskStatus>,
    state: EntryState,
    timed_out: bool,
    ended_at: Option<SystemTime>,
}

struct Entry {
    id: String,
    command: String,
    cwd: PathBuf,
    title: Option<String>,
    started: SystemTime,
    control: ProcessControl,
    sink: Arc<OutputSink>,
    status: watch::Sender<EntryStatus>,
}

impl Entry {
    fn info(&self) -> EntryInfo {
        let status = self.status.borrow().clone();
        EntryInfo {
            id: self.id.clone(),
            kind: if status.task.is_some() {
                EntryKind::Task
            } else {
                EntryKind::Call
            },
            task_id: status.task.as_ref().map(|task| task.task_id.clone()),
            name: status.task.as_ref().map(|task| task.name.clone()),
            title: self.title.clone(),
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            pid: self.control.pid(),
            started_ms: unix_ms(self.started),
            detached_ms: status.task.as_ref().map(|task| unix_ms(task.detached_at)),
            ended_ms: status.ended_at.map(unix_ms),
            state: status.state,
            timed_out: status.timed_out,
            bytes: self.sink.readable(),
            detach_offset: status.task.as_ref().map_or(0, |task| task.detach_offset),
            log_path: self.sink.log_path().to_owned(),
            log_error: self.sink.log_error(),
        }
    }

    fn matches(&self, key: &str) -> bool {
        let status = self.status.borrow();
        self.id == key
            || status
                .task
                .as_ref()
                .is_some_and(|task| task.task_id == key || task.name == key)
    }

    fn is_running(&self) -> bool {
        self.status.borrow().state.is_running()
    }
}

/// Waits until `entry` ends, at most `timeout`; its state then.
async fn wait_for_end(entry: &Entry, timeout: Option<Duration>) -> EntryState {
    let mut status = entry.status.subscribe();
    let ended = async {
        match status.wait_for(|status| !status.state.is_running()).await {
            Ok(status) => status.state,
            Err(_) => EntryState::Running,
        }
    };
    match timeout {
        Some(timeout) => tokio::time::timeout(timeout, ended)
            .await
            .unwrap_or(EntryState::Running),
        None => ended.await,
    }
}

/// What is kept of an entry that left the list: enough to say where its output is.
struct Forgotten {
    id: String,
    task: Option<(String, String)>,
    log_path: PathBuf,
}

#[derive(Default)]
struct CoreState {
    entries: Vec<Arc<Entry>>,
    forgotten: std::collections::VecDeque<Forgotten>,
    next_call_number: u64,
    tasks: TaskBook,
}

struct CoreInner {
    config: CoreConfig,
    log_dir: PathBuf,
    registry: BashDetachRegistry,
    state: Mutex<CoreState>,
    events: broadcast::Sender<CoreEvent>,
    /// Set by [`Core::shutdown`]: calls that end now were ended by it, and say so.
    shutting_down: AtomicBool,
}

impl Drop for CoreInner {
    fn drop(&mut self) {
        // The last safety net (a panic, a forgotten shutdown): no tree outlives its core.
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        for entry in &state.entries {
            if entry.control.tree_alive() {
                entry.control.signal_tree(nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
}

/// The core. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Core {
    inner: Arc<CoreInner>,
}

impl Core {
    /// A new core; fails when no log folder can be made.
    pub fn new(config: CoreConfig) -> Result<Self, CoreError> {
        let log_dir = if let Some(dir) = &config.log_dir {
            std::fs::create_dir_all(dir).map_err(|err| CoreError::Log {
                dir: dir.clone(),
                message: err.to_string(),
            })?;
            dir.clone()
        } else {
            let dir = crate::output::log_dir().map_err(|err| CoreError::Log {
                dir: PathBuf::from("~/.local/state/oino/logs"),
                message: err.to_string(),
            })?;
            // Old logs go, off the caller's path.
            let old = dir.clone();
            let _ = std::thread::Builder::new()
                .name("oino-prune-logs".into())
                .spawn(move || crate::output::prune_logs(&old, crate::output::LOG_RETENTION));
            dir
        };
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Ok(Self {
            inner: Arc::new(CoreInner {
                config,
                log_dir,
                registry: BashDetachRegistry::default(),
                state: Mutex::new(CoreState::default()),
                events,
                shutting_down: AtomicBool::new(false),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, CoreState> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn emit(&self, event: CoreEvent) {
        // No subscriber is not an error.
        let _ = self.inner.events.send(event);
    }

    /// The registry of running calls.
    #[must_use]
    pub fn registry(&self) -> &BashDetachRegistry {
        &self.inner.registry
    }

    #[must_use]
    pub fn config(&self) -> &CoreConfig {
        &self.inner.config
    }

    /// Events from now on. A receiver that lags gets `Lagged` and should list entries again.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<CoreEvent> {
        self.inner.events.subscribe()
    }

    /// Starts a call. Fails before spawning when the cwd is missing or the id is taken.
    pub fn start(&self, request: CallRequest) -> Result<CallHandle, CoreError> {
        if request.command.trim().is_empty() {
            return Err(CoreError::EmptyCommand);
        }
        if request.command.len() > MAX_COMMAND_BYTES {
            return Err(CoreError::CommandTooLong(request.command.len()));
        }
        let cwd = match request.cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir().map_err(|err| {
                CoreError::Pty(PtyError::Spawn(format!("no working directory: {err}")))
            })?,
        };
        pty::check_cwd(&cwd)?;

        let id = self.new_call_id(request.id)?;
        let registration = self.inner.registry.register(&id);
        let size = request.size.unwrap_or(self.inner.config.default_size);
        let sink = Arc::new(self.new_sink(&id, size));
        let process = pty::spawn(&SpawnSpec {
            call_id: id.clone(),
            command: request.command.clone(),
            cwd: cwd.clone(),
            env: request.env,
            size,
            waiter: request.waiter,
        })?;
        let entry = Arc::new(Entry {
            id: id.clone(),
            command: request.command,
            cwd,
            title: request.title,
            started: SystemTime::now(),
            control: process.control.clone(),
            sink: Arc::clone(&sink),
            status: watch::Sender::new(EntryStatus {
                task: None,
                state: EntryState::Running,
                timed_out: false,
                ended_at: None,
            }),
        });
        self.lock().entries.push(Arc::clone(&entry));
        self.emit(CoreEvent::Started { id: id.clone() });

        let runner = CallRunner::new(process, sink, registration, request.options);
        let (result_tx, result) = oneshot::channel();
        let core = self.clone();
        tokio::spawn(async move {
            let result = core.supervise(&entry, runner).await;
            // The waiter may have gone; the result is still in the log.
            let _ = result_tx.send(result);
        });
        Ok(CallHandle { id, result })
    }

    fn new_call_id(&self, wanted: Option<String>) -> Result<String, CoreError> {
        let mut state = self.lock();
        let taken = |state: &CoreState, id: &str| {
            state.entries.iter().any(|entry| entry.id == id) || self.inner.registry.is_running(id)
        };
        match wanted {
            Some(id) if id.is_empty() => Err(CoreError::DuplicateId(id)),
            Some(id) if taken(&state, &id) => Err(CoreError::DuplicateId(id)),
            Some(id) => Ok(id),
            None => loop {
                state.next_call_number += 1;
                let id = format!("c{}", state.next_call_number);
                if !taken(&state, &id) {
                    return Ok(id);
                }
            },
        }
    }

    fn new_sink(&self, id: &str, size: TermSize) -> OutputSink {
        // A log that cannot be made (a full disk) keeps the output in memory and says so: the
        // call still runs, to free space for one.
        let log = RawLog::create(&self.inner.log_dir, id);
        let screen = Screen::new(size, self.inner.config.scrollback_rows);
        let events = self.inner.events.clone();
        let id = id.to_owned();
        OutputSink::new(log, screen, move || {
            let _ = events.send(CoreEvent::OutputChanged { id: id.clone() });
        })
    }

    async fn supervise(&self, entry: &Arc<Entry>, runner: CallRunner) -> CallResult {
        match runner.run().await {
            CallEnd::Finished(mut result) => {
                if let Some(exit) = result.exit {
                    self.mark_ended(entry, exit, result.timed_out);
                }
                if self.inner.shutting_down.load(Ordering::Acquire) {
                    result.is_error = true;
                    result.text.push_str(
                        "\n[oino was stopped (its server or interface quit), which ended the command]",
                    );
                }
                result
            }
            CallEnd::Detached(result) => result,
            CallEnd::TimedOut { detached, timeout } => {
                let reason = format!(
                    "still running after its timeout of {} s",
                    timeout.as_secs_f64()
                );
                let (task_id, name) = self.lock().tasks.allocate_derived(&entry.command);
                entry.status.send_modify(|status| status.timed_out = true);
                self.adopt(entry, &task_id, &name, detached.process);
                CallResult {
                    text: detached.output_so_far + &detach_marker(&task_id, &reason),
                    is_error: false,
                    exit: None,
                    timed_out: true,
                    detached: Some(DetachedTo { task_id, reason }),
                    full_output_path: detached.full_output_path.map(PathBuf::from),
                    log_error: entry.sink.log_error(),
                }
            }
        }
    }

    fn mark_ended(&self, entry: &Entry, exit: ProcessExit, timed_out: bool) {
        let state = EntryState::from(exit);
        entry.control.close_terminal();
        // Before the end is seen: whoever waits for it finds the list bounded already.
        self.forget_oldest_finished(entry);
        entry.status.send_modify(|status| {
            status.state = state;
            status.timed_out |= timed_out;
            status.ended_at = Some(SystemTime::now());
        });
        self.emit(CoreEvent::Ended {
            id: entry.id.clone(),
            state,
        });
    }

    /// Keeps the list, and the memory its screens hold, bounded however many calls end: the
    /// oldest finished calls go past their bound, the oldest finished tasks past theirs.
    /// `ending` counts as finished already.
    fn forget_oldest_finished(&self, ending: &Entry) {
        let mut state = self.lock();
        let is_task = |entry: &Entry| entry.status.borrow().task.is_some();
        let finished = |entry: &Entry| !entry.is_running() || std::ptr::eq(entry, ending);
        let count = |tasks: bool| {
            state
                .entries
                .iter()
                .filter(|entry| finished(entry) && is_task(entry) == tasks)
                .count()
        };
        // The screens of entries that ended longer ago keep only their text.
        let mut ended: Vec<(Option<SystemTime>, &Arc<Entry>)> = state
            .entries
            .iter()
            .filter(|entry| !entry.is_running())
            .map(|entry| (entry.status.borrow().ended_at, entry))
            .collect();
        ended.sort_by_key(|(ended_at, _)| std::cmp::Reverse(*ended_at));
        for (_, entry) in ended
            .into_iter()
            .skip(FINISHED_SCREENS_KEPT.saturating_sub(1))
        {
            entry.sink.retire();
        }
        let config = &self.inner.config;
        let mut excess_calls = count(false).saturating_sub(config.max_finished);
        let mut excess_tasks = count(true).saturating_sub(config.max_finished_tasks);
        if excess_calls == 0 && excess_tasks == 0 {
            return;
        }
        let mut forgotten = Vec::new();
        state.entries.retain(|entry| {
            // The oldest go first: the one ending now is the newest.
            if entry.is_running() {
                return true;
            }
            let excess = if is_task(entry) {
                &mut excess_tasks
            } else {
                &mut excess_calls
            };
            if *excess == 0 {
                return true;
            }
            *excess -= 1;
            forgotten.push(Forgotten {
                id: entry.id.clone(),
                task: entry
                    .status
                    .borrow()
                    .task
                    .as_ref()
                    .map(|task| (task.task_id.clone(), task.name.clone())),
                log_path: entry.sink.log_path().to_owned(),
            });
            false
        });
        for entry in forgotten {
            if let Some((_, name)) = &entry.task {
                state.tasks.release(name);
            }
            state.forgotten.push_back(entry);
        }
        while state.forgotten.len() > MAX_FORGOTTEN {
            state.forgotten.pop_front();
        }
    }

    /// Makes `entry` a task and keeps reading its process.
    fn adopt(&self, entry: &Arc<Entry>, task_id: &str, name: &str, process: SpawnedProcess) {
        // The call stopped consuming at a chunk boundary, and its text covers the output up to
        // the last boundary: the task's own output starts there (with any sequence or character
        // the last chunk left unfinished).
        let detach_offset = entry.sink.readable();
        entry.status.send_modify(|status| {
            status.task = Some(TaskStatus {
                task_id: task_id.to_owned(),
                name: name.to_owned(),
                detached_at: SystemTime::now(),
                detach_offset,
            });
        });
        self.emit(CoreEvent::Detached {
            id: entry.id.clone(),
            task_id: task_id.to_owned(),
            name: name.to_owned(),
        });
        let core = self.clone();
        let entry = Arc::clone(entry);
        let stream = ProcessStream::new(process, self.inner.config.exit_grace);
        tokio::spawn(async move {
            let control = stream.control().clone();
            let exit = tasks::follow(stream, &entry.sink).await;
            end_leftovers(&control, core.inner.config.kill_grace);
            core.mark_ended(&entry, exit, false);
        });
    }

    /// Detaches the running call `key` into a new background task named `name` (or a name
    /// derived from its command). Any front end detaches this way.
    pub async fn detach(
        &self,
        key: &str,
        name: Option<&str>,
        reason: &str,
    ) -> Result<EntryInfo, CoreError> {
        let entry = self.find(key)?;
        if entry.status.borrow().task.is_some() {
            return Err(CoreError::AlreadyTask(key.to_owned()));
        }
        if !self.inner.registry.is_running(&entry.id) {
            return Err(CoreError::NotRunning(key.to_owned()));
        }
        let (task_id, name) = self.lock().tasks.allocate(name, &entry.command)?;
        let core = self.clone();
        let reason = reason.to_owned();
        // Run to the end even if the caller stops waiting: a process handed over must be adopted.
        let adopted = tokio::spawn(async move {
            let detached = core
                .inner
                .registry
                .detach(&entry.id, task_id.clone(), reason)
                .await;
            if let Some(detached) = detached {
                core.adopt(&entry, &task_id, &name, detached.process);
                Ok(entry.info())
            } else {
                core.lock().tasks.release(&name);
                Err(CoreError::NotRunning(entry.id.clone()))
            }
        })
        .await;
        adopted.unwrap_or_else(|_| Err(CoreError::NotRunning(key.to_owned())))
    }

    fn find(&self, key: &str) -> Result<Arc<Entry>, CoreError> {
        let state = self.lock();
        // Call ids first, then task ids and names; the newest wins.
        if let Some(entry) = state
            .entries
            .iter()
            .rev()
            .find(|entry| entry.id == key)
            .or_else(|| state.entries.iter().rev().find(|entry| entry.matches(key)))
        {
            return Ok(Arc::clone(entry));
        }
        let config = &self.inner.config;
        state
            .forgotten
            .iter()
            .rev()
            .find(|entry| {
                entry.id == key
                    || entry
                        .task
                        .as_ref()
                        .is_some_and(|(task_id, name)| task_id == key || name == key)
            })
            .map_or_else(
                || Err(CoreError::NotFound(key.to_owned())),
                |entry| {
                    Err(CoreError::Forgotten {
                        key: key.to_owned(),
                        kept: if entry.task.is_some() {
                            config.max_finished_tasks
                        } else {
                            config.max_finished
                        },
                        log_path: entry.log_path.clone(),
                    })
                },
            )
    }

    /// Every call and task, oldest first.
    #[must_use]
    pub fn entries(&self) -> Vec<EntryInfo> {
        let entries = self.lock().entries.clone();
        entries.iter().map(|entry| entry.info()).collect()
    }

    /// One entry, by call id, task id or task name.
    pub fn entry(&self, key: &str) -> Result<EntryInfo, CoreError> {
        Ok(self.find(key)?.info())
    }

    /// The entry's screen at `size` (resizing its PTY when that differs), scrolled back
    /// `scroll_offset` rows.
    pub fn snapshot(
        &self,
        key: &str,
        size: Option<TermSize>,
        scroll_offset: usize,
    ) -> Result<ScreenSnapshot, CoreError> {
        let entry = self.find(key)?;
        if let Some(size) = size {
            if entry.is_running() {
                entry.control.resize(size)?;
            }
        }
        Ok(entry.sink.snapshot(size, scroll_offset))
    }

    /// The whole output as clean lines, `rows` of them ending `lines_back` lines before the last:
    /// how a front end scrolls through all of history (the log keeps it, not memory).
    pub fn history_page(
        &self,
        key: &str,
        lines_back: u64,
        rows: usize,
    ) -> Result<HistoryPage, CoreError> {
        let entry = self.find(key)?;
        let read_error = |err: std::io::Error| CoreError::ReadLog {
            id: key.to_owned(),
            message: err.to_string(),
        };
        let total = entry.sink.lines();
        let rows_u64 = rows as u64;
        let lines_back = lines_back.min(total.saturating_sub(rows_u64));
        let first = total.saturating_sub(lines_back + rows_u64);
        let (lines, total_lines) = entry.sink.read_lines(first, rows).map_err(read_error)?;
        Ok(HistoryPage {
            lines,
            first_line: first,
            lines_back,
            total_lines,
        })
    }

    /// The line of the whole output nearest to `from`, before it (or after it when `newer`),
    /// whose text `matches`.
    pub fn find_line(
        &self,
        key: &str,
        from: u64,
        newer: bool,
        matches: impl Fn(&str) -> bool,
    ) -> Result<Option<u64>, CoreError> {
        self.find(key)?
            .sink
            .find_line(from, newer, matches)
            .map_err(|err| CoreError::ReadLog {
                id: key.to_owned(),
                message: err.to_string(),
            })
    }

    /// Resizes the entry's PTY and screen.
    pub fn resize(&self, key: &str, size: TermSize) -> Result<(), CoreError> {
        let entry = self.find(key)?;
        if entry.is_running() {
            entry.control.resize(size)?;
        }
        entry.sink.resize(size);
        Ok(())
    }

    /// Clean output from raw offset `since` (default: where a task's own output starts, or the
    /// start of a call), at most about `max_bytes` raw bytes of it. An offset that is not a
    /// boundary is moved to the next one: the slice's `from` says where it starts.
    pub fn output(
        &self,
        key: &str,
        since: Option<u64>,
        max_bytes: usize,
    ) -> Result<OutputSlice, CoreError> {
        let entry = self.find(key)?;
        let from = since.unwrap_or_else(|| {
            entry
                .status
                .borrow()
                .task
                .as_ref()
                .map_or(0, |task| task.detach_offset)
        });
        entry
            .sink
            .read(from, max_bytes)
            .map_err(|err| CoreError::ReadLog {
                id: key.to_owned(),
                message: err.to_string(),
            })
    }

    /// Waits until the entry has more than `offset` raw bytes of output or has ended, or until
    /// `timeout`. Returns whether there is more output.
    pub async fn wait_output(
        &self,
        key: &str,
        offset: u64,
        timeout: Duration,
    ) -> Result<bool, CoreError> {
        let entry = self.find(key)?;
        let mut written = entry.sink.readable_watch();
        let mut status = entry.status.subscribe();
        let wait = async {
            loop {
                if *written.borrow_and_update() > offset {
                    return true;
                }
                if !status.borrow_and_update().state.is_running() {
                    return *written.borrow() > offset;
                }
                tokio::select! {
                    changed = written.changed() => if changed.is_err() { return false },
                    changed = status.changed() => if changed.is_err() { return false },
                }
            }
        };
        Ok(tokio::time::timeout(timeout, wait).await.unwrap_or(false))
    }

    /// Waits until the entry ends, at most `timeout` (`None`: no limit). Returns its state then.
    pub async fn wait(
        &self,
        key: &str,
        timeout: Option<Duration>,
    ) -> Result<EntryState, CoreError> {
        let entry = self.find(key)?;
        Ok(wait_for_end(&entry, timeout).await)
    }

    /// Sends bytes to the entry's terminal input.
    pub async fn write(&self, key: &str, bytes: Vec<u8>) -> Result<(), CoreError> {
        let entry = self.find(key)?;
        entry.control.write(bytes).await?;
        Ok(())
    }

    /// Kills the entry's whole process tree and waits until it has ended. An entry that has
    /// ended is not signalled: its pids may belong to other processes by now.
    pub async fn kill(&self, key: &str) -> Result<EntryState, CoreError> {
        let entry = self.find(key)?;
        let state = entry.status.borrow().state;
        if !state.is_running() {
            return Ok(state);
        }
        entry.control.kill_tree(self.inner.config.kill_grace).await;
        // The runner or task loop sees the exit and the end of file, and records the end (the
        // entry may leave the list then: it is waited on, not looked up again).
        let config = &self.inner.config;
        Ok(wait_for_end(&entry, Some(config.kill_grace + config.exit_grace * 4)).await)
    }

    /// Kills every running tree and waits for them to end.
    pub async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::Release);
        let entries = self.lock().entries.clone();
        let grace = self.inner.config.kill_grace;
        let kills: Vec<_> = entries
            .iter()
            .filter(|entry| !entry.control.is_reaped() && entry.control.tree_alive())
            .map(|entry| {
                let control = entry.control.clone();
                tokio::spawn(async move { control.kill_tree(grace).await })
            })
            .collect();
        for kill in kills {
            let _ = kill.await;
        }
    }

    /// The log folder.
    #[must_use]
    pub fn log_dir(&self) -> &Path {
        &self.inner.log_dir
    }
}
