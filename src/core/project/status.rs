//! Where each process of a running project stands: what it waits for, why it cannot start, its
//! runs and restarts, and what those that wait for it see. The core keeps one [`ProjectRun`] per
//! project file; lists read it to give each project's process one row.

use std::collections::HashMap;
use std::path::Path;

use tokio::sync::watch;

use super::{After, Condition, Project, ProjectProcess};
use crate::core::{EntryInfo, EntryKind, EntryState};

/// How a project's process stands, when its run's state does not say it all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessPhase {
    /// Not started: it waits for these processes.
    Waiting {
        /// The names of those it still waits for.
        waiting_for: Vec<String>,
    },
    /// Not started, and it cannot be as things stand: what it waits for can no longer be.
    Blocked {
        /// Why: "migrate exited 1", "db never became ready".
        reason: String,
    },
    /// Ended: started again once its backoff is over.
    Restarting {
        /// What is left of the backoff, in ms.
        backoff_left_ms: u64,
    },
    /// Ended after as many restarts in a row as its `restart_limit`: left ended.
    GaveUp,
    /// Running, but the file's definition of it is no longer the one it runs.
    Changed {
        /// What changed: `cmd`, `cwd`, `env`, `env_file` or `probe`.
        change: String,
    },
}

/// What a list says of an entry that is a run of a project's process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectMark {
    /// The project's name.
    pub project: String,
    /// Its file.
    pub file: std::path::PathBuf,
    /// The process's name in its file.
    pub process: String,
    /// Which run of it this is, from 1 (0: it has not run).
    pub run: u32,
    /// Whether this is its newest run (earlier ones are listed with `ls --all`).
    pub latest: bool,
    /// How many times it was started again.
    pub restarts: u32,
    /// How it stands beyond its run's state (the newest run only).
    pub phase: Option<ProcessPhase>,
}

/// Where a supervised process is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Phase {
    /// Never started by this project's run.
    #[default]
    Idle,
    /// Waiting for those it comes after.
    Waiting(Vec<String>),
    /// It cannot start: why.
    Blocked(String),
    /// A run of it runs.
    Running,
    /// Ended; started again at this time (ms since the epoch).
    Restarting(u64),
    /// Ended after its restart limit.
    GaveUp,
    /// Ended, not to be started again (its policy, or someone stopped it).
    Ended,
}

/// One process of a running project.
// What those that wait for it see are separate facts, each read on its own by a condition.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Default)]
pub(super) struct ProcessRun {
    pub(super) phase: Phase,
    /// Whether a supervisor keeps it (started, waiting, or between two runs).
    pub(super) live: bool,
    pub(super) supervisor: Option<tokio::task::AbortHandle>,
    /// Its runs' call ids, oldest first.
    pub(super) runs: Vec<String>,
    pub(super) restarts: u32,
    /// The definition its supervision runs, and the environment it starts in.
    pub(super) definition: Option<ProjectProcess>,
    pub(super) env: Vec<(String, String)>,
    /// What those that wait for it see.
    pub(super) started: bool,
    pub(super) ready: bool,
    pub(super) succeeded: bool,
    pub(super) last_end: Option<EntryState>,
    pub(super) never_ready: bool,
    /// Its supervision is over: it will not start again by itself.
    pub(super) over: bool,
    /// Stopped on purpose (`oino down`, `up` removing or changing it): the next start of the
    /// project starts it, whatever its last run did.
    pub(super) stopped: bool,
}

impl ProcessRun {
    /// A new supervision begins: what an earlier one saw is forgotten (its runs and restarts
    /// are kept, for the list).
    pub(super) fn begin(&mut self, definition: ProjectProcess, env: Vec<(String, String)>) {
        self.definition = Some(definition);
        self.env = env;
        self.live = true;
        self.started = false;
        self.ready = false;
        self.succeeded = false;
        self.last_end = None;
        self.never_ready = false;
        self.over = false;
        self.stopped = false;
    }

