//! What a project is once its file was read and checked, whatever file it came from (`oino.toml`,
//! a Procfile, `process-compose.yaml`, `mprocs.yaml`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Restarts after which a process that keeps failing is left ended, unless the file says.
pub const DEFAULT_RESTART_LIMIT: u32 = 5;
/// The first wait before a restart, unless the file says; it doubles up to [`MAX_BACKOFF_MS`].
pub const DEFAULT_BACKOFF_MS: u64 = 1000;
/// The longest wait before a restart: a backoff doubles up to it.
pub const MAX_BACKOFF_MS: u64 = 30_000;
/// How often a readiness probe is tried, unless the file says.
pub const DEFAULT_READY_INTERVAL_MS: u64 = 1000;
/// How often a liveness probe is tried, unless the file says.
pub const DEFAULT_ALIVE_INTERVAL_MS: u64 = 10_000;
/// Liveness failures in a row after which a process is restarted, unless the file says.
pub const DEFAULT_ALIVE_FAILURES: u32 = 3;
/// The shortest interval between two tries of a probe: a shell or a connection each time, so
/// never a flood of them.
pub const MIN_INTERVAL_MS: u64 = 100;
/// The longest interval, timeout or backoff a project may give: a day.
pub const MAX_WAIT_MS: u64 = 86_400_000;
/// The most processes one project runs.
pub const MAX_PROCESSES: usize = 1000;

/// When a process that ended is started again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    /// It stays ended.
    #[default]
    Never,
    /// When it ends other than by exiting 0.
    OnFailure,
    /// Whenever it ends (up to `restart_limit` times in a row).
    Always,
}

/// What a process waits for in one it comes after.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// Ready: its ready line or probe passed (started, when it has neither).
    #[default]
    Ready,
    /// Started.
    Started,
    /// Exited 0.
    Succeeded,
    /// Ended, however.
    Ended,
}

impl Condition {
    /// Its name in a file: `ready`, `started`, `succeeded`, `ended`.
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Started => "started",
            Self::Succeeded => "succeeded",
            Self::Ended => "ended",
        }
    }

    /// The condition a file names, if it is one.
    #[must_use]
    pub fn from_word(word: &str) -> Option<Self> {
        [Self::Ready, Self::Started, Self::Succeeded, Self::Ended]
            .into_iter()
            .find(|condition| condition.word() == word)
    }
}

/// One process another comes after, and what it waits for in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct After {
    /// The process waited for.
    pub name: String,
    /// What is waited for.
    pub condition: Condition,
}

impl After {
    /// `name`, ready.
    #[must_use]
    pub fn ready(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            condition: Condition::Ready,
        }
    }
}

/// A check of a process from outside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// A shell command (`bash -c`, in the process's folder and environment): passes at exit 0.
    Cmd(String),
    /// An `http://` address: passes at a 2xx or 3xx answer.
    Http(String),
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cmd(cmd) => write!(f, "`{cmd}`"),
            Self::Http(url) => f.write_str(url),
        }
    }
}

/// How a process is probed: whether it is ready, and whether it still answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probes {
    /// Ready once it passes (with no ready line and no probe: ready once started).
    pub ready: Option<Probe>,
    /// Between two readiness tries, in ms.
    pub ready_interval_ms: u64,
    /// Not ready this long after its start: those that wait for it are blocked ("never became
    /// ready"); `None` waits on.
    pub ready_timeout_ms: Option<u64>,
    /// While it runs, restarted (under its restart policy) after `alive_failures` failures in a
    /// row.
    pub alive: Option<Probe>,
    /// Between two liveness tries, in ms.
    pub alive_interval_ms: u64,
    /// Liveness failures in a row that restart it.
    pub alive_failures: u32,
}

impl Default for Probes {
    fn default() -> Self {
        Self {
            ready: None,
            ready_interval_ms: DEFAULT_READY_INTERVAL_MS,
            ready_timeout_ms: None,
            alive: None,
            alive_interval_ms: DEFAULT_ALIVE_INTERVAL_MS,
            alive_failures: DEFAULT_ALIVE_FAILURES,
        }
    }
}

