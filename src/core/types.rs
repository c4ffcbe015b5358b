//! The core's public values: what a front end asks for (a [`CallRequest`]), what it gets back
//! ([`EntryInfo`], [`HistoryPage`]) and the [`CoreEvent`]s it hears.

use std::path::PathBuf;
use std::time::Duration;

use super::error::CoreError;
use crate::call::CallOptions;
use crate::pty::{self, ProcessExit, TermSize};
use crate::screen::DEFAULT_SCROLLBACK_ROWS;

/// Settings of a core.
#[derive(Clone, Debug)]
pub struct CoreConfig {
    /// Where call logs go; `None` for the user's state dir.
    pub log_dir: Option<PathBuf>,
    /// The terminal size of a call whose request names none (80x24).
    pub default_size: TermSize,
    /// Rows of history each screen keeps in memory (none by default: front ends read history from
    /// the log).
    pub scrollback_rows: usize,
    /// How long a killed tree gets between SIGTERM and SIGKILL (2 s).
    pub kill_grace: Duration,
    /// How long a call waits for its PTY's end of file once the shell exited (300 ms), so that a
    /// grandchild holding the PTY cannot hang it.
    pub exit_grace: Duration,
    /// Finished calls kept in the list (each keeps a screen); older ones are forgotten, their
    /// logs stay on disk.
    pub max_finished: usize,
    /// Finished tasks kept, apart from calls: someone may still read a task's output.
    pub max_finished_tasks: usize,
    /// Logs in the user's state folder older than this are removed when a core starts.
    pub log_retention: Duration,
    /// Bytes of one call's log kept on disk: past it, its head and its newest part.
    pub log_cap: u64,
    /// The tag put in each call's environment, so that a server started after this one died
    /// finds what it left running (see `survivors`).
    pub owner: Option<String>,
}

/// The longest call id.
pub const MAX_ID_CHARS: usize = 64;

/// Whether `id` may name a call: short, and nothing that breaks a line or a table.
#[must_use]
pub(crate) fn is_valid_id(id: &str) -> bool {
    (1..=MAX_ID_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
}

/// The longest command: Linux takes no longer single argument (`MAX_ARG_STRLEN`, 32 pages).
pub const MAX_COMMAND_BYTES: usize = crate::pty::exec::MAX_ARG_BYTES;

/// Finished calls kept by default.
pub const DEFAULT_MAX_FINISHED: usize = 200;
/// Finished tasks kept by default.
pub const DEFAULT_MAX_FINISHED_TASKS: usize = 1000;

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
            log_retention: crate::output::LOG_RETENTION,
            log_cap: crate::output::DEFAULT_LOG_CAP,
            owner: None,
        }
    }
}

/// A call to start.
#[derive(Clone, Debug, Default)]
pub struct CallRequest {
    /// The call id (an agent's tool-call id); `None` to let the core make one (`c1`, `c2`, …).
    pub id: Option<String>,
    /// The shell command, run by `bash -c`.
    pub command: String,
    /// `None` for oino's own working directory.
    pub cwd: Option<PathBuf>,
    /// The process's whole environment (the caller's); empty for oino's own.
    pub env: Vec<(String, String)>,
    /// The terminal size; `None` for the core's default (80x24).
    pub size: Option<TermSize>,
    /// A title to show instead of the command.
    pub title: Option<String>,
    /// The name of the task it becomes when its timeout detaches it (else one is made from the
    /// command).
    pub task_name: Option<String>,
    /// Its timeout, the cap of its result text, and what a timeout or a prompt does.
    pub options: CallOptions,
    /// A program (the default) or a person: who reads what it writes.
    pub waiter: pty::Waiter,
    /// Starts it as a background task: nobody waits for it, its output is all the task's, and
    /// its result is the detach marker alone.
    pub background: bool,
    /// Its result says the shell's folder when it ended (where a `cd` left it).
    pub report_folder: bool,
}

