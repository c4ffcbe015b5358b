//! A project as it travels: its file's processes, as a client read them, and how a start or a
//! stop went.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Travel;
use crate::core::project::{
    After as CoreAfter, Applied as CoreApplied, Condition as CoreCondition, Did as CoreDid,
    Probe as CoreProbe, Probes as CoreProbes, Project as ProjectFile,
    ProjectApplied as CoreProjectApplied, ProjectProcess, ProjectStarted as CoreProjectStarted,
    ProjectStopped as CoreProjectStopped, Restart as CoreRestart,
};

/// How a project's start went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectStarted {
    /// Processes started now (those in `after` of others start once these are ready).
    pub started: Vec<String>,
    /// Processes running already, left as they are.
    pub running: Vec<String>,
    /// Processes not started: `autostart = false`, or not the one `only` names.
    pub not_started: Vec<String>,
    /// Processes that ran to their end by themselves (exit 0), left so: a start without `only`
    /// starts nothing twice.
    #[serde(default)]
    pub done: Vec<String>,
    /// Processes not started because their run of a server that died still runs (it would
    /// hold their port): each name and the orphan's id (`c1.left`), which `kill` ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_running: Vec<LeftRunning>,
}

/// A process whose run of a server that died still runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftRunning {
    /// The process.
    pub name: String,
    /// Its run, listed as orphaned (`c1.left`).
    pub id: String,
}

impl Travel for CoreProjectStarted {
    type Wire = ProjectStarted;
    fn to_wire(self) -> ProjectStarted {
        ProjectStarted {
            started: self.started,
            running: self.running,
            not_started: self.not_started,
            done: self.done,
            left_running: self
                .left_running
                .into_iter()
                .map(|(name, id)| LeftRunning { name, id })
                .collect(),
        }
    }
    fn from_wire(wire: ProjectStarted) -> Self {
        Self {
            started: wire.started,
            running: wire.running,
            not_started: wire.not_started,
            done: wire.done,
            left_running: wire
                .left_running
                .into_iter()
                .map(|left| (left.name, left.id))
                .collect(),
        }
    }
}

/// How a project's stop went: what was stopped, in order, and what was not running.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectStopped {
    /// Processes stopped, in the order they were (each before those it waits for).
    pub stopped: Vec<String>,
    /// Processes asked for that were not running.
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

/// What `up` did to one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Did {
    /// Started (it was not running).
    Started,
    /// Stopped and started again: its definition changed.
    Restarted,
    /// Stopped: the file no longer has it.
    Stopped,
    /// Left as it was.
    Unchanged,
    /// Not started: `autostart = false`.
    NotStarted,
}

/// What `up` did to one process, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The process.
    pub name: String,
    /// What was done.
    pub did: Did,
    /// Why, when there is more to say ("cmd changed").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// What `up` did to each process: `{"processes": [{"name": "web", "did": "restarted", "why":
/// "cmd changed"}]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectApplied {
    /// Each process, in the file's order, then those the file no longer has.
    pub processes: Vec<Applied>,
}

impl Travel for CoreApplied {
    type Wire = Applied;
    fn to_wire(self) -> Applied {
        Applied {
            name: self.name,
            did: match self.did {
                CoreDid::Started => Did::Started,
                CoreDid::Restarted => Did::Restarted,
                CoreDid::Stopped => Did::Stopped,
                CoreDid::Unchanged => Did::Unchanged,
                CoreDid::NotStarted => Did::NotStarted,
            },
            why: self.why,
        }
    }
    fn from_wire(wire: Applied) -> Self {
        Self {
            name: wire.name,
            did: match wire.did {
                Did::Started => CoreDid::Started,
                Did::Restarted => CoreDid::Restarted,
                Did::Stopped => CoreDid::Stopped,
                Did::Unchanged => CoreDid::Unchanged,
                Did::NotStarted => CoreDid::NotStarted,
            },
            why: wire.why,
        }
    }
}

impl Travel for CoreProjectApplied {
    type Wire = ProjectApplied;
    fn to_wire(self) -> ProjectApplied {
        ProjectApplied {
            processes: self.processes.to_wire(),
        }
    }
    fn from_wire(wire: ProjectApplied) -> Self {
        Self {
            processes: Travel::from_wire(wire.processes),
        }
    }
}

/// When a project's process that ended is started again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    /// It stays ended.
    Never,
    /// When it ends other than by exiting 0.
    OnFailure,
    /// Whenever it ends, up to `restart_limit` times in a row.
    Always,
}

/// What a process waits for in one it comes after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// Its ready line or probe passed (started, when it has neither).
    Ready,
    /// Started.
    Started,
    /// Exited 0.
    Succeeded,
    /// Ended, however.
    Ended,
}

/// One process another waits for, and for what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct After {
    /// The process waited for.
    pub name: String,
    /// What is waited for.
    pub condition: Condition,
}

/// A check from outside a process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// A shell command: passes at exit 0.
    Cmd(String),
    /// An `http://` address: passes at a 2xx or 3xx answer.
    Http(String),
}

/// A process's readiness and liveness probes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probes {
    /// Ready once it passes.
    pub ready: Option<Probe>,
    /// Between two readiness tries, in ms.
    pub ready_interval_ms: u64,
    /// Not ready this long after its start: those that wait for it are blocked.
    pub ready_timeout_ms: Option<u64>,
    /// Restarted after `alive_failures` failures in a row.
    pub alive: Option<Probe>,
    /// Between two liveness tries, in ms.
    pub alive_interval_ms: u64,
    /// Liveness failures in a row that restart it.
    pub alive_failures: u32,
}

