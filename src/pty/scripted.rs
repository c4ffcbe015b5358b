//! A stand-in for the system below the core: processes a test plays by hand. Each spawn hands
//! the test a [`ScriptedProcess`] that writes output, exits, reads what the call was sent and
//! sees the signals it got, with no PTY, no bash and no /proc, so that supervision, timeouts,
//! backoff and forgetting can be tested on tokio's paused clock.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use nix::sys::signal::Signal;
use tokio::sync::{mpsc, watch};

use super::{
    ControlInner, INPUT_CHANNEL_WRITES, OUTPUT_CHANNEL_CHUNKS, Prepared, ProcessControl,
    ProcessExit, PtyError, SpawnSpec, SpawnedProcess, Spawner, TermSize, Tree,
};

/// Pids of scripted processes: above any pid Linux gives (`pid_max` is at most 2^22), so that
/// nothing real is ever signalled by mistake.
const FIRST_PID: u32 = 1 << 30;

/// Spawns [`ScriptedProcess`]es and hands each to the test.
#[derive(Debug)]
pub(crate) struct ScriptedSpawner {
    spawned: mpsc::UnboundedSender<ScriptedProcess>,
    next_pid: AtomicU32,
}

impl ScriptedSpawner {
    /// A spawner, and where the test receives each process it spawns, in spawn order.
    #[must_use]
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<ScriptedProcess>) {
        let (hand_over, receiver) = mpsc::unbounded_channel();
        let this = Self {
            spawned: hand_over,
            next_pid: AtomicU32::new(FIRST_PID),
        };
        (this, receiver)
    }
}

impl Spawner for ScriptedSpawner {
    fn spawn(&self, prepared: Prepared<'_>) -> Result<SpawnedProcess, PtyError> {
        let spec = prepared.spec.clone();
        let pid = self.next_pid.fetch_add(1, Ordering::Relaxed);
        let (output_tx, output) = mpsc::channel(OUTPUT_CHANNEL_CHUNKS);
        let (exit_tx, exit) = watch::channel(None);
        let (input, input_rx) = mpsc::channel(INPUT_CHANNEL_WRITES);
        let shared = Arc::new(Shared {
            output: Mutex::new(Some(output_tx)),
            exit: exit_tx,
            signals: Mutex::new(Vec::new()),
            signals_after_release: Mutex::new(Vec::new()),
            ignored: Mutex::new(Vec::new()),
            reading: AtomicBool::new(false),
            program: program_of(&spec.command),
            released: AtomicBool::new(false),
            size: Mutex::new(spec.size),
        });
        let control = ProcessControl {
            inner: Arc::new(ControlInner {
                pid,
                call_id: spec.call_id.clone(),
                exit,
                input: Mutex::new(Some(input)),
                tree: Box::new(ScriptedTree(Arc::clone(&shared))),
            }),
        };
        let process = ScriptedProcess {
            spec,
            pid,
            input: input_rx,
            shared,
        };
        self.spawned
            .send(process)
            .map_err(|_| PtyError::Spawn("the test is no longer taking processes".into()))?;
        Ok(SpawnedProcess { output, control })
    }
}

/// What a scripted process and its control share.
#[derive(Debug)]
struct Shared {
    /// Its terminal's output, until it exits.
    output: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    exit: watch::Sender<Option<ProcessExit>>,
    signals: Mutex<Vec<Signal>>,
    /// Signals sent once its tree was let go: a real tree gets none (its pid may be reused).
    signals_after_release: Mutex<Vec<Signal>>,
    /// Signals it survives.
    ignored: Mutex<Vec<Signal>>,
    reading: AtomicBool,
    /// The program it plays: its command's first word, as `bash -c` would run it.
    program: String,
    released: AtomicBool,
    size: Mutex<TermSize>,
}

impl Shared {
    /// Ends the process: its exit is known and its terminal hangs up.
    fn end(&self, exit: ProcessExit) {
        self.exit.send_if_modified(|now| {
            let first = now.is_none();
            if first {
                *now = Some(exit);
            }
            first
        });
        self.output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn running(&self) -> bool {
        self.exit.borrow().is_none()
    }
}

/// A spawned process, as the test plays it.
#[derive(Debug)]
pub(crate) struct ScriptedProcess {
    /// What the core asked to spawn.
    pub(crate) spec: SpawnSpec,
    /// The pid its call shows (never a real process's).
    pub(crate) pid: u32,
    input: mpsc::Receiver<Vec<u8>>,
    shared: Arc<Shared>,
}

impl ScriptedProcess {
    /// Writes `bytes` to its terminal; waits while the call's channel is full, as a real
    /// process's write blocks. Nothing is written once it has exited.
    pub(crate) async fn print(&self, bytes: &[u8]) {
        let output = self
            .shared
            .output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(output) = output {
            let _ = output.send(bytes.to_vec()).await;
        }
    }