    /// Whether it ran to its end by itself (exit 0) and no one stopped it since: a one-shot
    /// step that a second start of the project leaves done.
    pub(super) fn done(&self) -> bool {
        !self.live && !self.stopped && self.last_end == Some(EntryState::Exited { code: 0 })
    }

    /// Its supervision ended (it stays as it was shown, unless it was waiting).
    pub(super) fn end_supervision(&mut self) {
        self.live = false;
        self.over = true;
        self.supervisor = None;
        self.ready = false;
        if matches!(
            self.phase,
            Phase::Waiting(_) | Phase::Running | Phase::Restarting(_)
        ) {
            self.phase = Phase::Ended;
        }
    }

    /// A run of it ended as `state`.
    pub(super) fn run_ended(&mut self, state: EntryState) {
        self.ready = false;
        self.never_ready = false;
        self.succeeded |= state == (EntryState::Exited { code: 0 });
        self.last_end = Some(state);
    }

    /// Why `name` (this process) can no longer be what another waits for.
    fn why_over(&self, name: &str) -> String {
        match (&self.phase, self.last_end) {
            (Phase::GaveUp, Some(state)) => {
                format!(
                    "{name} gave up after {} restarts ({state:#})",
                    self.restarts
                )
            }
            (Phase::Blocked(why), _) => format!("{name} cannot start: {why}"),
            (_, Some(state)) => format!("{name} {state:#}"),
            (_, None) => format!("{name} was stopped before it started"),
        }
    }

    /// Whether `after` (naming this process) is met, still to come, or can no longer be.
    pub(super) fn verdict(&self, after: &After) -> Verdict {
        let name = &after.name;
        let met = match after.condition {
            Condition::Ready => self.ready,
            Condition::Started => self.started,
            Condition::Succeeded => self.succeeded,
            Condition::Ended => self.last_end.is_some(),
        };
        if met {
            Verdict::Met
        } else if after.condition == Condition::Ready && self.never_ready {
            Verdict::Impossible(format!("{name} never became ready"))
        } else if self.over {
            Verdict::Impossible(self.why_over(name))
        } else {
            Verdict::Pending
        }
    }
}

/// Whether what a process waits for in another is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Met,
    Pending,
    /// It can no longer be: why.
    Impossible(String),
}

/// A project the core runs.
#[derive(Debug)]
pub(in crate::core) struct ProjectRun {
    /// The project as last started or applied.
    pub(super) project: Project,
    /// The environment its client started it in (`${VAR}` when the file is read again).
    pub(super) env: Vec<(String, String)>,
    pub(super) processes: HashMap<String, ProcessRun>,
    /// Bumped whenever what those that wait see changes.
    pub(super) changes: watch::Sender<u64>,
    /// Processes whose definition in the file differs from the one running, and what differs.
    pub(super) changed: HashMap<String, &'static str>,
    /// When it was started, in ms since the epoch.
    pub(super) started_ms: u64,
    /// Whether something watches its file for changes.
    pub(super) watched: bool,
}

impl ProjectRun {
    pub(super) fn new(project: Project, env: Vec<(String, String)>) -> Self {
        Self {
            project,
            env,
            processes: HashMap::new(),
            changes: watch::Sender::new(0),
            changed: HashMap::new(),
            started_ms: crate::time::now_ms(),
            watched: false,
        }
    }

    /// Tells those that wait that something changed.
    pub(super) fn bump(&self) {
        self.changes.send_modify(|count| *count += 1);
    }

    /// Whether any of its processes is kept.
    pub(super) fn is_live(&self) -> bool {
        self.processes.values().any(|process| process.live)
    }

