//! Projects: the processes of a project file, each run as a task named after it, started once
//! those it waits for are ready, and started again by its restart policy (with a backoff that
//! doubles, up to a limit). The core keeps them, so a project goes on when the interface that
//! started it quits, and a second interface in that folder finds it running instead of starting
//! it twice.

mod file;

pub use file::{
    DEFAULT_BACKOFF_MS, DEFAULT_RESTART_LIMIT, FileError, MAX_BACKOFF_MS, PROCFILE, PROJECT_FILE,
    Project, ProjectError, ProjectProcess, Restart,
};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::entries::{Ending, Entry, Succession};
use super::{CallRequest, Core, CoreError, CoreEvent, EntryState};
use crate::output::{Followed, LineMatcher};
use crate::pty::Waiter;

/// How a project's start went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectStarted {
    /// Processes started now (in start order; those waiting for others start when they are ready).
    pub started: Vec<String>,
    /// Processes running already, left as they were.
    pub running: Vec<String>,
    /// Processes that do not start by themselves (`autostart = false`).
    pub not_started: Vec<String>,
}

/// How a project's stop went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectStopped {
    /// Processes stopped now, in the order they were (each before those it waits for).
    pub stopped: Vec<String>,
    /// Processes asked for that were not running.
    pub not_running: Vec<String>,
}

/// A running project: whether each of its processes is supervised, and whether it is ready.
#[derive(Debug, Default)]
pub(super) struct ProjectRun {
    ready: HashMap<String, watch::Sender<bool>>,
    /// Processes whose supervision goes on.
    live: HashMap<String, bool>,
    /// Each supervisor, to end one that waits (for those it comes after, or its backoff).
    supervisors: HashMap<String, tokio::task::AbortHandle>,
}

/// How long a supervisor waits for the new run of a process someone restarted.
const NEW_RUN_WAIT: Duration = Duration::from_secs(15);

impl Core {
    /// Starts the processes of `project` (or only `only`) that are not running yet: those that
    /// start by themselves, or the one named by `only` whatever its `autostart`. `env` is the
    /// environment they start from (the caller's), each process's own variables over it.
    pub fn start_project(
        &self,
        project: &Project,
        env: &[(String, String)],
        only: Option<&str>,
    ) -> Result<ProjectStarted, CoreError> {
        if let Some(only) = only {
            if !project.processes.iter().any(|process| process.name == only) {
                return Err(no_such_process(project, only));
            }
        }
        project.check().map_err(CoreError::BadProject)?;
        let (outcome, to_start) = self.claim_processes(project, &wanted(project, only));
        for (process, waits_for, ready) in to_start {
            let core = self.clone();
            let file = project.file.clone();
            let env = merged(env, &process.env);
            let name = process.name.clone();
            // Held while the supervisor is recorded: it cannot end before it is.
            let mut state = self.lock();
            let supervisor = tokio::spawn(async move {
                core.keep_running(&process, env, waits_for, &ready).await;
                core.supervision_ended(&file, &process.name);
            });
            if let Some(run) = state.projects.get_mut(&project.file) {
                run.supervisors.insert(name, supervisor.abort_handle());
            }
        }
        Ok(outcome)
    }

    /// The supervision of `name` in the project `file` is over.
    fn supervision_ended(&self, file: &std::path::Path, name: &str) {
        let mut state = self.lock();
        if let Some(run) = state.projects.get_mut(file) {
            run.live.insert(name.to_owned(), false);
            run.supervisors.remove(name);
            if let Some(ready) = run.ready.get(name) {
                ready.send_replace(false);
            }
            if run.live.values().all(|live| !live) {
                state.projects.remove(file);
            }
        }
    }

    /// Stops the processes of `project` (or those named in `only`, and those that wait for
    /// them), each before those it waits for: a running one is killed, one waiting to start is
    /// not started. Nothing else on the server is touched.
    pub async fn stop_project(
        &self,
        project: &Project,
        only: &[String],
    ) -> Result<ProjectStopped, CoreError> {
        if let Some(unknown) = only.iter().find(|name| {
            !project
                .processes
                .iter()
                .any(|process| process.name == **name)
        }) {
            return Err(no_such_process(project, unknown));
        }
        let mut outcome = ProjectStopped::default();
        for name in stop_order(project, only) {
            let supervisor = self.lock().projects.get_mut(&project.file).and_then(|run| {
                let live = run.live.get(&name).copied().unwrap_or(false);
                run.live.insert(name.clone(), false);
                run.supervisors.remove(&name).filter(|_| live)
            });
            // Its supervisor first, so that nothing starts it again; then its run, if it has one.
            if let Some(supervisor) = &supervisor {
                supervisor.abort();
                self.supervision_ended(&project.file, &name);
            }
            let running = self
                .find(&name)
                .is_ok_and(|entry| entry.is_running() && entry.status.borrow().task.is_some());
            if running {
                self.kill(&name).await?;
            }
            if running || supervisor.is_some() {
                outcome.stopped.push(name);
            } else {
                outcome.not_running.push(name);
            }
        }
        Ok(outcome)
    }

