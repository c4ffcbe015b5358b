//! PTY processes: `bash -c COMMAND` in a pseudo-terminal of its own.
//!
//! Data flow: one reader thread reads the master side 64 KiB at a time into a bounded channel
//! ([`SpawnedProcess::output`]); whoever owns that receiver (a call, later a task) consumes every
//! chunk exactly once. A waiter thread publishes the shell's exit on a watch channel (and reaps
//! it once released, below).
//! A writer thread takes input from a bounded channel, so a child that stops reading its stdin
//! never blocks the runtime. [`ProcessControl`] is the cloneable side (pid, exit, input, resize,
//! kill) that front ends use while someone else consumes the output.
//!
//! Signals reach only what is provably ours. The waiter learns of the shell's exit without
//! reaping it: the zombie keeps its pid, and so its process group and session, from being
//! reused until the tree has been dealt with and the control is [released]. After that, nothing
//! is signalled. Every other process a tree search finds is pinned with a pidfd and checked again
//! (start time, group, session or this spawn's key) before it is signalled.
//!
//! [released]: ProcessControl::release

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::Pid;
use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};

pub mod exec;
pub(crate) mod group;
pub(crate) mod procfs;
mod spawn;
mod stream;
pub mod waiting;

pub(crate) use stream::{ProcessStream, StreamEvent};

/// Bytes asked of the PTY in one read.
pub(crate) const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Chunks buffered between the reader thread and the consumer: backpressure beyond that.
const OUTPUT_CHANNEL_CHUNKS: usize = 4;
/// Writes buffered for the writer thread.
const INPUT_CHANNEL_WRITES: usize = 64;
/// How long a process tree gets between SIGTERM and SIGKILL.
pub(crate) const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);
/// How often a dying tree is looked at during a kill (there is no notice for non-children).
const KILL_POLL: Duration = Duration::from_millis(10);
/// Stack of the reader, waiter and writer threads: they hold little.
const THREAD_STACK_BYTES: usize = 256 * 1024;
/// Environment variable naming the call a process belongs to.
pub const CALL_ID_ENV: &str = "OINO_CALL_ID";
/// Environment variable naming the server (or interface) that spawned a call: `KEY:PID:START`,
/// its socket's key, its pid and its start time, so that a server started after it died finds
/// what it left running.
pub(crate) const OWNER_ENV: &str = "OINO_SERVER";
/// Environment variable unique to one spawn, so that killing a tree never touches the processes
/// of another oino that happens to use the same call id.
pub(crate) const TREE_KEY_ENV: &str = "OINO_TREE";

/// A PTY library's error in words: it writes an OS error in Rust's debug form (`Os { code:
/// 24, kind: …}`), which says nothing to a person; its errno is told as `describe` tells it.
fn in_words(err: &impl std::fmt::Display) -> String {
    let text = err.to_string();
    let Some(start) = text.find("Os { code: ") else {
        return text;
    };
    let digits: String = text[start + "Os { code: ".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let (Ok(code), Some(end)) = (digits.parse::<i32>(), text[start..].find('}')) else {
        return text;
    };
    let words = crate::paths::describe(&std::io::Error::from_raw_os_error(code));
    format!("{}{words}{}", &text[..start], &text[start + end + 1..])
}

/// A terminal size in character cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TermSize {
    /// Width, in columns.
    pub cols: u16,
    /// Height, in rows.
    pub rows: u16,
}

impl TermSize {
    /// The classic 80x24.
    pub(crate) const DEFAULT: Self = Self { cols: 80, rows: 24 };

    /// The largest size taken: wider than any terminal on a screen, small enough that a
    /// client's request for a screen of that size cannot exhaust memory.
    pub(crate) const MAX: Self = Self {
        cols: 1000,
        rows: 500,
    };

    /// A size of at least 2x2 (smaller sizes break full-screen programs and the vt100 model)
    /// and at most [`Self::MAX`].
    #[must_use]
    pub fn new(cols: u16, rows: u16) -> Self {
        Self {
            cols: cols.clamp(2, Self::MAX.cols),
            rows: rows.clamp(2, Self::MAX.rows),
        }
    }
}

impl Default for TermSize {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for TermSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.cols, self.rows)
    }
}

