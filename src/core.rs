//! The core: the one owner of the registry, the running calls, the tasks and their screens.
//!
//! Front ends (the CLI, the interface, the server and the agent bridge) hold a cloneable [`Core`]
//! and get owned values back: [`EntryInfo`] lists, [`ScreenSnapshot`]s, [`OutputSlice`]s, plus a
//! stream of [`CoreEvent`]s. Each call runs in a task of its own (a [`CallRunner`]); a detached
//! call's process is adopted by a task loop that keeps feeding the same log and screen.
//!
//! The entry table is a small map behind a mutex that is never held across an await, like the
//! registry's; everything slow (process I/O, kills, waits) happens outside it.
//!
//! Its parts: [`types`] (what front ends send and get), [`error`] (failures and their wire
//! codes), `entries` (the table), [`tasks`] (detaching a call into a task and following it),
//! [`survivors`] (what a server that died left running, found by the next one).

mod entries;
pub mod error;
mod input;
pub mod project;
pub mod settings;
pub(crate) mod survivors;
pub mod tasks;
pub(crate) mod types;

pub use error::{CoreError, ErrorCode, ErrorData};
pub use types::{
    CallRequest, CoreConfig, CoreEvent, DEFAULT_MAX_FINISHED, DEFAULT_MAX_FINISHED_TASKS,
    EntryInfo, EntryKind, EntryState, HistoryPage, Killed, MAX_COMMAND_BYTES, MAX_ID_CHARS,
    variables_not_utf8,
};

use entries::{CoreState, Ending, Entry, EntryStatus, Succession, wait_for_end};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::sync::{broadcast, oneshot, watch};

use crate::call::{CallEnd, CallResult, CallRunner, DetachCause, DetachedTo, detach_marker};
use crate::output::{Follower, Matcher, OutputSink, OutputSlice, OutputSource, RawLog, SearchHit};
use crate::pty::{self, ProcessExit, PtyError, SpawnSpec, Spawner, TermSize};
use crate::registry::BashDetachRegistry;
use crate::screen::{Screen, ScreenSnapshot};

/// Events a core reports.
const EVENT_BUFFER: usize = 1024;
/// How long a detached call's waiter waits for its task to be adopted, at most (it is at once).
const ADOPT_WAIT: Duration = Duration::from_secs(5);

/// A started call: its id, and its result once it ends or is detached.
#[derive(Debug)]
pub struct CallHandle {
    /// The call's id.
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
            ..CallResult::default()
        })
    }
}