    /// Marks the `wanted` processes that are not supervised yet as supervised, under one lock
    /// (of two starts of a project, one starts each process): what it comes to, and for each
    /// process to start, the readiness of those it waits for and its own.
    fn claim_processes(
        &self,
        project: &Project,
        wanted: &[&str],
    ) -> (ProjectStarted, Vec<ToStart>) {
        let mut outcome = ProjectStarted::default();
        let mut state = self.lock();
        let run = state.projects.entry(project.file.clone()).or_default();
        // Each process has its readiness, for those that wait for it, before any starts.
        for process in &project.processes {
            run.ready
                .entry(process.name.clone())
                .or_insert_with(|| watch::Sender::new(false));
        }
        let mut to_start = Vec::new();
        for process in &project.processes {
            let is_live = run.live.get(&process.name).copied().unwrap_or(false);
            let is_wanted = wanted.contains(&process.name.as_str());
            if is_live {
                if is_wanted {
                    outcome.running.push(process.name.clone());
                }
            } else if is_wanted {
                run.live.insert(process.name.clone(), true);
                outcome.started.push(process.name.clone());
                let waits_for: Vec<watch::Receiver<bool>> = process
                    .after
                    .iter()
                    .filter_map(|name| run.ready.get(name).map(watch::Sender::subscribe))
                    .collect();
                let ready = run.ready[&process.name].clone();
                to_start.push((process.clone(), waits_for, ready));
            } else {
                outcome.not_started.push(process.name.clone());
            }
        }
        (outcome, to_start)
    }