/// Who waits for a process's output: a program reads it as text, a person watches its screen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Waiter {
    /// `oino run`, an agent: pagers and editors must not wait for a key nobody presses.
    #[default]
    Program,
    /// Someone in the interface: their own pager and editor work there.
    Person,
}

/// Pager variables set to `cat` for a program's calls, whatever the caller's environment says
/// (`GIT_PAGER` also wins over git's `core.pager`).
pub(crate) const PAGER_VARIABLES: [&str; 5] = [
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "GH_PAGER",
];

/// Editor variables set to `true` for a program's calls, whatever the caller's environment says
/// (`GIT_EDITOR` also wins over git's `core.editor`): an editor waits for keys nobody presses,
/// and `true` leaves the message empty, so that `git commit` without `-m` stops at once with
/// "Aborting commit due to empty commit message".
pub(crate) const EDITOR_VARIABLES: [&str; 3] = ["GIT_EDITOR", "EDITOR", "VISUAL"];

/// What to spawn.
#[derive(Clone, Debug)]
pub struct SpawnSpec {
    /// The call it runs for: its processes carry it in `OINO_CALL_ID`.
    pub call_id: String,
    /// The shell command, run by `bash -c`.
    pub command: String,
    /// The folder it starts in; it must exist.
    pub cwd: PathBuf,
    /// The process's environment (the caller's); when empty, oino's own.
    pub env: Vec<(String, String)>,
    /// The PTY's size.
    pub size: TermSize,
    /// Who reads its output: a program's calls get `cat` as their pager and `true` as their
    /// editor.
    pub waiter: Waiter,
    /// The tag of whoever spawns it (see [`OWNER_ENV`]), if it has one.
    pub owner: Option<String>,
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessExit {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal number.
    Signal(i32),
}

impl ProcessExit {
    /// The exit status a shell would report: the code, or 128 + the signal.
    #[must_use]
    pub(crate) fn shell_status(self) -> i32 {
        match self {
            Self::Code(code) => code,
            Self::Signal(signal) => 128 + signal,
        }
    }

    /// Whether it exited with code 0.
    #[must_use]
    pub fn success(self) -> bool {
        self == Self::Code(0)
    }
}

impl fmt::Display for ProcessExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code(code) => write!(f, "exit code {code}"),
            Self::Signal(signal) => match Signal::try_from(*signal) {
                Ok(name) => write!(f, "signal {signal} ({name})"),
                Err(_) => write!(f, "signal {signal}"),
            },
        }
    }
}

/// Errors of this layer.
#[derive(Debug, thiserror::Error)]
pub enum PtyError {
    /// The folder asked for does not exist.
    #[error("cwd {0} does not exist: create it or choose another directory")]
    MissingCwd(PathBuf),
    /// The folder asked for is not a folder.
    #[error("cwd {0} is not a directory: choose a directory")]
    CwdNotADirectory(PathBuf),
    /// No PTY could be opened.
    #[error("could not open a PTY: {0}")]
    Open(String),
    /// bash could not be started.
    #[error("could not start bash: {0}")]
    Spawn(String),
    /// Written to after the process ended.
    #[error("the process has ended: its input is closed")]
    InputClosed,
    /// The PTY's size could not be set.
    #[error("could not resize the PTY: {0}")]
    Resize(String),
    /// The command or a variable's value holds a NUL byte: which one, in words.
    #[error("{0} contains a NUL byte, which no program's argument or environment can hold")]
    NulByte(String),
    /// A variable name that is empty or holds `=` or a NUL byte.
    #[error(
        "{0:?} cannot name an environment variable: a name is not empty and holds no `=` or NUL"
    )]
    BadVariableName(String),
    /// One variable is longer, as `NAME=VALUE`, than the kernel passes (131,071 bytes).
    #[error(
        "the environment variable `{name}` is {bytes} bytes as NAME=VALUE, more than one variable \
         can be ({max}): unset it or make it shorter",
        max = exec::MAX_ARG_BYTES
    )]
    VariableTooLong {
        /// The variable's name.
        name: String,
        /// Its length as `NAME=VALUE`.
        bytes: usize,
    },
    /// The command and the environment together are larger than the kernel starts a program with.
    #[error(
        "the command and its environment take {bytes} bytes, more than the {limit} bytes the \
         kernel starts a program with (a quarter of the server's stack limit, `ulimit -s`): unset \
         large environment variables, or start the server under a larger `ulimit -s`"
    )]
    EnvironmentTooLarge {
        /// What they take, with the kernel's pointers and oino's own variables.
        bytes: usize,
        /// A quarter of the stack limit (`ulimit -s`), between 128 KiB and 6 MiB.
        limit: usize,
    },
}