impl CallRequest {
    /// A request to run `command`, everything else left to the defaults.
    #[must_use]
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            ..Self::default()
        }
    }

    /// Runs where, and with what, it would in this process: its folder (unless one is given, a
    /// relative one being taken from here) and its environment, not the server's.
    pub fn from_here(mut self) -> Result<Self, CoreError> {
        let here = std::env::current_dir().map_err(|err| CoreError::NoFolder(err.to_string()))?;
        let cwd = match self.cwd {
            Some(cwd) => here.join(cwd),
            None => here,
        };
        // The protocol's JSON carries text: a folder that is not UTF-8 cannot reach the server.
        if cwd.to_str().is_none() {
            return Err(CoreError::NotUtf8Folder(cwd));
        }
        self.cwd = Some(cwd);
        // A variable that is not UTF-8 cannot travel in the protocol's JSON: it is left out
        // (see `variables_not_utf8`), not altered.
        self.env = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .filter(|(name, _)| name != "OINO_SOCKET")
            .collect();
        Ok(self)
    }
}

/// The names of this process's environment variables that [`CallRequest::from_here`] leaves
/// out because they are not UTF-8 (shown with replacement characters where needed).
#[must_use]
pub fn variables_not_utf8() -> Vec<String> {
    std::env::vars_os()
        .filter(|(name, value)| name.to_str().is_none() || value.to_str().is_none())
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect()
}

/// Whether an entry is still a call (someone waits for it) or a background task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// Someone waits for its result.
    Call,
    /// Detached into the background: it has a task id and a name.
    Task,
}

/// What a kill did to an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Killed {
    /// How it is named where it is listed: its task name, else its title, else its id (what a
    /// front end says it killed, without asking first).
    pub name: String,
    /// Its state after.
    pub state: EntryState,
    /// How many processes its tree had when the kill began (none when it had ended).
    pub processes: usize,
}

impl Killed {
    /// What else of its tree the kill ended, besides its own process, as words to follow its
    /// name: ` and 3 processes`; nothing when there was nothing else.
    #[must_use]
    pub fn and_the_rest(&self) -> String {
        match self.processes.saturating_sub(1) {
            0 => String::new(),
            1 => " and 1 process".to_owned(),
            more => format!(" and {more} processes"),
        }
    }
}

/// Where an entry's process stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryState {
    /// Its shell has not ended.
    Running,
    /// Its shell exited by itself.
    Exited {
        /// The exit status.
        code: i32,
    },
    /// A signal ended its shell.
    Killed {
        /// The signal's number (15 is SIGTERM).
        signal: i32,
    },
    /// Left running by a server that died (pid `server_pid`): its terminal went with that
    /// server, so it can only be killed.
    Orphaned {
        /// The pid of the server that died.
        server_pid: u32,
    },
    /// Not started yet: a project's process that waits, or cannot start.
    NotStarted,
}

impl EntryState {
    /// Whether its shell still runs here (an orphaned one does not count).
    #[must_use]
    pub fn is_running(self) -> bool {
        self == Self::Running
    }

    /// The status a shell would report for it: the code, or 128 + the signal (0 while running;
    /// 1 for processes whose end nobody will see).
    #[must_use]
    pub(crate) fn shell_status(self) -> i32 {
        match self {
            Self::Exited { code } => code,
            Self::Killed { signal } => 128 + signal,
            Self::Running | Self::NotStarted => 0,
            Self::Orphaned { .. } => 1,
        }
    }
}