/// One process of a project, checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectProcess {
    /// Its name: the name of the task it runs as.
    pub name: String,
    /// The shell command, run by `bash -c` (`${VAR}` expanded at load).
    pub cmd: String,
    /// Its folder, absolute.
    pub cwd: PathBuf,
    /// Variables set for it, over the environment `oino` was started in: those of the
    /// environment files, then its own `env`.
    pub env: Vec<(String, String)>,
    /// The environment files read for it (`.env` beside the file, `env_file`), absolute.
    pub env_files: Vec<PathBuf>,
    /// Whether a start of the project starts it (else only a start of it by name does).
    pub autostart: bool,
    /// When it is started again once it ends.
    pub restart: Restart,
    /// Restarts in a row after which it is left ended (one that ran over 30 s starts the count
    /// over); 5 unless the file says.
    pub restart_limit: u32,
    /// The wait before its first restart, in ms (the file gives `backoff` in seconds); it doubles
    /// with each, up to [`MAX_BACKOFF_MS`].
    pub backoff_ms: u64,
    /// A pattern: it is ready once a line of its output matches.
    pub ready: Option<String>,
    /// Its readiness and liveness probes.
    pub probes: Probes,
    /// Processes it waits for before it starts, and for what.
    pub after: Vec<After>,
}

impl ProjectProcess {
    /// `name` running `cmd` in `cwd`, everything else as a file that says nothing more.
    #[must_use]
    pub fn new(name: &str, cmd: &str, cwd: PathBuf) -> Self {
        Self {
            name: name.to_owned(),
            cmd: cmd.to_owned(),
            cwd,
            env: Vec::new(),
            env_files: Vec::new(),
            autostart: true,
            restart: Restart::Never,
            restart_limit: DEFAULT_RESTART_LIMIT,
            backoff_ms: DEFAULT_BACKOFF_MS,
            ready: None,
            probes: Probes::default(),
            after: Vec::new(),
        }
    }

    /// Whether it is ready as soon as it starts (no ready line, no readiness probe).
    #[must_use]
    pub fn ready_at_start(&self) -> bool {
        self.ready.is_none() && self.probes.ready.is_none()
    }

    /// What differs from `running` so that a run of `running` must start again to be this one:
    /// `cmd`, `cwd`, `env`, `env_file` or `probe`; `None` when a run of it is a run of this.
    #[must_use]
    pub fn change_from(&self, running: &Self) -> Option<&'static str> {
        if self.cmd != running.cmd {
            Some("cmd")
        } else if self.cwd != running.cwd {
            Some("cwd")
        } else if self.env_files != running.env_files {
            Some("env_file")
        } else if self.env != running.env {
            Some("env")
        } else if self.ready != running.ready || self.probes != running.probes {
            Some("probe")
        } else {
            None
        }
    }

    /// The names of the processes it waits for.
    pub fn after_names(&self) -> impl Iterator<Item = &str> {
        self.after.iter().map(|after| after.name.as_str())
    }
}

/// A project: its name, its file and its processes, in the file's order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    /// Its name: `name =` at the top of the file, else its folder's.
    pub name: String,
    /// The file, absolute: a project is known by it.
    pub file: PathBuf,
    /// Its processes, in the order the file gives them.
    pub processes: Vec<ProjectProcess>,
    /// What the file says that oino does not take (a key of process-compose or mprocs it has no
    /// use for, a value it reads only in part), each once with its place, in the file's order:
    /// `namespace at process-compose.yaml:12:5`. Said to the person who loaded it, so that
    /// nothing is dropped without a word; kept on this side only (a project that travels arrives
    /// without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<String>,
}

impl Project {
    /// Its process `name`.
    #[must_use]
    pub fn process(&self, name: &str) -> Option<&ProjectProcess> {
        self.processes.iter().find(|process| process.name == name)
    }

    /// The name of a project in `file` that does not name itself: its folder's.
    #[must_use]
    pub fn name_of_folder(file: &std::path::Path) -> String {
        file.parent()
            .and_then(std::path::Path::file_name)
            .map_or_else(
                || "project".to_owned(),
                |name| name.to_string_lossy().into_owned(),
            )
    }
}