/// A running process, as spawned: its output and its control.
pub struct SpawnedProcess {
    /// Output chunks in order; the channel closes at the PTY's end of file.
    pub output: mpsc::Receiver<Vec<u8>>,
    /// Pid, exit, input, resize and kill; cloneable.
    pub control: ProcessControl,
}

impl fmt::Debug for SpawnedProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpawnedProcess")
            .field("pid", &self.control.pid())
            .field("call_id", &self.control.call_id())
            .finish_non_exhaustive()
    }
}

/// The cloneable control of a spawned process. The PTY master lives as long as any clone: dropping
/// it would hang up the terminal under the process.
#[derive(Clone)]
pub struct ProcessControl {
    inner: Arc<ControlInner>,
}

struct ControlInner {
    pid: u32,
    call_id: String,
    exit: watch::Receiver<Option<ProcessExit>>,
    /// The terminal's input (the writer's queue), until [`ProcessControl::close_terminal`].
    input: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    /// What the process runs on and leaves behind.
    tree: Box<dyn Tree>,
}

/// The system side of a spawned process: its terminal and its tree of processes. A PTY and the
/// processes on it ([`tree::PtyTree`]), or a stand-in ([`scripted`]) for tests of what is above.
trait Tree: Send + Sync {
    fn resize(&self, size: TermSize) -> Result<(), PtyError>;
    fn terminal_hung_up(&self) -> bool;
    fn output_pending(&self) -> bool;
    /// Lets the terminal's master side go.
    fn close_terminal(&self);
    fn release(&self);
    fn is_reaped(&self) -> bool;
    fn signal(&self, signal: Signal);
    fn reading_terminal(&self) -> waiting::TerminalRead;
    /// The name of the program in the foreground of its terminal, if one can be named.
    fn foreground_program(&self) -> Option<String>;
    fn alive(&self) -> bool;
    /// How many processes the tree has now (zombies do not count).
    fn size(&self) -> usize {
        usize::from(self.alive())
    }
    /// The PTY tree, for looking at many trees with one scan of /proc.
    fn on_pty(&self) -> Option<&tree::PtyTree> {
        None
    }
}

impl fmt::Debug for ProcessControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessControl")
            .field("pid", &self.inner.pid)
            .field("call_id", &self.inner.call_id)
            .finish_non_exhaustive()
    }
}

/// Checks the cwd before anything starts: a missing cwd would silently become $HOME.
pub(crate) fn check_cwd(cwd: &Path) -> Result<(), PtyError> {
    match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(PtyError::CwdNotADirectory(cwd.to_owned())),
        Err(_) => Err(PtyError::MissingCwd(cwd.to_owned())),
    }
}

fn unique_tree_key() -> String {
    static SPAWNS: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    format!(
        "{}.{}.{nanos}",
        std::process::id(),
        SPAWNS.fetch_add(1, Ordering::Relaxed)
    )
}