/// One process of a project file, checked (its folder absolute).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    /// Its name, and the name of the task it runs as.
    pub name: String,
    /// The shell command, run by `bash -c`.
    pub cmd: String,
    /// Its folder, absolute.
    pub cwd: PathBuf,
    /// Variables set for it, over the caller's environment (its environment files' included).
    pub env: Vec<(String, String)>,
    /// The environment files read for it, absolute.
    pub env_files: Vec<PathBuf>,
    /// Whether a start of the project starts it (else only `only` does).
    pub autostart: bool,
    /// When it is started again once it ends.
    pub restart: Restart,
    /// Restarts in a row after which it is left ended (one that ran over 30 s starts the count
    /// over).
    pub restart_limit: u32,
    /// The wait before its first restart, in ms; it doubles with each, up to 30 s.
    pub backoff_ms: u64,
    /// A regular expression: it is ready once a line of its output matches.
    pub ready: Option<String>,
    /// Its probes.
    pub probes: Probes,
    /// Processes it waits for before it starts, and for what.
    pub after: Vec<After>,
}

/// A project file, as a client read it: what `project` starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    /// Its name (`name =` in the file, else its folder's).
    pub name: String,
    /// The project file, absolute: the server keys the project by it.
    pub file: PathBuf,
    /// Its processes, in the file's order.
    pub processes: Vec<Process>,
}

impl Travel for CoreCondition {
    type Wire = Condition;
    fn to_wire(self) -> Condition {
        match self {
            Self::Ready => Condition::Ready,
            Self::Started => Condition::Started,
            Self::Succeeded => Condition::Succeeded,
            Self::Ended => Condition::Ended,
        }
    }
    fn from_wire(wire: Condition) -> Self {
        match wire {
            Condition::Ready => Self::Ready,
            Condition::Started => Self::Started,
            Condition::Succeeded => Self::Succeeded,
            Condition::Ended => Self::Ended,
        }
    }
}

impl Travel for CoreAfter {
    type Wire = After;
    fn to_wire(self) -> After {
        After {
            name: self.name,
            condition: self.condition.to_wire(),
        }
    }
    fn from_wire(wire: After) -> Self {
        Self {
            name: wire.name,
            condition: Travel::from_wire(wire.condition),
        }
    }
}

impl Travel for CoreProbe {
    type Wire = Probe;
    fn to_wire(self) -> Probe {
        match self {
            Self::Cmd(cmd) => Probe::Cmd(cmd),
            Self::Http(url) => Probe::Http(url),
        }
    }
    fn from_wire(wire: Probe) -> Self {
        match wire {
            Probe::Cmd(cmd) => Self::Cmd(cmd),
            Probe::Http(url) => Self::Http(url),
        }
    }
}

impl Travel for CoreProbes {
    type Wire = Probes;
    fn to_wire(self) -> Probes {
        Probes {
            ready: self.ready.to_wire(),
            ready_interval_ms: self.ready_interval_ms,
            ready_timeout_ms: self.ready_timeout_ms,
            alive: self.alive.to_wire(),
            alive_interval_ms: self.alive_interval_ms,
            alive_failures: self.alive_failures,
        }
    }
    fn from_wire(wire: Probes) -> Self {
        Self {
            ready: Travel::from_wire(wire.ready),
            ready_interval_ms: wire.ready_interval_ms,
            ready_timeout_ms: wire.ready_timeout_ms,
            alive: Travel::from_wire(wire.alive),
            alive_interval_ms: wire.alive_interval_ms,
            alive_failures: wire.alive_failures,
        }
    }
}

impl Travel for ProjectProcess {
    type Wire = Process;
    fn to_wire(self) -> Process {
        Process {
            name: self.name,
            cmd: self.cmd,
            cwd: self.cwd,
            env: self.env,
            env_files: self.env_files,
            autostart: self.autostart,
            restart: match self.restart {
                CoreRestart::Never => Restart::Never,
                CoreRestart::OnFailure => Restart::OnFailure,
                CoreRestart::Always => Restart::Always,
            },
            restart_limit: self.restart_limit,
            backoff_ms: self.backoff_ms,
            ready: self.ready,
            probes: self.probes.to_wire(),
            after: self.after.to_wire(),
        }
    }
    fn from_wire(wire: Process) -> Self {
        Self {
            name: wire.name,
            cmd: wire.cmd,
            cwd: wire.cwd,
            env: wire.env,
            env_files: wire.env_files,
            autostart: wire.autostart,
            restart: match wire.restart {
                Restart::Never => CoreRestart::Never,
                Restart::OnFailure => CoreRestart::OnFailure,
                Restart::Always => CoreRestart::Always,
            },
            restart_limit: wire.restart_limit,
            backoff_ms: wire.backoff_ms,
            ready: wire.ready,
            probes: Travel::from_wire(wire.probes),
            after: Travel::from_wire(wire.after),
        }
    }
}

impl Travel for ProjectFile {
    type Wire = Project;
    fn to_wire(self) -> Project {
        Project {
            name: self.name,
            file: self.file,
            processes: self.processes.to_wire(),
        }
    }
    fn from_wire(wire: Project) -> Self {
        Self {
            name: wire.name,
            file: wire.file,
            processes: Travel::from_wire(wire.processes),
            // What the file said that oino does not take was said where it was read.
            ignored: Vec::new(),
        }
    }
}
