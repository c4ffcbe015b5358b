//! The entry table: each call or task the core knows, its status as a watch (so that waiters
//! wake when it ends), what is kept of entries that left the list, and the forgetting of the
//! oldest finished ones, which keeps the list and its memory bounded.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use super::tasks::TaskBook;
use super::types::{EntryInfo, EntryKind, EntryState};
use crate::call::InputPolicy;
use crate::output::OutputSink;
use crate::pty::{ProcessControl, Waiter};
use crate::time::unix_ms;

#[derive(Clone, Debug)]
pub(super) struct TaskStatus {
    pub(super) task_id: String,
    pub(super) name: String,
    pub(super) detached_at: SystemTime,
    pub(super) detach_offset: u64,
}

#[derive(Clone, Debug)]
pub(super) struct EntryStatus {
    pub(super) task: Option<TaskStatus>,
    pub(super) state: EntryState,
    pub(super) timed_out: bool,
    pub(super) ended_at: Option<SystemTime>,
    /// The prompt line, while a process of the call waits for someone to type.
    pub(super) waiting_for_input: Option<String>,
    /// For a process of a project with a ready pattern: whether a line matched it yet.
    pub(super) ready: Option<bool>,
}

pub(super) struct Entry {
    pub(super) id: String,
    pub(super) command: String,
    pub(super) cwd: PathBuf,
    /// The environment it was started with (empty: the server's), for a restart.
    pub(super) env: Vec<(String, String)>,
    pub(super) title: Option<String>,
    pub(super) started: SystemTime,
    pub(super) control: ProcessControl,
    pub(super) sink: Arc<OutputSink>,
    pub(super) status: watch::Sender<EntryStatus>,
    /// What its waiter does when it waits for input (a program's call only).
    pub(super) on_input: InputPolicy,
    pub(super) waiter: Waiter,
    /// Why it is being ended, when someone ends it (see [`Ending`]).
    pub(super) ending: std::sync::atomic::AtomicU8,
    /// What a restart of it came to.
    pub(super) successor: watch::Sender<Succession>,
    /// Where its shell writes its folder as it ends, when it was asked to.
    pub(super) folder_file: Option<PathBuf>,
}

/// What a restart of an entry came to, for its project's supervisor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Succession {
    /// Not restarted, or not yet done.
    Pending,
    /// The new run's id.
    Started(String),
    /// The new run could not start.
    Failed,
}

/// Why an entry is ended by someone: kept so that a project's supervisor knows a kill on
/// purpose (never started again) and a restart (whose new run it follows) from a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Ending {
    /// Not ended by anyone (it exits or crashes by itself).
    Itself = 0,
    /// Killed on purpose (`oino kill`, `x`).
    Stopped = 1,
    /// Killed to be started again (`oino restart`, `r`).
    Restarting = 2,
}

impl Entry {
    pub(super) fn set_ending(&self, ending: Ending) {
        self.ending
            .store(ending as u8, std::sync::atomic::Ordering::Release);
    }

    pub(super) fn ending(&self) -> Ending {
        match self.ending.load(std::sync::atomic::Ordering::Acquire) {
            1 => Ending::Stopped,
            2 => Ending::Restarting,
            _ => Ending::Itself,
        }
    }

    /// The name its task gets unless one is asked for.
    pub(super) fn default_name(&self) -> String {
        super::tasks::default_name(self.title.as_deref(), &self.command)
    }

    /// Its task name, if it is a task.
    pub(super) fn task_name(&self) -> Option<String> {
        self.status
            .borrow()
            .task
            .as_ref()
            .map(|task| task.name.clone())
    }
}

impl Entry {
    pub(super) fn info(&self) -> EntryInfo {
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
            log_cut: self.sink.log_cut(),
            waiting_for_input: status.waiting_for_input,
            ready: status.ready,
            project: None,
        }
    }

    pub(super) fn matches(&self, key: &str) -> bool {
        let status = self.status.borrow();
        self.id == key
            || status
                .task
                .as_ref()
                .is_some_and(|task| task.task_id == key || task.name == key)
    }

    pub(super) fn is_running(&self) -> bool {
        self.status.borrow().state.is_running()
    }
}

/// Waits until `entry` ends, at most `timeout`; its state then.
pub(super) async fn wait_for_end(entry: &Entry, timeout: Option<Duration>) -> EntryState {
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
pub(super) struct Forgotten {
    pub(super) id: String,
    pub(super) task: Option<(String, String)>,
    pub(super) log_path: PathBuf,
}

#[derive(Default)]
pub(super) struct CoreState {
    pub(super) entries: Vec<Arc<Entry>>,
    pub(super) forgotten: std::collections::VecDeque<Forgotten>,
    pub(super) next_call_number: u64,
    pub(super) tasks: TaskBook,
    pub(super) projects: super::project::Projects,
    /// What dead servers of this socket left running.
    pub(super) survivors: Vec<super::survivors::Survivor>,
}

/// Forgotten entries whose logs can still be named.
const MAX_FORGOTTEN: usize = 10_000;
/// Finished entries whose screens keep their cells (colors, history); older ones keep text.
const FINISHED_SCREENS_KEPT: usize = 50;

impl super::Core {
    /// Keeps the list, and the memory its screens hold, bounded however many calls end: the
    /// oldest finished calls go past their bound, the oldest finished tasks past theirs.
    /// `ending` counts as finished already.
    pub(super) fn forget_oldest_finished(&self, ending: &Entry) {
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
                // A newer run (a restart) may hold the name now.
                let held = state
                    .entries
                    .iter()
                    .any(|other| other.task_name().as_deref() == Some(name.as_str()));
                if !held {
                    state.tasks.release(name);
                }
            }
            state.forgotten.push_back(entry);
        }
        while state.forgotten.len() > MAX_FORGOTTEN {
            state.forgotten.pop_front();
        }
    }
}