    /// Where `name`'s waits stand: `Ok(())` when all are met, else those still to come and why
    /// one can no longer be.
    pub(super) fn waits_of(
        &self,
        process: &ProjectProcess,
    ) -> Result<(), (Vec<String>, Option<String>)> {
        let mut pending = Vec::new();
        let mut impossible = None;
        for after in &process.after {
            let verdict = self
                .processes
                .get(&after.name)
                .map_or(Verdict::Pending, |other| other.verdict(after));
            match verdict {
                Verdict::Met => {}
                Verdict::Pending => pending.push(after.name.clone()),
                Verdict::Impossible(why) => {
                    pending.push(after.name.clone());
                    impossible.get_or_insert(why);
                }
            }
        }
        if pending.is_empty() {
            Ok(())
        } else {
            Err((pending, impossible))
        }
    }

    /// Takes the entries that are runs of its processes out of `slots` (found by id through
    /// `at`), marked, into `rows` in the file's order (each process's runs oldest first), with a
    /// row for each process that waits or is blocked before any run of it is listed.
    pub(super) fn mark(
        &self,
        file: &Path,
        slots: &mut [Option<EntryInfo>],
        at: &HashMap<String, usize>,
        rows: &mut Vec<EntryInfo>,
        now_ms: u64,
    ) {
        for process in &self.project.processes {
            let Some(run) = self.processes.get(&process.name) else {
                continue;
            };
            let phase = self.shown_phase(&process.name, run, now_ms);
            let mut listed = false;
            for (index, id) in run.runs.iter().enumerate() {
                let latest = index + 1 == run.runs.len();
                let Some(mut info) = at.get(id).and_then(|&slot| slots[slot].take()) else {
                    continue;
                };
                listed |= latest;
                info.project = Some(ProjectMark {
                    project: self.project.name.clone(),
                    file: file.to_owned(),
                    process: process.name.clone(),
                    run: u32::try_from(index + 1).unwrap_or(u32::MAX),
                    latest,
                    restarts: run.restarts,
                    phase: if latest { phase.clone() } else { None },
                });
                rows.push(info);
            }
            let unstarted = matches!(
                phase,
                Some(ProcessPhase::Waiting { .. } | ProcessPhase::Blocked { .. })
            );
            if unstarted && !listed {
                rows.push(self.unstarted_row(file, process, run, phase));
            }
        }
    }

    /// What a list shows of `name` beyond its run's state.
    fn shown_phase(&self, name: &str, run: &ProcessRun, now_ms: u64) -> Option<ProcessPhase> {
        match &run.phase {
            Phase::Waiting(names) => Some(ProcessPhase::Waiting {
                waiting_for: names.clone(),
            }),
            Phase::Blocked(reason) => Some(ProcessPhase::Blocked {
                reason: reason.clone(),
            }),
            Phase::Restarting(at_ms) => Some(ProcessPhase::Restarting {
                backoff_left_ms: at_ms.saturating_sub(now_ms),
            }),
            Phase::GaveUp => Some(ProcessPhase::GaveUp),
            Phase::Running => self.changed.get(name).map(|change| ProcessPhase::Changed {
                change: (*change).to_owned(),
            }),
            Phase::Idle | Phase::Ended => None,
        }
    }

    /// The row of a process that has no run to show: it waits, or cannot start.
    fn unstarted_row(
        &self,
        file: &Path,
        process: &ProjectProcess,
        run: &ProcessRun,
        phase: Option<ProcessPhase>,
    ) -> EntryInfo {
        EntryInfo {
            id: process.name.clone(),
            kind: EntryKind::Task,
            task_id: None,
            name: Some(process.name.clone()),
            title: None,
            command: process.cmd.clone(),
            cwd: process.cwd.clone(),
            pid: 0,
            started_ms: self.started_ms,
            detached_ms: None,
            ended_ms: None,
            state: run.last_end.unwrap_or(EntryState::NotStarted),
            timed_out: false,
            bytes: 0,
            detach_offset: 0,
            log_path: file.to_owned(),
            log_error: None,
            log_cut: None,
            waiting_for_input: None,
            ready: None,
            project: Some(ProjectMark {
                project: self.project.name.clone(),
                file: file.to_owned(),
                process: process.name.clone(),
                run: 0,
                latest: true,
                restarts: run.restarts,
                phase,
            }),
        }
    }
}