/// How it stands, in words: `running`, `exited with code 3`, `killed by signal 15 (SIGTERM)`;
/// the alternate form (`{:#}`) is the short one of tables: `exited 3`, `killed 15`.
impl std::fmt::Display for EntryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (*self, f.alternate()) {
            (Self::Running, _) => f.write_str("running"),
            (Self::Exited { code }, false) => write!(f, "exited with code {code}"),
            (Self::Exited { code }, true) => write!(f, "exited {code}"),
            (Self::Killed { signal }, false) => {
                write!(f, "killed by signal {signal}")?;
                match nix::sys::signal::Signal::try_from(signal) {
                    Ok(name) => write!(f, " ({name})"),
                    Err(_) => Ok(()),
                }
            }
            (Self::Killed { signal }, true) => write!(f, "killed {signal}"),
            (Self::Orphaned { server_pid }, false) => write!(
                f,
                "left running by a server that died (pid {server_pid}): only `oino kill` reaches \
                 it"
            ),
            (Self::Orphaned { .. }, true) => f.write_str("orphaned"),
            (Self::NotStarted, _) => f.write_str("not started"),
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// The call id.
    pub id: String,
    /// A call, or a task once detached.
    pub kind: EntryKind,
    /// The task id (`t3`); `None` while it is a call.
    pub task_id: Option<String>,
    /// The task's name; `None` while it is a call.
    pub name: Option<String>,
    /// Shown instead of the command, when one was given.
    pub title: Option<String>,
    /// The shell command, run by `bash -c`.
    pub command: String,
    /// The folder it runs in.
    pub cwd: PathBuf,
    /// The shell's pid, also its process group's.
    pub pid: u32,
    /// Milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// When it became a task, in milliseconds since the Unix epoch; `None` while it is a call.
    pub detached_ms: Option<u64>,
    /// When it ended, in milliseconds since the Unix epoch; `None` while it runs.
    pub ended_ms: Option<u64>,
    /// How it stands: running, exited, killed, or orphaned.
    pub state: EntryState,
    /// Its timeout passed: it was killed, or detached to a task.
    pub timed_out: bool,
    /// Raw bytes of output readable so far: a boundary, never within a character or a sequence.
    pub bytes: u64,
    /// Raw offset where the task's own output starts (0 for a call).
    pub detach_offset: u64,
    /// Its log: the raw output.
    pub log_path: PathBuf,
    /// Why the log could not be written, if it could not.
    pub log_error: Option<String>,
    /// What the log's cap left out, once it did.
    pub log_cut: Option<crate::output::LogCut>,
    /// While it waits for someone to type: the line it prompts with.
    pub waiting_for_input: Option<String>,
    /// A project's process with a ready pattern: whether a line of its output matched it yet.
    pub ready: Option<bool>,
    /// A run of a project's process: which, and how the process stands.
    pub project: Option<crate::core::project::ProjectMark>,
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

/// A page of an entry's whole output, as a person saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryPage {
    /// Each line's text, its colors and attributes as SGR sequences (no other control).
    pub lines: Vec<String>,
    /// The number of the first line (0 is the oldest).
    pub first_line: u64,
    /// Lines between the page's end and the last line (clamped).
    pub lines_back: u64,
    /// Lines in the whole output.
    pub total_lines: u64,
}

/// What the core reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoreEvent {
    /// A new entry: a call started, or one a dead server left running was found.
    Started {
        /// Its call id.
        id: String,
    },
    /// New output since the entry's last snapshot: a notice, not the bytes.
    OutputChanged {
        /// Its call id.
        id: String,
    },
    /// A call became a task.
    Detached {
        /// Its call id.
        id: String,
        /// The task's id (`t3`).
        task_id: String,
        /// The task's name.
        name: String,
    },
    /// Its shell ended.
    Ended {
        /// Its call id.
        id: String,
        /// How it ended.
        state: EntryState,
    },
    /// It began (with its prompt line) or stopped waiting for someone to type.
    Waiting {
        /// Its call id.
        id: String,
        /// The prompt line (the one the cursor is on) when it begins; `None` when it stops.
        prompt: Option<String>,
    },
    /// How a project's processes stand changed (one waits, is blocked, restarts, gave up, its
    /// file changed), with a line to tell a person when there is one.
    Project {
        /// The project file.
        file: PathBuf,
        /// What happened, in words: "db exited 3: restart 1/5 in 1 s".
        notice: Option<String>,
    },
    /// A project's process became ready (a line matched its pattern), or waits to.
    Ready {
        /// Its call id.
        id: String,
        /// `false` from its start, `true` once a line matched its ready pattern; `None` without
        /// one.
        ready: Option<bool>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_the_same_everywhere_in_a_long_and_a_short_form() {
        let states = [
            EntryState::Running,
            EntryState::Exited { code: 3 },
            EntryState::Killed { signal: 15 },
            EntryState::Killed { signal: 99 },
            EntryState::Orphaned { server_pid: 7 },
        ];
        let long: Vec<String> = states.iter().map(ToString::to_string).collect();
        let short: Vec<String> = states.iter().map(|state| format!("{state:#}")).collect();
        assert_eq!(
            long,
            [
                "running",
                "exited with code 3",
                "killed by signal 15 (SIGTERM)",
                "killed by signal 99",
                "left running by a server that died (pid 7): only `oino kill` reaches it"
            ]
        );
        assert_eq!(
            short,
            ["running", "exited 3", "killed 15", "killed 99", "orphaned"]
        );
    }
}