    /// The processes of the project `file` kept running now (started, or waiting to start
    /// again), by name.
    #[must_use]
    pub fn project_running(&self, file: &std::path::Path) -> Vec<String> {
        let state = self.lock();
        let mut names: Vec<String> = state
            .projects
            .get(file)
            .map(|run| {
                run.live
                    .iter()
                    .filter(|(_, live)| **live)
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Runs one process of a project until its policy lets it end.
    async fn keep_running(
        &self,
        process: &ProjectProcess,
        env: Vec<(String, String)>,
        waits_for: Vec<watch::Receiver<bool>>,
        ready: &watch::Sender<bool>,
    ) {
        for mut other in waits_for {
            if other.wait_for(|ready| *ready).await.is_err() {
                return;
            }
        }
        let pattern = process
            .ready
            .as_deref()
            .and_then(|pattern| regex::Regex::new(pattern).ok());
        let Some(mut id) = self.start_process(process, env).await else {
            return;
        };
        let mut restarts = 0;
        let mut backoff = process.backoff_ms;
        loop {
            let started = Instant::now();
            let watcher = self.watch_ready(&id, pattern.as_ref(), ready);
            let Ok(state) = self.wait(&id, None).await else {
                return;
            };
            if let Some(watcher) = watcher {
                watcher.abort();
            }
            ready.send_replace(false);
            let Ok(entry) = self.find(&id) else {
                return;
            };
            match entry.ending() {
                // Restarted by someone: its new run is followed, as if this one had.
                Ending::Restarting => match self.new_run_of(&entry).await {
                    Some(new) => {
                        id = new;
                        continue;
                    }
                    None => return,
                },
                Ending::Stopped => return,
                Ending::Itself => {}
            }
            let again = !matches!(
                (process.restart, state),
                (Restart::Never, _) | (Restart::OnFailure, EntryState::Exited { code: 0 })
            );
            // A process that ran a while starts over with its first backoff and its limit.
            if started.elapsed() > Duration::from_millis(MAX_BACKOFF_MS) {
                restarts = 0;
                backoff = process.backoff_ms;
            }
            if !again || restarts >= process.restart_limit || self.ending() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(backoff)).await;
            // Killed on purpose while it waited (a crash loop stopped), or oino is ending.
            if entry.ending() != Ending::Itself || self.ending() {
                return;
            }
            backoff = (backoff * 2).clamp(1, MAX_BACKOFF_MS);
            restarts += 1;
            match self.restart(&id, None).await {
                Ok(entry) => id = entry.id,
                Err(_) => return,
            }
        }
    }

    fn ending(&self) -> bool {
        self.inner.shutting_down.load(Ordering::Acquire)
    }

    /// The run that a restart of `old` started, once it has; `None` if it could not start.
    async fn new_run_of(&self, old: &Entry) -> Option<String> {
        let mut successor = old.successor.subscribe();
        let done = tokio::time::timeout(
            NEW_RUN_WAIT,
            successor.wait_for(|succession| *succession != Succession::Pending),
        )
        .await
        .ok()?
        .ok()?
        .clone();
        match done {
            Succession::Started(id) => Some(id),
            Succession::Pending | Succession::Failed => None,
        }
    }

    /// Starts `process` as a call and makes it the task named after it; its call id.
    async fn start_process(
        &self,
        process: &ProjectProcess,
        env: Vec<(String, String)>,
    ) -> Option<String> {
        let handle = self
            .start(CallRequest {
                command: process.cmd.clone(),
                cwd: Some(process.cwd.clone()),
                env,
                title: Some(process.name.clone()),
                waiter: Waiter::Person,
                ..CallRequest::default()
            })
            .ok()?;
        let id = handle.id.clone();
        tokio::spawn(handle.result());
        if process.ready.is_some() {
            self.set_ready(&id, Some(false));
        }
        let _ = self
            .detach_as(&id, &process.name, "started from its project file")
            .await;
        Some(id)
    }

    /// Marks `id` ready once a line of its output matches `pattern` (at once without one), and
    /// tells those that wait for it.
    fn watch_ready(
        &self,
        id: &str,
        pattern: Option<&regex::Regex>,
        ready: &watch::Sender<bool>,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let Some(pattern) = pattern else {
            ready.send_replace(true);
            return None;
        };
        self.set_ready(id, Some(false));
        let core = self.clone();
        let id = id.to_owned();
        let pattern = pattern.clone();
        let ready = ready.clone();
        Some(tokio::spawn(async move {
            let mut lines = LineMatcher::new(pattern);
            let mut follower = core.follow(&id, 0);
            // A ready line counts as soon as it is written, ended or not.
            while let Ok(Followed::Output(slice)) = follower.next(64 * 1024, None).await {
                if lines.feed(&slice.text).is_some() || lines.open_line_match().is_some() {
                    core.set_ready(&id, Some(true));
                    ready.send_replace(true);
                    return;
                }
            }
        }))
    }

    /// Records whether `id` is ready (`None`: it has no ready pattern), for the list to show.
    pub(super) fn set_ready(&self, id: &str, ready: Option<bool>) {
        let Ok(entry) = self.find(id) else {
            return;
        };
        let changed = entry.status.send_if_modified(|status| {
            let changed = status.ready != ready;
            status.ready = ready;
            changed
        });
        if changed {
            self.emit(CoreEvent::Ready {
                id: entry.id.clone(),
                ready,
            });
        }
    }
}

/// The error for `name`, which is no process of `project`.
fn no_such_process(project: &Project, name: &str) -> CoreError {
    CoreError::NoSuchProcess {
        name: name.to_owned(),
        file: project.file.clone(),
        names: project
            .processes
            .iter()
            .map(|process| process.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// What a stop ends, in the order it ends it: `only` (every process when empty) and those that
/// wait for them, each before any process it waits for.
fn stop_order(project: &Project, only: &[String]) -> Vec<String> {
    let mut chosen: Vec<&str> = if only.is_empty() {
        project
            .processes
            .iter()
            .map(|process| process.name.as_str())
            .collect()
    } else {
        only.iter().map(String::as_str).collect()
    };
    // Those that wait for a chosen one are chosen too.
    let mut next = 0;
    while let Some(name) = chosen.get(next).copied() {
        next += 1;
        for process in &project.processes {
            if process.after.iter().any(|after| after == name)
                && !chosen.contains(&process.name.as_str())
            {
                chosen.push(&process.name);
            }
        }
    }
    // A process comes before those it waits for: repeatedly take one that no chosen process
    // left waits for.
    let mut order = Vec::with_capacity(chosen.len());
    while !chosen.is_empty() {
        let waited_for = |name: &str| {
            project.processes.iter().any(|process| {
                chosen.contains(&process.name.as_str())
                    && process.name != name
                    && process.after.iter().any(|after| after == name)
            })
        };
        let at = chosen
            .iter()
            .position(|name| !waited_for(name))
            // A cycle (the file's check refuses them): in file order.
            .unwrap_or(0);
        order.push(chosen.remove(at).to_owned());
    }
    order
}

/// A process to start: itself, the readiness of those it waits for, and its own.
type ToStart = (
    ProjectProcess,
    Vec<watch::Receiver<bool>>,
    watch::Sender<bool>,
);

/// What starts: the processes asked for (`only`, or those that start by themselves), and those
/// they wait for.
fn wanted<'a>(project: &'a Project, only: Option<&str>) -> Vec<&'a str> {
    let mut wanted: Vec<&str> = project
        .processes
        .iter()
        .filter(|process| only.map_or(process.autostart, |only| only == process.name))
        .map(|process| process.name.as_str())
        .collect();
    let mut next = 0;
    while let Some(name) = wanted.get(next).copied() {
        next += 1;
        let afters = project
            .processes
            .iter()
            .filter(|process| process.name == name)
            .flat_map(|process| process.after.iter());
        for after in afters {
            if !wanted.contains(&after.as_str()) {
                wanted.push(after);
            }
        }
    }
    wanted
}

/// `base` with `over`'s variables set over it.
fn merged(base: &[(String, String)], over: &[(String, String)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = base
        .iter()
        .filter(|(name, _)| !over.iter().any(|(other, _)| other == name))
        .cloned()
        .collect();
    env.extend(over.iter().cloned());
    env
}

/// What the core keeps of running projects, by project file.
pub(super) type Projects = HashMap<PathBuf, ProjectRun>;
