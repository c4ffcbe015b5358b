//! A project as it travels: its file's processes, as a client read them, and how a start or a
//! stop went.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Travel;
use crate::core::project::{
    Project as ProjectFile, ProjectProcess, ProjectStarted as CoreProjectStarted,
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

/// One process of a project file, checked (its folder absolute).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    /// Its name, and the name of the task it runs as.
    pub name: String,
    /// The shell command, run by `bash -c`.
    pub cmd: String,
    /// Its folder, absolute.
    pub cwd: PathBuf,
    /// Variables set for it, over the caller's environment.
    pub env: Vec<(String, String)>,
    /// Whether a start of the project starts it (else only `only` does).
    pub autostart: bool,
    /// When it is started again once it ends.
    pub restart: Restart,
    /// Restarts in a row after which it is left ended (one that ran over 30 s starts the count
    /// over).
    pub restart_limit: u32,
    /// The wait before its first restart, in ms; it doubles with each, up to 30 s.
    pub backoff_ms: u64,
    /// A regular expression: it is ready once a line of its output matches (at once without one).
    pub ready: Option<String>,
    /// Processes that must be ready before it starts.
    pub after: Vec<String>,
}

/// A project file, as a client read it: what `project` starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    /// The project file, absolute: the server keys the project by it.
    pub file: PathBuf,
    /// Its processes, each after those it waits for.
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
