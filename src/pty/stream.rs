//! A process's output and exit as one ordered stream of events.

use std::time::Duration;

use tokio::sync::watch;

use super::{OUTPUT_CHANNEL_CHUNKS, ProcessControl, ProcessExit, SpawnedProcess};

/// What a [`ProcessStream`] yields.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// The next chunk of output.
    Output(Vec<u8>),
    /// The process is done: it exited and its output was drained, or it exited and the PTY
    /// stayed open (a grandchild holds it) past the grace.
    Ended(ProcessExit),
}

/// A process's output and exit, merged into one ordered stream. End of file and exit are separate
/// events: the stream ends when both are seen, or a grace after the exit, so that a grandchild
/// keeping the PTY open cannot hang its caller.
pub struct ProcessStream {
    process: SpawnedProcess,
    exit: watch::Receiver<Option<ProcessExit>>,
    exited: Option<ProcessExit>,
    end_of_file: bool,
    exit_grace: Duration,
    grace_deadline: Option<tokio::time::Instant>,
    /// When output still on its way after the exit stops being waited for.
    pending_deadline: Option<tokio::time::Instant>,
    /// Chunks still taken once the grace is over; the reader may go on refilling the channel.
    drain_after_grace: Option<usize>,
}

/// How long output still on its way after the exit is waited for, at least, while another
/// process holds the terminal (and may write forever): grace periods of it.
const PENDING_GRACES: u32 = 10;
const MIN_PENDING_WAIT: Duration = Duration::from_secs(3);

impl ProcessStream {
    #[must_use]
    pub fn new(process: SpawnedProcess, exit_grace: Duration) -> Self {
        let exit = process.control.exit_watch();
        Self {
            process,
            exit,
            exited: None,
            end_of_file: false,
            exit_grace,
            grace_deadline: None,
            pending_deadline: None,
            drain_after_grace: None,
        }
    }

    #[must_use]
    pub fn control(&self) -> &ProcessControl {
        &self.process.control
    }

    /// Gives the process back, with every chunk not yet yielded still in its channel.
    #[must_use]
    pub(crate) fn into_process(self) -> SpawnedProcess {
        self.process
    }

    fn note_exit(&mut self) {
        if self.exited.is_none() {
            let exit = *self.exit.borrow_and_update();
            if let Some(exit) = exit {
                self.exited = Some(exit);
                self.start_grace();
            }
        }
    }

    fn start_grace(&mut self) {
        let now = tokio::time::Instant::now();
        self.grace_deadline = Some(now + self.exit_grace);
        self.pending_deadline =
            Some(now + (self.exit_grace * PENDING_GRACES).max(MIN_PENDING_WAIT));
    }

    /// The grace is over and the end of file has not come: wait on while it is sure to come
    /// (nobody holds the terminal) or, for a while, while output is on its way; else stop.
    fn grace_over(&mut self) {
        let now = tokio::time::Instant::now();
        let control = &self.process.control;
        let waiting = control.terminal_hung_up()
            || (control.output_pending() && self.pending_deadline.is_some_and(|end| now < end));
        if waiting {
            // Looked at again a grace later: a terminal opened again is held again.
            self.grace_deadline = Some(now + self.exit_grace.max(Duration::from_millis(10)));
        } else {
            // Take what is already buffered, then stop waiting for an end of file that a
            // grandchild holds back.
            self.drain_after_grace = Some(OUTPUT_CHANNEL_CHUNKS);
        }
    }

    /// The next event. Cancel-safe: no chunk is lost when the future is dropped in a `select!`.
    pub async fn next(&mut self) -> StreamEvent {
        loop {
            self.note_exit();
            if let (true, Some(exit)) = (self.end_of_file, self.exited) {
                return StreamEvent::Ended(exit);
            }
            if let Some(left) = self.drain_after_grace {
                match self.process.output.try_recv() {
                    Ok(chunk) if left > 0 => {
                        self.drain_after_grace = Some(left - 1);
                        return StreamEvent::Output(chunk);
                    }
                    _ => {
                        self.end_of_file = true;
                        continue;
                    }
                }
            }
            let grace = self.grace_deadline;
            tokio::select! {
                biased;
                chunk = self.process.output.recv(), if !self.end_of_file => match chunk {
                    Some(chunk) => return StreamEvent::Output(chunk),
                    None => self.end_of_file = true,
                },
                changed = self.exit.changed(), if self.exited.is_none() => {
                    if changed.is_err() {
                        // The waiter thread is gone without a status: only after a panic.
                        self.exited = Some(ProcessExit::Code(-1));
                        self.start_grace();
                    }
                }
                () = crate::time::sleep_until_opt(grace), if grace.is_some() && !self.end_of_file => {
                    self.grace_over();
                }
            }
        }
    }
}