struct CoreInner {
    config: CoreConfig,
    /// What starts processes: the system's PTYs, or in tests processes played by hand.
    spawner: Arc<dyn Spawner>,
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
        // One scan of /proc for them all: a thousand ended tasks must not cost a thousand.
        let controls: Vec<_> = state
            .entries
            .iter()
            .map(|entry| entry.control.clone())
            .collect();
        let alive = crate::pty::ProcessControl::alive_trees(&controls);
        for (control, alive) in controls.iter().zip(alive) {
            if alive {
                control.signal_tree(nix::sys::signal::Signal::SIGKILL);
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
        Self::with_spawner(config, Arc::new(pty::SystemSpawner))
    }

    /// A new core whose processes `spawner` starts.
    pub(crate) fn with_spawner(
        config: CoreConfig,
        spawner: Arc<dyn Spawner>,
    ) -> Result<Self, CoreError> {
        let log_dir = if let Some(dir) = &config.log_dir {
            crate::paths::checked_dir(
                dir,
                crate::paths::Folder::Chosen,
                "choose a folder for logs that only you can write to",
            )?;
            dir.clone()
        } else {
            let dir = crate::output::log_dir()?;
            // Old logs go, off the caller's path.
            let old = dir.clone();
            let retention = config.log_retention;
            let _ = std::thread::Builder::new()
                .name("oino-prune-logs".into())
                .spawn(move || crate::output::prune_logs(&old, retention));
            dir
        };
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Ok(Self {
            inner: Arc::new(CoreInner {
                config,
                spawner,
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

    /// Events from now on. A receiver that lags gets `Lagged` and should list entries again.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<CoreEvent> {
        self.inner.events.subscribe()
    }

    /// Starts a call. Fails before spawning (leaving nothing behind) when the command is empty or
    /// too long, the cwd is missing, the id or the task name asked for is malformed or taken, or
    /// the environment is one `execve` would refuse.
    pub fn start(&self, mut request: CallRequest) -> Result<CallHandle, CoreError> {
        if self.inner.shutting_down.load(Ordering::Acquire) {
            return Err(CoreError::ShuttingDown);
        }
        if request.command.trim().is_empty() {
            return Err(CoreError::EmptyCommand);
        }
        if request.command.len() > MAX_COMMAND_BYTES {
            return Err(CoreError::CommandTooLong(request.command.len()));
        }
        let cwd = match request.cwd.take() {
            Some(cwd) => cwd,
            None => std::env::current_dir().map_err(|err| {
                CoreError::Pty(PtyError::Spawn(format!("no working directory: {err}")))
            })?,
        };

        let (id, registration) = self.claim(request.id.take(), request.task_name.as_deref())?;
        let size = request.size.unwrap_or(self.inner.config.default_size);
        let spec = SpawnSpec {
            call_id: id.clone(),
            command: self.command_to_spawn(&mut request, &id),
            cwd: cwd.clone(),
            env: request.env.clone(),
            size,
            waiter: request.waiter,
            owner: self.inner.config.owner.clone(),
        };
        // A refusal leaves nothing behind, not even an empty log; the id goes with the
        // registration, the name is let go.
        let unclaim = |_: &PtyError| self.lock().tasks.unreserve(&id);
        let prepared = pty::prepare(&spec).inspect_err(unclaim)?;
        let sink = Arc::new(self.new_sink(&id, size));
        let process = self.inner.spawner.spawn(prepared).inspect_err(unclaim)?;
        let entry = Arc::new(Entry {
            id: id.clone(),
            command: request.command,
            cwd,
            env: request.env,
            title: request.title,
            started: SystemTime::now(),
            control: process.control.clone(),
            sink: Arc::clone(&sink),
            status: watch::Sender::new(EntryStatus {
                task: None,
                state: EntryState::Running,
                timed_out: false,
                ended_at: None,
                waiting_for_input: None,
                ready: None,
            }),
            on_input: request.options.on_input,
            waiter: request.waiter,
            ending: std::sync::atomic::AtomicU8::new(Ending::Itself as u8),
            successor: watch::Sender::new(Succession::Pending),
            folder_file: request.options.folder_file.clone(),
        });
        if request.background {
            // A task from its first byte: nobody waits for it as a call.
            drop(registration);
            return Ok(self.start_as_task(&entry, request.task_name.as_deref(), process));
        }
        self.lock().entries.push(Arc::clone(&entry));
        self.emit(CoreEvent::Started { id: id.clone() });
        tokio::spawn(self.clone().watch_for_input(Arc::clone(&entry)));

        let runner = CallRunner::new(process, sink, registration, request.options);
        let (result_tx, result) = oneshot::channel();
        let core = self.clone();
        let task_name = request.task_name;
        tokio::spawn(async move {
            let result = core.supervise(&entry, runner, task_name.as_deref()).await;
            // A name kept for a task it did not become is free again.
            core.lock().tasks.unreserve(&entry.id);
            // The waiter may have gone; the result is still in the log.
            let _ = result_tx.send(result);
        });
        Ok(CallHandle { id, result })
    }

    /// The new call's id (`wanted`, or the next `cN`), registered, and the task name it asks
    /// for kept for it: all under one lock, so that of two starts wanting one id or one name,
    /// exactly one gets it.
    fn claim(
        &self,
        wanted: Option<String>,
        task_name: Option<&str>,
    ) -> Result<(String, crate::registry::Registered), CoreError> {
        let mut state = self.lock();
        // One set of keys: a call id is no task's id or name, a task's name no call's id.
        let taken = |state: &CoreState, id: &str| {
            state.entries.iter().any(|entry| entry.id == id)
                || self.inner.registry.is_running(id)
                || state.tasks.is_taken(id)
                || state.survivors.iter().any(|survivor| survivor.id == id)
        };
        let id = match wanted {
            Some(id) if !types::is_valid_id(&id) => return Err(CoreError::InvalidId(id)),
            Some(id) if tasks::TaskBook::looks_like_task_id(&id) => {
                return Err(CoreError::TaskLikeId(id));
            }
            Some(id) if taken(&state, &id) => return Err(CoreError::DuplicateId(id)),
            Some(id) => id,
            None => loop {
                state.next_call_number += 1;
                let id = format!("c{}", state.next_call_number);
                if !taken(&state, &id) {
                    break id;
                }
            },
        };
        if let Some(name) = task_name {
            tasks::validate_name(name)?;
            let call_id = name == id
                || state.entries.iter().any(|entry| entry.id == name)
                || self.inner.registry.is_running(name);
            if call_id {
                return Err(tasks::TaskError::DuplicateName(name.to_owned()).into());
            }
            state.tasks.reserve(name, &id)?;
        }
        let registration = self.inner.registry.register(&id);
        Ok((id, registration))
    }

    fn new_sink(&self, id: &str, size: TermSize) -> OutputSink {
        // A log that cannot be made (a full disk) keeps the output in memory and says so: the
        // call still runs, to free space for one.
        let dir = &self.inner.log_dir;
        let log = match self.log_dir_again() {
            Ok(()) => RawLog::create(dir, id),
            Err(why) => RawLog::in_memory(dir, id, why.to_string()),
        }
        .capped(self.inner.config.log_cap);
        let screen = Screen::new(size, self.inner.config.scrollback_rows);
        let events = self.inner.events.clone();
        let id = id.to_owned();
        OutputSink::new(log, screen, move || {
            let _ = events.send(CoreEvent::OutputChanged { id: id.clone() });
        })
    }

    /// The log folder, made again when it was removed meanwhile (a cleaner of /tmp) with the
    /// same checks as at the start: oino's own folders private and the user's from the state
    /// folder down (another user may have made the parent again first), a chosen one the
    /// user's.
    fn log_dir_again(&self) -> Result<(), crate::paths::UnsafePath> {
        if self.inner.log_dir.is_dir() {
            return Ok(());
        }
        match &self.inner.config.log_dir {
            Some(dir) => crate::paths::checked_dir(
                dir,
                crate::paths::Folder::Chosen,
                "choose a folder for logs that only you can write to",
            ),
            None => crate::output::log_dir().map(drop),
        }
    }

    async fn supervise(
        &self,
        entry: &Arc<Entry>,
        runner: CallRunner,
        task_name: Option<&str>,
    ) -> CallResult {
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
            CallEnd::Detached(result) => {
                // The detach adopts the process as a task; its waiter hears of the task once it
                // can be found by its id.
                let mut status = entry.status.subscribe();
                let adopted = status.wait_for(|status| status.task.is_some());
                let _ = tokio::time::timeout(ADOPT_WAIT, adopted).await;
                result
            }
            CallEnd::TimedOut {
                detached,
                timeout,
                omitted_from,
            } => {
                let reason = format!(
                    "still running after its timeout of {} s",
                    timeout.as_secs_f64()
                );
                let (task_id, name) = self.allocate_task(entry, task_name);
                entry.status.send_modify(|status| status.timed_out = true);
                self.adopt(entry, &task_id, &name, detached.process);
                CallResult {
                    text: detached.output_so_far + &detach_marker(&task_id, &reason),
                    is_error: false,
                    exit: None,
                    timed_out: true,
                    detached: Some(DetachedTo {
                        task_id,
                        reason,
                        cause: DetachCause::Timeout,
                    }),
                    full_output_path: detached.full_output_path.map(PathBuf::from),
                    log_error: entry.sink.log_error(),
                    log_cut: entry.sink.log_cut(),
                    omitted_from,
                    folder: None,
                }
            }
        }
    }

    /// Where the shell of call `id` writes its folder as it ends, when its result says it.
    fn folder_file(&self, id: &str) -> PathBuf {
        self.inner.log_dir.join(format!("{id}.folder"))
    }

    fn mark_ended(&self, entry: &Entry, exit: ProcessExit, timed_out: bool) {
        let state = EntryState::from(exit);
        // A call detached before its shell ended wrote its folder for no one (a call's runner
        // read and removed its own).
        if let Some(file) = entry
            .folder_file
            .as_ref()
            .filter(|_| entry.task_name().is_some())
        {
            let _ = std::fs::remove_file(file);
        }
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
        if let Some(survivor) = state.survivors.iter().find(|survivor| survivor.id == key) {
            return Err(CoreError::Orphaned {
                key: key.to_owned(),
                server_pid: survivor.server_pid,
            });
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
        let (entries, survivors) = {
            let mut state = self.lock();
            // Survivors that ended by themselves have nothing left to show.
            state.survivors.retain(|survivor| {
                !matches!(survivor.info().state, EntryState::Orphaned { .. }) || survivor.is_alive()
            });
            (state.entries.clone(), state.survivors.clone())
        };
        let mut infos: Vec<EntryInfo> = survivors
            .iter()
            .map(survivors::Survivor::info)
            .chain(entries.iter().map(|entry| entry.info()))
            .collect();
        self.mark_projects(&mut infos);
        infos
    }

    /// One entry, by call id, task id or task name.
    pub fn entry(&self, key: &str) -> Result<EntryInfo, CoreError> {
        match self.find(key) {
            Ok(entry) => {
                let mut infos = vec![entry.info()];
                self.mark_projects(&mut infos);
                Ok(infos
                    .into_iter()
                    .find(|info| info.id == entry.id)
                    .unwrap_or_else(|| entry.info()))
            }
            Err(CoreError::Orphaned { .. }) => self
                .lock()
                .survivors
                .iter()
                .find(|survivor| survivor.id == key)
                .map(survivors::Survivor::info)
                .ok_or_else(|| CoreError::NotFound(key.to_owned())),
            Err(err) => Err(err),
        }
    }

    /// Lists what the dead servers of this one's socket (`key`) left running (see
    /// [`survivors`]); returns how many calls they were.
    #[allow(clippy::must_use_candidate)] // Adopting is the point; the count is for the log.
    pub(crate) fn adopt_survivors(&self, key: &str) -> usize {
        let found = survivors::find(key);
        let count = found.len();
        for survivor in &found {
            self.emit(CoreEvent::Started {
                id: survivor.id.clone(),
            });
        }
        self.lock().survivors.extend(found);
        count
    }

    /// The entry's screen at `size` (resizing its PTY when that differs), scrolled back
    /// `scroll_offset` rows; an ended entry's at another size than it ended at, its last lines.
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
            } else if size != entry.sink.size() && scroll_offset == 0 {
                // Its program cannot draw its screen again at another size (a split closed, a
                // zoom): its last lines from the log fill it, as many as it has rows.
                let first = entry.sink.lines().saturating_sub(u64::from(size.rows));
                if let Ok((lines, _)) = entry.sink.read_lines(first, usize::from(size.rows)) {
                    return Ok(ScreenSnapshot::from_lines(size, &lines, 0));
                }
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
    /// that `pattern` matches, and how many lines it matches. The log is read on a thread of
    /// its own: a long one takes a while.
    pub async fn find_line(
        &self,
        key: &str,
        from: u64,
        newer: bool,
        pattern: Matcher,
    ) -> Result<SearchHit, CoreError> {
        let sink = Arc::clone(&self.find(key)?.sink);
        let read_error = |message: String| CoreError::ReadLog {
            id: key.to_owned(),
            message,
        };
        tokio::task::spawn_blocking(move || sink.find_line(from, newer, &pattern))
            .await
            .map_err(|err| read_error(err.to_string()))?
            .map_err(|err| read_error(err.to_string()))
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

    /// Follows the output of entry `key` from raw offset `from`.
    #[must_use]
    pub fn follow(&self, key: &str, from: u64) -> Follower<CoreOutput> {
        let source = CoreOutput {
            core: self.clone(),
            key: key.to_owned(),
        };
        Follower::new(source, from)
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
        // Typed into: whatever it waited for, it has it now (it is looked at again once quiet).
        self.set_waiting(&entry, None);
        Ok(())
    }

    /// Kills the entry's whole process tree and waits until it has ended. An entry that has
    /// ended is not signalled: its pids may belong to other processes by now.
    pub async fn kill(&self, key: &str) -> Result<EntryState, CoreError> {
        Ok(self.kill_counted(key).await?.state)
    }

    /// [`Core::kill`], counting the processes it ended.
    pub async fn kill_counted(&self, key: &str) -> Result<Killed, CoreError> {
        let entry = match self.find(key) {
            Err(CoreError::Orphaned { .. }) => {
                return Ok(Killed {
                    name: key.to_owned(),
                    state: self.kill_survivor(key).await,
                    processes: 1,
                });
            }
            found => found?,
        };
        // Told to its project's supervisor even when it has ended (between two restarts).
        if entry.ending() == Ending::Itself {
            entry.set_ending(Ending::Stopped);
        }
        let name = entry
            .task_name()
            .or_else(|| entry.title.clone())
            .unwrap_or_else(|| entry.id.clone());
        let state = entry.status.borrow().state;
        if !state.is_running() {
            return Ok(Killed {
                name,
                state,
                processes: 0,
            });
        }
        let processes = entry.control.kill_tree(self.inner.config.kill_grace).await;
        // The runner or task loop sees the exit and the end of file, and records the end (the
        // entry may leave the list then: it is waited on, not looked up again).
        let config = &self.inner.config;
        Ok(Killed {
            name,
            state: wait_for_end(&entry, Some(config.kill_grace + config.exit_grace * 4)).await,
            processes,
        })
    }

    /// Ends what a dead server left running as `key`.
    async fn kill_survivor(&self, key: &str) -> EntryState {
        // Killed from a copy, outside the lock; its new state written back.
        let Some(mut survivor) = self
            .lock()
            .survivors
            .iter()
            .find(|survivor| survivor.id == key)
            .cloned()
        else {
            return EntryState::Killed { signal: 9 };
        };
        let state = survivor.kill(self.inner.config.kill_grace).await;
        if let Some(kept) = self.lock().survivors.iter_mut().find(|kept| kept.id == key) {
            *kept = survivor;
        }
        self.emit(CoreEvent::Ended {
            id: key.to_owned(),
            state,
        });
        state
    }

    /// Starts the command of `key` again as a new call, in the same folder and environment, with
    /// the same title, at `size` (else the size it had), ending it first if it still runs. A
    /// task's new call becomes a task of the same name. Nobody waits for its result (as for a call started in
    /// the interface). Returns the new entry.
    pub async fn restart(&self, key: &str, size: Option<TermSize>) -> Result<EntryInfo, CoreError> {
        let entry = self.find(key)?;
        entry.set_ending(Ending::Restarting);
        let restarted = self.start_again(&entry, key, size).await;
        if let Ok(info) = &restarted {
            self.restarted(&entry.id, &info.id);
        }
        // Its project's supervisor follows the new run, or stops when there is none.
        entry.successor.send_replace(match &restarted {
            Ok(info) => Succession::Started(info.id.clone()),
            Err(_) => Succession::Failed,
        });
        restarted
    }

    /// The restart of `entry` once it is marked as restarting: ended, and run again.
    async fn start_again(
        &self,
        entry: &Entry,
        key: &str,
        size: Option<TermSize>,
    ) -> Result<EntryInfo, CoreError> {
        // By its id: `key` (a name) may find a newer run meanwhile.
        if self.kill(&entry.id).await?.is_running() {
            return Err(CoreError::WouldNotEnd(key.to_owned()));
        }
        let handle = self.start(CallRequest {
            command: entry.command.clone(),
            cwd: Some(entry.cwd.clone()),
            env: entry.env.clone(),
            size: Some(size.unwrap_or_else(|| entry.sink.size())),
            title: entry.title.clone(),
            waiter: entry.waiter,
            ..CallRequest::default()
        })?;
        let id = handle.id.clone();
        tokio::spawn(handle.result());
        if let Some(name) = entry.task_name() {
            let reason = format!("restarted from `{key}`");
            if let Ok(info) = self.detach_as(&id, &name, &reason).await {
                return Ok(info);
            }
        }
        self.entry(&id)
    }

    /// Makes call `id`, which nobody waits for, a task named `name` (which an ended run may hold:
    /// it is handed over; when a running task holds it, a name derived from the command).
    pub(super) async fn detach_as(
        &self,
        id: &str,
        name: &str,
        reason: &str,
    ) -> Result<EntryInfo, CoreError> {
        {
            let mut state = self.lock();
            let running_holds_it = state.entries.iter().any(|entry| {
                entry.id != id && entry.is_running() && entry.task_name().as_deref() == Some(name)
            });
            if !running_holds_it {
                state.tasks.release(name);
            }
        }
        match self.detach(id, Some(name), reason).await {
            Err(CoreError::Task(_)) => self.detach(id, None, reason).await,
            // It ended before it could be detached (it exited at once): named all the same, so
            // that its name leads to its newest run.
            Err(CoreError::NotRunning(_)) => match self.name_ended(id, Some(name)).await {
                Err(CoreError::Task(_)) => self.name_ended(id, None).await,
                named => named,
            },
            detached => detached,
        }?;
        // Nobody waited for it as a call: its output is all the task's (`logs` shows it all).
        let entry = self.find(id)?;
        entry.status.send_modify(|status| {
            if let Some(task) = &mut status.task {
                task.detach_offset = 0;
            }
        });
        Ok(entry.info())
    }

    /// Kills every running tree and waits for them to end.
    pub async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::Release);
        let entries = self.lock().entries.clone();
        let grace = self.inner.config.kill_grace;
        let controls: Vec<_> = entries
            .iter()
            .filter(|entry| !entry.control.is_reaped())
            .map(|entry| entry.control.clone())
            .collect();
        crate::pty::ProcessControl::kill_trees(&controls, grace).await;
    }

    /// The log folder.
    #[must_use]
    pub fn log_dir(&self) -> &Path {
        &self.inner.log_dir
    }
}

/// One entry's output as a follower reads it in this process.
pub struct CoreOutput {
    core: Core,
    key: String,
}

impl OutputSource for CoreOutput {
    type Error = CoreError;

    async fn read(&self, from: u64, max_bytes: usize) -> Result<OutputSlice, CoreError> {
        self.core.output(&self.key, Some(from), max_bytes)
    }

    async fn read_on_boundary(
        &self,
        from: u64,
        max_bytes: usize,
    ) -> Result<OutputSlice, CoreError> {
        let entry = self.core.find(&self.key)?;
        entry
            .sink
            .read_from_boundary(from, max_bytes)
            .map_err(|err| CoreError::ReadLog {
                id: self.key.clone(),
                message: err.to_string(),
            })
    }

    async fn wait(&self, offset: u64, timeout: Duration) -> Result<bool, CoreError> {
        self.core.wait_output(&self.key, offset, timeout).await
    }

    async fn running(&self) -> Result<bool, CoreError> {
        Ok(self.core.entry(&self.key)?.state.is_running())
    }
}

#[cfg(test)]
mod tests;