    /// Exits with `code` (its output ends with it).
    pub(crate) fn exit(&self, code: i32) {
        self.shared.end(ProcessExit::Code(code));
    }

    /// Whether it still runs.
    #[must_use]
    pub(crate) fn running(&self) -> bool {
        self.shared.running()
    }

    /// How it ended, if it has.
    #[must_use]
    pub(crate) fn exited(&self) -> Option<ProcessExit> {
        *self.shared.exit.borrow()
    }

    /// Makes it survive `signal` (it dies of every other one that ends a process).
    pub(crate) fn ignore(&self, signal: Signal) {
        self.shared
            .ignored
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(signal);
    }

    /// The signals sent to its tree so far, in order.
    #[must_use]
    pub(crate) fn signals(&self) -> Vec<Signal> {
        self.shared
            .signals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The signals the core tried to send after it let the tree go (a real tree would not
    /// have got them: they are a defect).
    #[must_use]
    pub(crate) fn signals_after_release(&self) -> Vec<Signal> {
        self.shared
            .signals_after_release
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Says whether it is blocked reading its terminal, as a prompt is.
    pub(crate) fn set_reading(&self, reading: bool) {
        self.shared.reading.store(reading, Ordering::Release);
    }

    /// The next bytes written to its terminal; `None` once the terminal is closed.
    pub(crate) async fn input(&mut self) -> Option<Vec<u8>> {
        self.input.recv().await
    }

    /// Whether the core has let its tree go (it would be reaped now).
    #[must_use]
    pub(crate) fn released(&self) -> bool {
        self.shared.released.load(Ordering::Acquire)
    }

    /// Its terminal's size.
    #[must_use]
    pub(crate) fn size(&self) -> TermSize {
        *self
            .shared
            .size
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

struct ScriptedTree(Arc<Shared>);

impl Tree for ScriptedTree {
    fn resize(&self, size: TermSize) -> Result<(), PtyError> {
        *self.0.size.lock().unwrap_or_else(PoisonError::into_inner) = size;
        Ok(())
    }

    fn terminal_hung_up(&self) -> bool {
        !self.0.running()
    }

    fn output_pending(&self) -> bool {
        false
    }

    fn close_terminal(&self) {}

    fn release(&self) {
        self.0.released.store(true, Ordering::Release);
    }

    /// As a real shell: reaped once it has exited and its tree was let go.
    fn is_reaped(&self) -> bool {
        self.0.released.load(Ordering::Acquire) && !self.0.running()
    }

    fn signal(&self, signal: Signal) {
        if self.0.released.load(Ordering::Acquire) {
            self.0
                .signals_after_release
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(signal);
        }
        if self.is_reaped() {
            return;
        }
        self.0
            .signals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(signal);
        let ignored = self
            .0
            .ignored
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&signal);
        let ends = matches!(
            signal,
            Signal::SIGTERM | Signal::SIGHUP | Signal::SIGKILL | Signal::SIGINT
        );
        if ends && (signal == Signal::SIGKILL || !ignored) {
            self.0.end(ProcessExit::Signal(signal as i32));
        }
    }

    fn reading_terminal(&self) -> super::waiting::TerminalRead {
        if self.0.running() && self.0.reading.load(Ordering::Acquire) {
            super::waiting::TerminalRead::Waits
        } else {
            super::waiting::TerminalRead::No
        }
    }

    fn foreground_program(&self) -> Option<String> {
        self.0.running().then(|| self.0.program.clone())
    }

    fn alive(&self) -> bool {
        !self.is_reaped() && self.0.running()
    }
}

/// The name a command's first word runs under (`/usr/bin/vim notes` → `vim`).
fn program_of(command: &str) -> String {
    let first = command.split_whitespace().next().unwrap_or("bash");
    first.rsplit('/').next().unwrap_or(first).to_owned()
}
