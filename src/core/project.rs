//! Projects: the processes of a project file, each run as a task named after it, started once
//! what it waits for is there, and started again by its restart policy (with a backoff that
//! doubles, up to a limit). The core keeps them, so a project goes on when the interface that
//! started it quits, and a second interface in that folder finds it running instead of starting
//! it twice.
//!
//! Its parts: `model` (a project once read), `file` (reading `oino.toml` and a Procfile), `yaml`,
//! `compose` and `mprocs` (reading `process-compose.yaml` and `mprocs.yaml`), `env` (environment
//! files, `${VAR}`), `order` (start order), `probe` (readiness and liveness checks), `status`
//! (where each process stands, for lists), `supervise` (a process's life).

mod compose;
mod env;
mod file;
mod model;
mod mprocs;
mod order;
mod probe;
mod status;
mod supervise;
mod yaml;

pub use file::{
    DOT_ENV, FileError, MPROCS_FILE, PROCESS_COMPOSE_FILES, PROCFILE, PROJECT_FILE, PROJECT_FILES,
    ProjectError,
};
pub use model::{
    After, Condition, DEFAULT_ALIVE_FAILURES, DEFAULT_ALIVE_INTERVAL_MS, DEFAULT_BACKOFF_MS,
    DEFAULT_READY_INTERVAL_MS, DEFAULT_RESTART_LIMIT, MAX_BACKOFF_MS, MAX_PROCESSES, MAX_WAIT_MS,
    MIN_INTERVAL_MS, Probe, Probes, Project, ProjectProcess, Restart,
};
pub use status::{ProcessPhase, ProjectMark};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use status::{Phase, ProcessRun, ProjectRun};

use super::{Core, CoreError, CoreEvent, EntryInfo};

/// How a project's start went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectStarted {
    /// Processes started now (in start order; those waiting for others start when they are ready).
    pub started: Vec<String>,
    /// Processes running already, left as they were.
    pub running: Vec<String>,
    /// Processes that do not start by themselves (`autostart = false`).
    pub not_started: Vec<String>,
    /// Processes that ran to their end by themselves (exit 0), left so: a second start of the
    /// project starts nothing twice (`oino up`, `oino start NAME` or a restart start them
    /// again; one stopped or crashed is started).
    pub done: Vec<String>,
    /// Processes not started because their run of a server that died still runs (it would
    /// hold their port): each name, and the orphan's id (`c1.left`), which `oino kill` ends.
    pub left_running: Vec<(String, String)>,
}

/// How a project's stop went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectStopped {
    /// Processes stopped now, in the order they were (each before those it waits for).
    pub stopped: Vec<String>,
    /// Processes asked for that were not running.
    pub not_running: Vec<String>,
}

/// What `up` did to one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Did {
    /// Started (it was not running).
    Started,
    /// Stopped and started again: its definition changed.
    Restarted,
    /// Stopped: the file no longer has it.
    Stopped,
    /// Left as it was: it runs as the file says.
    Unchanged,
    /// Not started: it does not start by itself (`autostart = false`).
    NotStarted,
}

impl Did {
    /// Its word: `started`, `restarted`, `stopped`, `unchanged`, `not_started`.
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Restarted => "restarted",
            Self::Stopped => "stopped",
            Self::Unchanged => "unchanged",
            Self::NotStarted => "not_started",
        }
    }
}

/// What `up` did to each process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectApplied {
    /// Each process, in the file's order (then those the file no longer has), and what was done.
    pub processes: Vec<Applied>,
}