/// The environment a call's process gets: the caller's (given none, oino's own; given no `PATH`,
/// oino's `PATH`), with what the process runs in: oino's terminal, whatever the caller's was (its
/// type, and a size the terminal itself reports: stale COLUMNS and LINES would override it), `cat`
/// as the pager and `true` as the editor of a program's call, and the call's keys.
fn environment(spec: &SpawnSpec, tree_key: &str) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = if spec.env.is_empty() {
        std::env::vars_os().collect()
    } else {
        spec.env
            .iter()
            .map(|(name, value)| (name.into(), value.into()))
            .collect()
    };
    let mut set = vec![
        ("TERM", "xterm-256color"),
        (CALL_ID_ENV, spec.call_id.as_str()),
        (TREE_KEY_ENV, tree_key),
    ];
    if spec.waiter == Waiter::Program {
        set.extend(PAGER_VARIABLES.map(|pager| (pager, "cat")));
        set.extend(EDITOR_VARIABLES.map(|editor| (editor, "true")));
    }
    if let Some(owner) = &spec.owner {
        set.push((OWNER_ENV, owner));
    }
    env.retain(|(name, _)| {
        name != "COLUMNS" && name != "LINES" && !set.iter().any(|(set, _)| name == set)
    });
    // Without a PATH, bash itself could not be found: a caller's environment without one gets
    // oino's.
    if !env.iter().any(|(name, _)| name == "PATH") {
        if let Some(path) = std::env::var_os("PATH") {
            env.push(("PATH".into(), path));
        }
    }
    env.extend(
        set.into_iter()
            .map(|(name, value)| (name.into(), value.into())),
    );
    env
}

/// A spawn checked as far as can be known before trying: its folder, and a command and an
/// environment `execve` takes.
pub(crate) struct Prepared<'a> {
    spec: &'a SpawnSpec,
    env: Vec<(OsString, OsString)>,
    tree_key: String,
}

/// Checks `spec` and builds its process's environment, once, for [`Prepared::spawn`].
pub(crate) fn prepare(spec: &SpawnSpec) -> Result<Prepared<'_>, PtyError> {
    check_cwd(&spec.cwd)?;
    let tree_key = unique_tree_key();
    let env = environment(spec, &tree_key);
    exec::check(
        &[
            OsStr::new("bash"),
            OsStr::new("-c"),
            OsStr::new(&spec.command),
        ],
        env.iter()
            .map(|(name, value)| (name.as_os_str(), value.as_os_str())),
    )?;
    Ok(Prepared {
        spec,
        env,
        tree_key,
    })
}

/// Spawns `bash -c COMMAND` in a new PTY. Must be called within a tokio runtime.
pub fn spawn(spec: &SpawnSpec) -> Result<SpawnedProcess, PtyError> {
    prepare(spec)?.spawn()
}

/// What starts the processes of calls: the system ([`SystemSpawner`]: PTYs and bash), or in
/// tests of the layers above, processes played by hand ([`scripted::ScriptedSpawner`]).
pub(crate) trait Spawner: Send + Sync {
    /// Starts the checked call. Called within a tokio runtime.
    fn spawn(&self, prepared: Prepared<'_>) -> Result<SpawnedProcess, PtyError>;
}

/// Spawns `bash -c COMMAND` in a new PTY.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SystemSpawner;

impl Spawner for SystemSpawner {
    fn spawn(&self, prepared: Prepared<'_>) -> Result<SpawnedProcess, PtyError> {
        prepared.spawn()
    }
}

impl Prepared<'_> {
    /// Spawns the checked call. Must be called within a tokio runtime.
    pub fn spawn(self) -> Result<SpawnedProcess, PtyError> {
        let Self {
            spec,
            env,
            tree_key,
        } = self;
        let size = TermSize::new(spec.size.cols, spec.size.rows);
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: size.rows,
                cols: size.cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|err| PtyError::Open(in_words(&err)))?;

        // A second of margin for the uptime's rounding.
        let spawned_ticks = proc_scan::now_ticks().map_or(0, |now| now.saturating_sub(100));
        let tty = pair.master.tty_name();
        let pid = match spawn_without_fork(spec, &env, tty.as_deref()) {
            Some(pid) => pid,
            None => spawn_forked(pair.slave.as_ref(), spec, env)?,
        };
        // The slave must go now, or the reader never sees end of file.
        drop(pair.slave);

        let reader = pair
            .master
            .try_clone_reader()
            .map_err(|err| PtyError::Open(in_words(&err)))?;
        let writer = pair
            .master
            .take_writer()
            .map_err(|err| PtyError::Open(in_words(&err)))?;

        let (output_tx, output) = mpsc::channel(OUTPUT_CHANNEL_CHUNKS);
        let (exit_tx, exit) = watch::channel(None);
        let (input, input_rx) = mpsc::channel(INPUT_CHANNEL_WRITES);
        let (release, released) = std::sync::mpsc::channel();
        let reaped = Arc::new(RwLock::new(false));
        let reader_holds = Arc::new(AtomicBool::new(false));

