//! A project's process through its life: it waits for what it comes after, starts, is found
//! ready (a line, a command, an address), is probed while it runs, and is started again by its
//! policy, each step recorded for the lists and said when a person should hear of it.

use std::path::Path;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::status::Phase;
use super::{MAX_BACKOFF_MS, Probe, ProjectProcess, Restart};
use crate::core::entries::{Ending, Entry, Succession};
use crate::core::{CallRequest, Core, CoreError, CoreEvent, EntryState};
use crate::output::{Followed, LineMatcher};
use crate::pty::Waiter;

/// How long a supervisor waits for the new run of a process someone restarted.
const NEW_RUN_WAIT: Duration = Duration::from_secs(15);
/// Output quiet this long lets a ready pattern try the line that is not ended yet (a prompt
/// with no newline), once: not on every write.
const OPEN_LINE_PAUSE: Duration = Duration::from_millis(100);
/// How long a ready watcher lets output gather before it reads again.
const READ_TOGETHER: Duration = Duration::from_millis(20);
/// The longest a probe may take.
const PROBE_TIMEOUT_MAX: Duration = Duration::from_secs(10);
/// How often a project's file is looked at for changes.
const FILE_LOOK: Duration = Duration::from_secs(2);

/// The tasks that watch one run (its readiness, its liveness): ended with it.
struct Watchers(Vec<JoinHandle<()>>);

impl Drop for Watchers {
    fn drop(&mut self) {
        for watcher in &self.0 {
            watcher.abort();
        }
    }
}

/// How the supervision of a process begins.
pub(super) enum FirstRun {
    /// From a run started already (by hand, or by a restart).
    Started(String),
    /// With its first run, once what it comes after is there, in its turn.
    InTurn(Turn),
}

/// A process's turn to start, in its file's order: its first run waits for the one before it
/// to have started (or to wait for others), so that call ids, task ids and starts follow the
/// file. Dropped, it lets the next go.
pub(super) struct Turn {
    /// Closed when the one before has had its turn; `None` for the first.
    before: Option<tokio::sync::oneshot::Receiver<()>>,
    /// Closed (dropped) to let the next go.
    next: Option<tokio::sync::oneshot::Sender<()>>,
}

/// Turns handed out one after the other, each after the one before.
#[derive(Default)]
pub(super) struct Turns {
    last: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Turns {
    /// The next turn.
    pub(super) fn next_turn(&mut self) -> Turn {
        let (next, after) = tokio::sync::oneshot::channel();
        Turn {
            before: self.last.replace(after),
            next: Some(next),
        }
    }
}

impl Turn {
    async fn wait(&mut self) {
        if let Some(before) = self.before.take() {
            // Closed, not sent: the one before is done either way.
            let _ = before.await;
        }
    }

    fn pass(&mut self) {
        self.next.take();
    }
}

impl Core {
    /// Runs one process of the project `file` until its policy lets it end: from a run started
    /// already, else once what it comes after is there (in its turn).
    pub(super) async fn keep_running(
        &self,
        file: &Path,
        process: &ProjectProcess,
        first: FirstRun,
    ) {
        let mut id = match first {
            FirstRun::Started(id) => id,
            FirstRun::InTurn(mut turn) => {
                turn.wait().await;
                // One that waits for others lets the next start meanwhile.
                if !process.after.is_empty() {
                    turn.pass();
                }
                if !self.wait_for_afters(file, process).await {
                    return;
                }
                let Some(id) = self.start_run(file, process, false).await else {
                    return;
                };
                turn.pass();
                id
            }
        };
        let name = &process.name;
        let mut in_a_row = 0;
        let mut backoff = process.backoff_ms;
        loop {
            let started = Instant::now();
            let watchers = self.watch_run(file, process, &id);
            let Ok(state) = self.wait(&id, None).await else {
                return;
            };
            drop(watchers);
            self.update_process(file, name, |run| run.run_ended(state));
            let Ok(entry) = self.find(&id) else {
                return;
            };
            match entry.ending() {
                // Restarted by someone: its new run is followed, as if this one had.
                Ending::Restarting => match new_run_of(&entry).await {
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
                in_a_row = 0;
                backoff = process.backoff_ms;
            }
            if !again || self.ending() {
                return;
            }
            if !self.will_restart(file, process, state, in_a_row, backoff) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(backoff)).await;
            // Killed on purpose while it waited (a crash loop stopped), or oino is ending.
            if entry.ending() != Ending::Itself || self.ending() {
                return;
            }
            backoff = (backoff * 2).clamp(1, MAX_BACKOFF_MS);
            in_a_row += 1;
            match self.start_run(file, process, true).await {
                Some(new) => id = new,
                None => return,
            }
        }
    }