/// What `up` did to one process, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The process.
    pub name: String,
    /// What was done.
    pub did: Did,
    /// Why, when there is more to say: "cmd changed", "no longer in the file", "waits for db".
    pub why: Option<String>,
}

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
            if project.process(only).is_none() {
                return Err(no_such_process(project, only));
            }
        }
        project.check().map_err(CoreError::BadProject)?;
        let only: Vec<String> = only.map(str::to_owned).into_iter().collect();
        let again = !only.is_empty();
        Ok(self.claim_and_start(project, env, &wanted(project, &only), again))
    }

    /// Marks the `wanted` processes that are not supervised yet as supervised, under one lock
    /// (of two starts of a project, one starts each process), and starts a supervisor for each;
    /// one that ran and ended only when asked to start `again`.
    fn claim_and_start(
        &self,
        project: &Project,
        env: &[(String, String)],
        wanted: &[&str],
        again: bool,
    ) -> ProjectStarted {
        let mut outcome = ProjectStarted::default();
        let mut guard = self.lock();
        let state = &mut *guard;
        let run = state
            .projects
            .entry(project.file.clone())
            .or_insert_with(|| ProjectRun::new(project.clone(), env.to_vec()));
        if !run.is_live() {
            project.clone_into(&mut run.project);
            env.clone_into(&mut run.env);
            run.changed.clear();
        }
        let watch_file = !run.watched;
        run.watched = true;
        let mut turns = supervise::Turns::default();
        for process in &project.processes {
            let is_wanted = wanted.contains(&process.name.as_str());
            let slot = run.processes.entry(process.name.clone()).or_default();
            if slot.live {
                if is_wanted {
                    outcome.running.push(process.name.clone());
                }
            } else if is_wanted && !again && slot.done() {
                outcome.done.push(process.name.clone());
            } else if is_wanted
                && let Some(orphan) = state
                    .survivors
                    .iter()
                    .find(|survivor| survivor.runs_process(&project.file, &process.name))
            {
                // Started again, it would find its port taken by its earlier run.
                outcome
                    .left_running
                    .push((process.name.clone(), orphan.id.clone()));
            } else if is_wanted {
                slot.begin(process.clone(), merged(env, &process.env));
                outcome.started.push(process.name.clone());
                let core = self.clone();
                let file = project.file.clone();
                let process = process.clone();
                let first = supervise::FirstRun::InTurn(turns.next_turn());
                let supervisor = tokio::spawn(async move {
                    core.keep_running(&file, &process, first).await;
                    core.supervision_ended(&file, &process.name);
                });
                slot.supervisor = Some(supervisor.abort_handle());
            } else {
                outcome.not_started.push(process.name.clone());
            }
        }
        run.bump();
        drop(guard);
        if watch_file {
            self.watch_project_file(&project.file);
        }
        self.emit(CoreEvent::Project {
            file: project.file.clone(),
            notice: None,
        });
        outcome
    }

    /// The supervision of `name` in the project `file` is over.
    fn supervision_ended(&self, file: &Path, name: &str) {
        self.update_process(file, name, ProcessRun::end_supervision);
    }

    /// Changes the record of `name` in the project `file` and tells those that wait for it
    /// (and the lists); `None` when the project or the process is not known.
    fn update_process<R>(
        &self,
        file: &Path,
        name: &str,
        change: impl FnOnce(&mut ProcessRun) -> R,
    ) -> Option<R> {
        let result = {
            let mut state = self.lock();
            let run = state.projects.get_mut(file)?;
            let result = change(run.processes.get_mut(name)?);
            run.bump();
            result
        };
        self.emit(CoreEvent::Project {
            file: file.to_owned(),
            notice: None,
        });
        Some(result)
    }

    /// Says `notice` about the project `file`: to the lists, and to the server's log.
    fn notice(&self, file: &Path, notice: String) {
        self.emit(CoreEvent::Project {
            file: file.to_owned(),
            notice: Some(notice),
        });
    }

    /// Stops the processes of `project` (or those named in `only`, and those that wait for
    /// them), each before those it waits for: a running one is killed, one waiting to start is
    /// not started. Nothing else on the server is touched.
    pub async fn stop_project(
        &self,
        project: &Project,
        only: &[String],
    ) -> Result<ProjectStopped, CoreError> {
        if let Some(unknown) = only.iter().find(|name| project.process(name).is_none()) {
            return Err(no_such_process(project, unknown));
        }
        let mut outcome = ProjectStopped::default();
        for name in stop_order(project, only) {
            if self.stop_process(&project.file, &name).await? {
                outcome.stopped.push(name);
            } else {
                outcome.not_running.push(name);
            }
        }
        Ok(outcome)
    }

    /// Stops `name` of the project `file`: its supervisor first, so that nothing starts it
    /// again, then its run if it has one. Whether there was anything to stop.
    async fn stop_process(&self, file: &Path, name: &str) -> Result<bool, CoreError> {
        let (supervisor, latest) = {
            let mut state = self.lock();
            match state
                .projects
                .get_mut(file)
                .and_then(|run| run.processes.get_mut(name))
            {
                Some(process) => {
                    // Not live from here: a run its supervisor starts now ends at once.
                    let was_live = std::mem::replace(&mut process.live, false);
                    process.stopped = true;
                    let supervisor = process.supervisor.take().filter(|_| was_live);
                    (supervisor, process.runs.last().cloned())
                }
                None => (None, None),
            }
        };
        if let Some(supervisor) = &supervisor {
            supervisor.abort();
            self.update_process(file, name, |process| {
                process.end_supervision();
                process.phase = Phase::Ended;
            });
        }
        // Its newest run, or (a run of an earlier server's start) the task named after it.
        let target = latest
            .filter(|id| self.find(id).is_ok_and(|entry| entry.is_running()))
            .or_else(|| {
                self.find(name)
                    .ok()
                    .filter(|entry| {
                        entry.is_running() && entry.task_name().as_deref() == Some(name)
                    })
                    .map(|entry| entry.id.clone())
            });
        if let Some(id) = &target {
            self.kill(id).await?;
        }
        Ok(target.is_some() || supervisor.is_some())
    }

    /// `oino up`: starts `project` (or `only` and what they wait for) when it does not run;
    /// when it does, applies the file: processes it no longer has are stopped, those whose
    /// `cmd`, `cwd`, `env`, `env_file` or probes changed are started again as the file says,
    /// added ones and those that ended are started. Says what it did to each.
    pub async fn apply_project(
        &self,
        project: &Project,
        env: &[(String, String)],
        only: &[String],
    ) -> Result<ProjectApplied, CoreError> {
        if let Some(unknown) = only.iter().find(|name| project.process(name).is_none()) {
            return Err(no_such_process(project, unknown));
        }
        project.check().map_err(CoreError::BadProject)?;
        let wanted = wanted(project, only);
        let (removed, changed) = self.differences(project, &wanted);
        let mut applied = ProjectApplied::default();
        for name in &removed {
            if self.stop_process(&project.file, name).await? {
                applied.processes.push(Applied {
                    name: name.clone(),
                    did: Did::Stopped,
                    why: Some("no longer in the file".into()),
                });
            }
        }
        if let Some(run) = self.lock().projects.get_mut(&project.file) {
            for name in &removed {
                run.processes.remove(name);
            }
        }
        for name in changed.keys() {
            self.stop_process(&project.file, name).await?;
        }
        if let Some(run) = self.lock().projects.get_mut(&project.file) {
            project.clone_into(&mut run.project);
            env.clone_into(&mut run.env);
            run.changed.clear();
        }
        let started = self.claim_and_start(project, env, &wanted, true);
        let running = self.project_running(&project.file);
        let mut listed: Vec<Applied> = project
            .processes
            .iter()
            .map(|process| {
                let name = &process.name;
                let (did, why) = if let Some(change) = changed.get(name) {
                    (Did::Restarted, Some(format!("{change} changed")))
                } else if started.started.contains(name) {
                    (Did::Started, None)
                } else if let Some((_, orphan)) =
                    started.left_running.iter().find(|(left, _)| left == name)
                {
                    (
                        Did::NotStarted,
                        Some(format!(
                            "its earlier run still runs as {orphan}: `oino kill {orphan}`, then \
                             `oino up`"
                        )),
                    )
                } else if running.contains(name) {
                    (Did::Unchanged, self.why_not_running(&project.file, name))
                } else if process.autostart {
                    (Did::NotStarted, Some("not named".into()))
                } else {
                    (Did::NotStarted, Some("autostart = false".into()))
                };
                Applied {
                    name: name.clone(),
                    did,
                    why,
                }
            })
            .collect();
        listed.append(&mut applied.processes);
        applied.processes = listed;
        Ok(applied)
    }

    /// What applying `project` changes, of the `wanted` processes: the names of running ones
    /// the file no longer has, and the running ones whose definition changed (with what).
    fn differences(
        &self,
        project: &Project,
        wanted: &[&str],
    ) -> (Vec<String>, HashMap<String, &'static str>) {
        let state = self.lock();
        let Some(run) = state.projects.get(&project.file) else {
            return (Vec::new(), HashMap::new());
        };
        let mut removed: Vec<String> = run
            .processes
            .iter()
            .filter(|(name, process)| process.live && project.process(name).is_none())
            .map(|(name, _)| name.clone())
            .collect();
        removed.sort();
        let changed = project
            .processes
            .iter()
            .filter(|process| wanted.contains(&process.name.as_str()))
            .filter_map(|process| {
                let now = run.processes.get(&process.name)?;
                let change = process.change_from(now.definition.as_ref()?)?;
                now.live.then(|| (process.name.clone(), change))
            })
            .collect();
        (removed, changed)
    }

    /// Why `name` of the project `file` is kept but not running, when it waits or is blocked.
    fn why_not_running(&self, file: &Path, name: &str) -> Option<String> {
        let state = self.lock();
        match &state.projects.get(file)?.processes.get(name)?.phase {
            Phase::Waiting(names) => Some(format!("waits for {}", names.join(", "))),
            Phase::Blocked(why) => Some(format!("blocked: {why}")),
            _ => None,
        }
    }

    /// The processes of the project `file` kept running now (started, or waiting to start
    /// again), by name.
    #[must_use]
    pub fn project_running(&self, file: &Path) -> Vec<String> {
        let state = self.lock();
        let mut names: Vec<String> = state
            .projects
            .get(file)
            .map(|run| {
                run.processes
                    .iter()
                    .filter(|(_, process)| process.live)
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Marks the runs of projects' processes in `infos`, and lists those that wait or cannot
    /// start.
    /// The runs of each project come last, by project name, in their file's order.
    pub(super) fn mark_projects(&self, infos: &mut Vec<EntryInfo>) {
        let now_ms = crate::time::now_ms();
        let state = self.lock();
        if state.projects.is_empty() {
            return;
        }
        let mut slots: Vec<Option<EntryInfo>> = infos.drain(..).map(Some).collect();
        let at: HashMap<String, usize> = slots
            .iter()
            .enumerate()
            .filter_map(|(index, slot)| Some((slot.as_ref()?.id.clone(), index)))
            .collect();
        let mut projects: Vec<(&PathBuf, &ProjectRun)> = state.projects.iter().collect();
        projects
            .sort_by(|(one, a), (other, b)| (&a.project.name, one).cmp(&(&b.project.name, other)));
        let mut rows = Vec::new();
        for (file, run) in projects {
            run.mark(file, &mut slots, &at, &mut rows, now_ms);
        }
        infos.extend(slots.into_iter().flatten());
        infos.extend(rows);
    }

    /// The project process whose run `id` is, if it is one: its file and name.
    pub(super) fn project_process_of(&self, id: &str) -> Option<(PathBuf, String)> {
        let state = self.lock();
        state.projects.iter().find_map(|(file, run)| {
            run.processes
                .iter()
                .find(|(_, process)| process.runs.iter().any(|run| run == id))
                .map(|(name, _)| (file.clone(), name.clone()))
        })
    }

    /// `old`, a run of a project's process, was started again as `new` (by its supervisor,
    /// or by someone): counted, and supervised again (its restarts in a row counted from zero)
    /// if its supervision had ended.
    pub(super) fn restarted(&self, old: &str, new: &str) {
        let Some((file, name)) = self.project_process_of(old) else {
            return;
        };
        let resumed = self.update_process(&file, &name, |process| {
            process.runs.push(new.to_owned());
            process.restarts += 1;
            process.phase = Phase::Running;
            if process.live {
                return None;
            }
            let definition = process.definition.clone()?;
            let env = process.env.clone();
            process.begin(definition.clone(), env);
            process.started = true;
            Some(definition)
        });
        if let Some(Some(definition)) = resumed {
            let core = self.clone();
            let new = new.to_owned();
            let kept = file.clone();
            let supervisor = tokio::spawn(async move {
                core.keep_running(&kept, &definition, supervise::FirstRun::Started(new))
                    .await;
                core.supervision_ended(&kept, &definition.name);
            });
            self.update_process(&file, &name, |process| {
                if process.live {
                    process.supervisor = Some(supervisor.abort_handle());
                }
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
            if process.after_names().any(|after| after == name)
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
                    && process.after_names().any(|after| after == name)
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

/// What starts: the processes asked for (`only`, or those that start by themselves when it is
/// empty), and those they wait for.
fn wanted<'a>(project: &'a Project, only: &[String]) -> Vec<&'a str> {
    let mut wanted: Vec<&str> = project
        .processes
        .iter()
        .filter(|process| {
            if only.is_empty() {
                process.autostart
            } else {
                only.contains(&process.name)
            }
        })
        .map(|process| process.name.as_str())
        .collect();
    let mut next = 0;
    while let Some(name) = wanted.get(next).copied() {
        next += 1;
        let afters = project
            .process(name)
            .into_iter()
            .flat_map(ProjectProcess::after_names);
        for after in afters {
            if !wanted.contains(&after) {
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