        let waiter_reaped = Arc::clone(&reaped);
        spawn_thread(format!("oino-wait-{pid}"), move || {
            wait_for_exit(pid, &exit_tx, &released, &waiter_reaped);
        })?;
        let holds = Arc::clone(&reader_holds);
        spawn_thread(format!("oino-read-{pid}"), move || {
            read_output(reader, &output_tx, &holds);
        })?;
        spawn_thread(format!("oino-in-{pid}"), move || {
            write_input(writer, input_rx);
        })?;

        Ok(SpawnedProcess {
            output,
            control: ProcessControl {
                inner: Arc::new(ControlInner {
                    pid,
                    call_id: spec.call_id.clone(),
                    exit,
                    input: Mutex::new(Some(input)),
                    tree: Box::new(tree::PtyTree {
                        pid,
                        tree_key,
                        spawned_ticks,
                        reaped,
                        release: Mutex::new(Some(release)),
                        master: Mutex::new(Some(pair.master)),
                        reader_holds,
                    }),
                }),
            },
        })
    }
}

/// `bash -c COMMAND` started on the terminal `tty` by [`spawn::spawn_on_tty`]; `None` when that
/// cannot be done here (no path for the terminal, no bash in the `PATH`, a refusal), for the
/// PTY crate's fork to try, and to say why if it fails too.
fn spawn_without_fork(
    spec: &SpawnSpec,
    env: &[(OsString, OsString)],
    tty: Option<&Path>,
) -> Option<u32> {
    // As the PTY crate does: the user's login shell as SHELL when the environment names none.
    static LOGIN_SHELL: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let tty = tty?;
    let bash = spawn::find_in_path("bash", env)?;
    let mut env = env.to_vec();
    if !env.iter().any(|(name, _)| name == "SHELL") {
        let shell = LOGIN_SHELL.get_or_init(|| {
            nix::unistd::User::from_uid(nix::unistd::getuid())
                .ok()
                .flatten()
                .map_or_else(|| PathBuf::from("/bin/sh"), |user| user.shell)
        });
        env.push(("SHELL".into(), shell.clone().into_os_string()));
    }
    let args = [
        OsStr::new("bash"),
        OsStr::new("-c"),
        OsStr::new(&spec.command),
    ];
    let pid = spawn::spawn_on_tty(&bash, &args, &env, tty, &spec.cwd).ok()?;
    u32::try_from(pid).ok()
}

/// `bash -c COMMAND` started by the PTY crate, which forks.
fn spawn_forked(
    slave: &dyn portable_pty::SlavePty,
    spec: &SpawnSpec,
    env: Vec<(OsString, OsString)>,
) -> Result<u32, PtyError> {
    let mut command = CommandBuilder::new("bash");
    command.args(["-c", &spec.command]);
    command.cwd(&spec.cwd);
    command.env_clear();
    for (name, value) in env {
        command.env(name, value);
    }
    let child = slave
        .spawn_command(command)
        .map_err(|err| PtyError::Spawn(in_words(&err)))?;
    // The waiter thread reaps by pid; the std child handle is not needed for that.
    child
        .process_id()
        .ok_or_else(|| PtyError::Spawn("the new process has no pid".into()))
}

/// Plain threads, not `spawn_blocking`: a runtime shutting down would wait on them forever.
fn spawn_thread(name: String, body: impl FnOnce() + Send + 'static) -> Result<(), PtyError> {
    std::thread::Builder::new()
        .name(name)
        .stack_size(THREAD_STACK_BYTES)
        .spawn(body)
        .map(drop)
        .map_err(|err| PtyError::Spawn(format!("could not start a thread: {err}")))
}

fn read_output(
    mut reader: Box<dyn Read + Send>,
    output: &mpsc::Sender<Vec<u8>>,
    holds: &AtomicBool,
) {
    let mut buffer = vec![0; READ_CHUNK_BYTES];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => {
                holds.store(true, Ordering::Release);
                let sent = output.blocking_send(buffer[..read].to_vec());
                holds.store(false, Ordering::Release);
                if sent.is_err() {
                    break;
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            // EIO once the last holder of the slave side is gone: the PTY's end of file.
            Err(_) => break,
        }
    }
}