    /// Whether `process`, whose run ended as `state` after `in_a_row` restarts in a row, is
    /// started again after `backoff` ms: it gives up at its limit; either way it is shown and
    /// said.
    fn will_restart(
        &self,
        file: &Path,
        process: &ProjectProcess,
        state: EntryState,
        in_a_row: u32,
        backoff: u64,
    ) -> bool {
        let name = &process.name;
        if in_a_row >= process.restart_limit {
            self.update_process(file, name, |run| run.phase = Phase::GaveUp);
            self.notice(
                file,
                format!(
                    "{name} {state:#}: gave up after {in_a_row} restart{} in a row",
                    if in_a_row == 1 { "" } else { "s" }
                ),
            );
            return false;
        }
        let at_ms = crate::time::now_ms() + backoff;
        self.update_process(file, name, |run| run.phase = Phase::Restarting(at_ms));
        self.notice(
            file,
            format!(
                "{name} {state:#}: restart {}/{} in {}",
                in_a_row + 1,
                process.restart_limit,
                crate::time::format_wait(backoff)
            ),
        );
        true
    }

    pub(super) fn ending(&self) -> bool {
        self.inner
            .shutting_down
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// `name` could not start: it is blocked, and says why (to the list, the notice, the log).
    fn cannot_start(&self, file: &Path, name: &str, err: &CoreError) {
        let why = format!("cannot start: {err}");
        self.update_process(file, name, |run| run.phase = Phase::Blocked(why.clone()));
        self.notice(file, format!("{name} {why}"));
    }

    /// Waits until what `process` comes after is there; `false` when the project is gone. The
    /// list shows it waiting (for whom), or blocked (why) when something it waits for can no
    /// longer be: it stays so until that changes (the other is started again, by hand or `up`).
    async fn wait_for_afters(&self, file: &Path, process: &ProjectProcess) -> bool {
        let Some(mut changes) = self
            .lock()
            .projects
            .get(file)
            .map(|run| run.changes.subscribe())
        else {
            return false;
        };
        let mut said: Option<String> = None;
        loop {
            changes.borrow_and_update();
            let waits = {
                let state = self.lock();
                let Some(run) = state.projects.get(file) else {
                    return false;
                };
                run.waits_of(process)
            };
            let (pending, impossible) = match waits {
                Ok(()) => return true,
                Err(waits) => waits,
            };
            let phase = match &impossible {
                Some(why) => Phase::Blocked(why.clone()),
                None => Phase::Waiting(pending),
            };
            self.set_phase(file, &process.name, phase);
            if impossible.is_some() && impossible != said {
                if let Some(why) = &impossible {
                    self.notice(file, format!("{} is blocked: {why}", process.name));
                }
                said.clone_from(&impossible);
            }
            if changes.changed().await.is_err() {
                return false;
            }
        }
    }

    /// Sets the phase of `name`, telling others only when it changed (a waiter woken by its own
    /// word would loop).
    fn set_phase(&self, file: &Path, name: &str, phase: Phase) {
        let unchanged = self
            .lock()
            .projects
            .get(file)
            .and_then(|run| run.processes.get(name))
            .is_some_and(|run| run.phase == phase);
        if !unchanged {
            self.update_process(file, name, |run| run.phase = phase);
        }
    }

    /// Starts `process` as a call (`again`: a restart, counted) and makes it the task named
    /// after it; its call id. A run started while someone stopped the process is ended at once:
    /// the run is recorded, or found stopped, under the lock a stop takes, so none escapes.
    async fn start_run(
        &self,
        file: &Path,
        process: &ProjectProcess,
        again: bool,
    ) -> Option<String> {
        let mut env = self
            .lock()
            .projects
            .get(file)
            .and_then(|run| run.processes.get(&process.name))
            .map(|run| run.env.clone())
            .unwrap_or_default();
        // Which process it is, for a server that comes after this one dies (`survivors`).
        env.push((
            crate::core::survivors::PROCESS_ENV.to_owned(),
            format!("{}:{}", process.name, file.display()),
        ));
        let handle = match self.start(CallRequest {
            command: process.cmd.clone(),
            cwd: Some(process.cwd.clone()),
            env,
            title: Some(process.name.clone()),
            waiter: Waiter::Person,
            ..CallRequest::default()
        }) {
            Ok(handle) => handle,
            Err(err) => {
                self.cannot_start(file, &process.name, &err);
                return None;
            }
        };
        let id = handle.id.clone();
        tokio::spawn(handle.result());
        // Its readiness is `watch_run`'s to record, as for a run someone restarted.
        let recorded = self.update_process(file, &process.name, |run| {
            if !run.live {
                return false;
            }
            run.runs.push(id.clone());
            run.restarts += u32::from(again);
            run.phase = Phase::Running;
            run.started = true;
            true
        });
        if recorded != Some(true) {
            // From a task of its own: this one is being ended.
            let core = self.clone();
            tokio::spawn(async move { core.kill(&id).await });
            return None;
        }
        let _ = self
            .detach_as(&id, &process.name, "started from its project file")
            .await;
        Some(id)
    }

    /// Watches run `id` of `process`: its readiness (a line, a probe, a timeout), then its
    /// liveness.
    fn watch_run(&self, file: &Path, process: &ProjectProcess, id: &str) -> Watchers {
        let mut watchers = Vec::new();
        if process.ready_at_start() {
            self.update_process(file, &process.name, |run| run.ready = true);
        } else {
            self.set_ready(id, Some(false));
        }
        let core = self.clone();
        let (file, process, id) = (file.to_owned(), process.clone(), id.to_owned());
        watchers.push(tokio::spawn(async move {
            if !process.ready_at_start() {
                let became_ready = core.readiness(&file, &process, &id);
                match process.probes.ready_timeout_ms {
                    Some(ms) => {
                        let limit = Duration::from_millis(ms);
                        if tokio::time::timeout(limit, became_ready).await.is_err() {
                            core.never_ready(&file, &process, limit);
                            return;
                        }
                    }
                    None => became_ready.await,
                }
                core.set_ready(&id, Some(true));
                core.update_process(&file, &process.name, |run| run.ready = true);
            }
            if let Some(alive) = &process.probes.alive {
                core.liveness(&file, &process, &id, alive).await;
            }
        }));
        Watchers(watchers)
    }

    /// Returns once run `id` is ready: a line of its output matched `ready`, or its readiness
    /// probe passed.
    async fn readiness(&self, file: &Path, process: &ProjectProcess, id: &str) {
        if let Some(pattern) = &process.ready {
            let Ok(pattern) = regex::Regex::new(pattern) else {
                return std::future::pending().await;
            };
            self.first_match(id, pattern).await;
            return;
        }
        let Some(probe) = &process.probes.ready else {
            return;
        };
        let interval = Duration::from_millis(process.probes.ready_interval_ms);
        let env = self.env_of(file, &process.name);
        loop {
            if super::probe::once(probe, &process.cwd, &env, probe_timeout(interval))
                .await
                .is_ok()
            {
                return;
            }
            tokio::time::sleep(interval).await;
        }
    }

    /// Returns once a line of `id`'s output matches `pattern`: each line once as it ends, and
    /// the line not ended yet once output pauses (a ready line with no newline still counts).
    async fn first_match(&self, id: &str, pattern: regex::Regex) {
        let mut lines = LineMatcher::new(pattern);
        let mut follower = self.follow(id, 0);
        let mut open_line_tried = true;
        loop {
            let pause = Instant::now() + OPEN_LINE_PAUSE;
            match follower.next(64 * 1024, Some(pause)).await {
                Ok(Followed::Output(slice)) => {
                    if lines.feed(&slice.text).is_some() {
                        return;
                    }
                    open_line_tried = false;
                    // Writes a few bytes at a time are read together, not each on its own.
                    tokio::time::sleep(READ_TOGETHER).await;
                }
                Ok(Followed::TimedOut) if !open_line_tried => {
                    if lines.open_line_match().is_some() {
                        return;
                    }
                    open_line_tried = true;
                }
                Ok(Followed::TimedOut) => {}
                Ok(Followed::Ended) | Err(_) => return std::future::pending().await,
            }
        }
    }

    /// Run `id` of `process` did not become ready in `limit`: those that wait for it are
    /// blocked.
    fn never_ready(&self, file: &Path, process: &ProjectProcess, limit: Duration) {
        self.update_process(file, &process.name, |run| run.never_ready = true);
        let limit = crate::time::format_wait(u64::try_from(limit.as_millis()).unwrap_or(0));
        self.notice(
            file,
            format!("{} never became ready (not in {limit})", process.name),
        );
    }

    /// Probes run `id` while it runs; after `alive_failures` failures in a row its tree is
    /// ended, and its restart policy starts it again.
    async fn liveness(&self, file: &Path, process: &ProjectProcess, id: &str, alive: &Probe) {
        let interval = Duration::from_millis(process.probes.alive_interval_ms);
        let env = self.env_of(file, &process.name);
        let mut failures = 0;
        loop {
            tokio::time::sleep(interval).await;
            match super::probe::once(alive, &process.cwd, &env, probe_timeout(interval)).await {
                Ok(()) => failures = 0,
                Err(why) => {
                    failures += 1;
                    if failures >= process.probes.alive_failures {
                        self.notice(
                            file,
                            format!(
                                "{} stopped answering ({why}, {failures} times in a row): ended \
                                 for its restart policy",
                                process.name
                            ),
                        );
                        if let Ok(entry) = self.find(id) {
                            entry.control.kill_tree(self.inner.config.kill_grace).await;
                        }
                        return;
                    }
                }
            }
        }
    }

    /// The environment `name` of the project `file` runs in.
    fn env_of(&self, file: &Path, name: &str) -> Vec<(String, String)> {
        self.lock()
            .projects
            .get(file)
            .and_then(|run| run.processes.get(name))
            .map(|run| run.env.clone())
            .unwrap_or_default()
    }

    /// Records whether `id` is ready (`None`: it has no ready pattern), for the list to show.
    pub(in crate::core) fn set_ready(&self, id: &str, ready: Option<bool>) {
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

    /// Looks at the project `file` (and its environment files) while any of its processes is
    /// kept: when it changed, the processes whose definition differs are marked changed, and
    /// a notice says so.
    pub(super) fn watch_project_file(&self, file: &Path) {
        let core = self.clone();
        let file = file.to_owned();
        tokio::spawn(async move {
            let mut seen = core.fingerprint(&file);
            loop {
                tokio::time::sleep(FILE_LOOK).await;
                let live = {
                    let mut state = core.lock();
                    match state.projects.get_mut(&file) {
                        Some(run) if run.is_live() => true,
                        Some(run) => {
                            run.watched = false;
                            false
                        }
                        None => false,
                    }
                };
                if !live {
                    return;
                }
                let now = core.fingerprint(&file);
                if now != seen {
                    seen = now;
                    core.file_changed(&file);
                }
            }
        });
    }

    /// What tells that the project `file` or an environment file of it changed.
    fn fingerprint(&self, file: &Path) -> Vec<Option<(std::time::SystemTime, u64, u64)>> {
        use std::os::unix::fs::MetadataExt;
        // Each once: the processes of a project mostly share their environment files.
        let mut files = std::collections::BTreeSet::from([
            file.to_owned(),
            file.with_file_name(super::DOT_ENV),
        ]);
        if let Some(run) = self.lock().projects.get(file) {
            for process in &run.project.processes {
                files.extend(process.env_files.iter().cloned());
            }
        }
        files
            .iter()
            .map(|path| {
                let meta = std::fs::metadata(path).ok()?;
                Some((meta.modified().ok()?, meta.len(), meta.ino()))
            })
            .collect()
    }

    /// The project `file` changed on disk: what differs from what runs is marked, and said.
    fn file_changed(&self, file: &Path) {
        let Some(env) = self.lock().projects.get(file).map(|run| run.env.clone()) else {
            return;
        };
        let known = |name: &str| super::env::value_of(&env, name, &|_| None);
        let shown = file.file_name().map_or_else(
            || file.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        );
        let project = match super::Project::load_in(file, &known) {
            Ok(project) => project,
            Err(err) => {
                self.notice(
                    file,
                    format!("{shown} changed, and cannot be applied as it is: {err}"),
                );
                return;
            }
        };
        let mut said = Vec::new();
        {
            let mut state = self.lock();
            let Some(run) = state.projects.get_mut(file) else {
                return;
            };
            run.changed.clear();
            for process in &project.processes {
                match run.processes.get(&process.name) {
                    Some(now) if now.live => {
                        let change = now
                            .definition
                            .as_ref()
                            .and_then(|running| process.change_from(running));
                        if let Some(change) = change {
                            run.changed.insert(process.name.clone(), change);
                            said.push(format!("{} ({change})", process.name));
                        }
                    }
                    Some(_) => {}
                    None => said.push(format!("{} (added)", process.name)),
                }
            }
            for (name, now) in &run.processes {
                if now.live && project.process(name).is_none() {
                    said.push(format!("{name} (removed)"));
                }
            }
            run.bump();
        }
        let notice = if said.is_empty() {
            format!("{shown} changed: nothing that runs differs")
        } else {
            format!(
                "{shown} changed: {}; apply it with `oino up`",
                said.join(", ")
            )
        };
        self.notice(file, notice);
    }
}

/// How long a probe tried every `interval` may take.
fn probe_timeout(interval: Duration) -> Duration {
    interval.clamp(Duration::from_secs(1), PROBE_TIMEOUT_MAX)
}

/// The run that a restart of `old` started, once it has; `None` if it could not start.
async fn new_run_of(old: &Entry) -> Option<String> {
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