fn write_input(mut writer: Box<dyn Write + Send>, mut input: mpsc::Receiver<Vec<u8>>) {
    while let Some(bytes) = input.blocking_recv() {
        if writer
            .write_all(&bytes)
            .and_then(|()| writer.flush())
            .is_err()
        {
            break;
        }
    }
}

/// Learns of the shell's exit without reaping it, publishes it, and reaps the shell only once
/// released: until then the zombie keeps its pid, group and session from being reused.
fn wait_for_exit(
    pid: u32,
    exit: &watch::Sender<Option<ProcessExit>>,
    release: &std::sync::mpsc::Receiver<()>,
    reaped: &RwLock<bool>,
) {
    let pid = Pid::from_raw(pid_as_i32(pid));
    let status = loop {
        match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Ok(WaitStatus::Exited(_, code)) => break Some(ProcessExit::Code(code)),
            Ok(WaitStatus::Signaled(_, signal, _)) => {
                break Some(ProcessExit::Signal(signal as i32));
            }
            Ok(_) | Err(Errno::EINTR) => {}
            // Someone else reaped it: the code is lost, and the pid is no longer ours.
            Err(_) => break None,
        }
    };
    if let Some(status) = status {
        exit.send_replace(Some(status));
        // Released, or every control gone.
        let _ = release.recv();
    }
    let mut reaped = reaped.write().unwrap_or_else(PoisonError::into_inner);
    while let Err(Errno::EINTR) = waitpid(pid, None) {}
    *reaped = true;
    drop(reaped);
    if status.is_none() {
        exit.send_replace(Some(ProcessExit::Code(-1)));
    }
}

fn pid_as_i32(pid: u32) -> i32 {
    // Linux pids fit in i32 (pid_max is at most 2^22).
    i32::try_from(pid).unwrap_or(i32::MAX)
}

impl ProcessControl {
    /// The shell's pid; also the process group id of its tree.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.inner.pid
    }

    /// The id of the call the process runs for.
    #[must_use]
    pub fn call_id(&self) -> &str {
        &self.inner.call_id
    }

    /// How the shell ended, or `None` while it runs.
    #[must_use]
    pub fn exit(&self) -> Option<ProcessExit> {
        *self.inner.exit.borrow()
    }

    /// A receiver that sees the shell's exit.
    #[must_use]
    pub(crate) fn exit_watch(&self) -> watch::Receiver<Option<ProcessExit>> {
        self.inner.exit.clone()
    }

    /// Sends bytes to the process's terminal input.
    pub async fn write(&self, bytes: Vec<u8>) -> Result<(), PtyError> {
        if self.exit().is_some() {
            return Err(PtyError::InputClosed);
        }
        let input = self
            .inner
            .input
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or(PtyError::InputClosed)?;
        input.send(bytes).await.map_err(|_| PtyError::InputClosed)
    }

    /// Resizes the PTY; the process gets SIGWINCH. A closed terminal has nothing to resize.
    pub fn resize(&self, size: TermSize) -> Result<(), PtyError> {
        self.inner.tree.resize(TermSize::new(size.cols, size.rows))
    }

    /// Whether every holder of the slave side has closed it: then the reader's end of file is
    /// sure to come once it has read what is left, however long a loaded machine makes that.
    /// A closed terminal, or one that cannot be asked, counts as still held.
    #[must_use]
    pub(crate) fn terminal_hung_up(&self) -> bool {
        self.inner.tree.terminal_hung_up()
    }

    /// Whether output is on its way: in the terminal, unread, or read and not yet handed over.
    #[must_use]
    pub(crate) fn output_pending(&self) -> bool {
        self.inner.tree.output_pending()
    }

    /// Lets the terminal go once its process has ended, so that a finished call kept in a list
    /// holds no file descriptor and no writer thread (it would hang up anything still on it).
    pub(crate) fn close_terminal(&self) {
        self.inner
            .input
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.inner.tree.close_terminal();
    }

    /// The tree has been dealt with (its shell ended, what it left was ended): the shell may be
    /// reaped, and from then on nothing of this tree is signalled, since its pid may be reused.
    pub(crate) fn release(&self) {
        self.inner.tree.release();
    }

    /// Whether the shell has been reaped (see [`Self::release`]).
    #[must_use]
    pub(crate) fn is_reaped(&self) -> bool {
        self.inner.tree.is_reaped()
    }

    /// Sends `signal` to every process of the tree: the shell's process group, and each process
    /// in its session or carrying this spawn's environment key, checked again just before. Once
    /// the shell is reaped, nothing: the pid may be another process's by then.
    pub(crate) fn signal_tree(&self, signal: Signal) {
        self.inner.tree.signal(signal);
    }

    /// Whether a process in the foreground of the call's terminal is blocked reading it (see
    /// [`waiting::reading_terminal`]); never once the shell is reaped.
    #[must_use]
    pub(crate) fn reading_terminal(&self) -> waiting::TerminalRead {
        self.inner.tree.reading_terminal()
    }

    /// The name of the program in the foreground of the call's terminal, the one reading it if
    /// one does (see [`waiting::foreground_program`]); none once the shell is reaped.
    #[must_use]
    pub(crate) fn foreground_program(&self) -> Option<String> {
        self.inner.tree.foreground_program()
    }

    /// For each tree of `trees`, whether any process of it is still alive: one scan of /proc for
    /// the PTY trees among them (trees that ended together are looked at together).
    #[must_use]
    pub(crate) fn alive_trees(trees: &[Self]) -> Vec<bool> {
        let on_pty: Vec<&tree::PtyTree> = trees
            .iter()
            .filter_map(|control| control.inner.tree.on_pty())
            .collect();
        let mut on_pty_alive = tree::PtyTree::alive_trees(&on_pty).into_iter();
        trees
            .iter()
            .map(|control| match control.inner.tree.on_pty() {
                Some(_) => on_pty_alive.next().unwrap_or(false),
                None => control.inner.tree.alive(),
            })
            .collect()
    }

    /// Whether any process of the tree is still alive (zombies do not count).
    #[must_use]
    pub(crate) fn tree_alive(&self) -> bool {
        self.inner.tree.alive()
    }

    /// Ends the whole tree: SIGTERM, up to `grace` for it to go, then SIGKILL. How many
    /// processes it had when the kill began.
    pub(crate) async fn kill_tree(&self, grace: Duration) -> usize {
        let size = self.inner.tree.size();
        Self::kill_trees(std::slice::from_ref(self), grace).await;
        size
    }

    /// Ends every tree of `trees` as [`Self::kill_tree`] ends one, with one scan of /proc a
    /// round for them all: a server ending a thousand tasks reads /proc a few hundred times,
    /// not a few hundred times a task.
    pub(crate) async fn kill_trees(trees: &[Self], grace: Duration) {
        let mut alive = Self::still_alive(trees.to_vec());
        for tree in &alive {
            tree.signal_tree(Signal::SIGTERM);
            // The shell may ignore TERM while its children die: HUP is what a closed terminal
            // sends.
            tree.signal_tree(Signal::SIGHUP);
        }
        let deadline = tokio::time::Instant::now() + grace;
        while !alive.is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(KILL_POLL).await;
            alive = Self::still_alive(alive);
        }
        let deadline = tokio::time::Instant::now() + grace;
        while !alive.is_empty() && tokio::time::Instant::now() < deadline {
            // Again each round: a scan shared by many may be a few milliseconds old, and miss
            // a process forked since.
            for tree in &alive {
                tree.signal_tree(Signal::SIGKILL);
            }
            tokio::time::sleep(KILL_POLL).await;
            alive = Self::still_alive(alive);
        }
    }

    /// The trees of `trees` with a process alive, as one scan of /proc begun now sees them.
    fn still_alive(trees: Vec<Self>) -> Vec<Self> {
        let alive = Self::alive_trees(&trees);
        trees
            .into_iter()
            .zip(alive)
            .filter_map(|(tree, alive)| alive.then_some(tree))
            .collect()
    }
}

/// A small reader of /proc, for finding a tree's processes.
pub mod proc_scan;
#[cfg(test)]
pub(crate) mod scripted;
mod tree;

#[cfg(test)]
mod tests;
