//! The call runner: one bash call from spawn to its result.
//!
//! A [`CallRunner`] owns the process while it is a call. It routes every chunk to the call's
//! [`OutputSink`] (log file, screen) and to the result text, answers the registry's `Pid` and
//! `Detach` messages, and ends on completion, timeout or detach. On detach it stops consuming at
//! a chunk boundary and hands the process over with its unread chunks still queued, so the text
//! before the marker and the task's later output add up to exactly what the process wrote.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::output::{CappedText, OutputSink, TextCleaner};
use crate::pty::{ProcessControl, ProcessExit, ProcessStream, SpawnedProcess, StreamEvent};
use crate::registry::{CallMessage, DetachRequest, DetachedProcess, Registration};

/// What a detached call's text says of the output it left out: the task's output is read from
/// there (see [`CallResult::omitted_from`]).
const READ_ON_FROM_THEM: &str = "the task's output is read on from them";

/// How long a call waits for the PTY's end of file after the shell exited.
pub(crate) const DEFAULT_EXIT_GRACE: Duration = Duration::from_millis(300);

/// The text appended to a detached call's output: exactly this, as the registry's contract says.
#[must_use]
pub(crate) fn detach_marker(task_id: &str, reason: &str) -> String {
    format!("\n\n[Detached to background task {task_id}: {reason}]")
}

/// Records a chunk and writes the answers to its queries back to the process.
pub(crate) async fn route_chunk(sink: &OutputSink, control: &ProcessControl, chunk: &[u8]) {
    let answers = sink.record(chunk);
    if !answers.is_empty() {
        // A process that ended cannot be answered; nothing is lost by ignoring that.
        let _ = control.write(answers).await;
    }
}

/// Ends, in the background, what is left of a tree whose shell has ended (background jobs, a
/// grandchild holding the PTY): only detached tasks outlive their call. Then the tree is
/// released: it is never signalled again.
pub(crate) fn end_leftovers(control: &ProcessControl, grace: Duration) {
    let ended = Ended {
        control: control.clone(),
        grace,
        runtime: tokio::runtime::Handle::current(),
    };
    if let Err(std::sync::mpsc::SendError(ended)) = sweeper().send(ended) {
        // No sweeper thread (it could not be started): this tree is looked at alone.
        ended.runtime.spawn(async move {
            let control = ended.control;
            let looking = control.clone();
            if tokio::task::spawn_blocking(move || looking.tree_alive())
                .await
                .unwrap_or(true)
            {
                control.kill_tree(ended.grace).await;
            }
            control.release();
        });
    }
}

/// A tree whose shell ended, waiting to be looked at.
struct Ended {
    control: ProcessControl,
    grace: Duration,
    /// Where its kill runs, if it needs one.
    runtime: tokio::runtime::Handle,
}

/// How long the sweeper gathers trees before one look at /proc for all of them: calls ending
/// together (an agent's burst of quick commands) share one read of every process's status.
const SWEEP_GATHER: Duration = Duration::from_millis(50);

/// The thread that looks for what ended trees left running. Looking reads all of /proc, so it
/// is done once for the trees that ended within [`SWEEP_GATHER`], off the results' path.
fn sweeper() -> std::sync::mpsc::Sender<Ended> {
    static SWEEPER: std::sync::OnceLock<std::sync::mpsc::Sender<Ended>> =
        std::sync::OnceLock::new();
    SWEEPER
        .get_or_init(|| {
            let (send, receive) = std::sync::mpsc::channel::<Ended>();
            let started = std::thread::Builder::new()
                .name("oino-sweep".into())
                .spawn(move || {
                    while let Ok(first) = receive.recv() {
                        let mut batch = vec![first];
                        let until = std::time::Instant::now() + SWEEP_GATHER;
                        while let Some(left) =
                            until.checked_duration_since(std::time::Instant::now())
                        {
                            match receive.recv_timeout(left) {
                                Ok(ended) => batch.push(ended),
                                Err(_) => break,
                            }
                        }
                        sweep(batch);
                    }
                });
            if started.is_err() {
                // A sender whose receiver is gone: every tree is then looked at alone.
                return std::sync::mpsc::channel().0;
            }
            send
        })
        .clone()
}

fn sweep(batch: Vec<Ended>) {
    let controls: Vec<ProcessControl> = batch.iter().map(|ended| ended.control.clone()).collect();
    let alive = ProcessControl::alive_trees(&controls);
    for (ended, alive) in batch.into_iter().zip(alive) {
        if alive {
            let Ended {
                control,
                grace,
                runtime,
            } = ended;
            runtime.spawn(async move {
                control.kill_tree(grace).await;
                control.release();
            });
        } else {
            ended.control.release();
        }
    }
}

/// What happens when a call's timeout passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutPolicy {
    /// Kill the process tree and say so in the result.
    #[default]
    Kill,
    /// Detach the call into a background task.
    Detach,
}

/// What the waiter of a call does when the call waits for someone to type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputPolicy {
    /// Keep waiting: someone answers in the interface, or with `oino send`.
    #[default]
    Wait,
    /// Detach it into a task and return with the output so far (its prompt last).
    Detach,
    /// Kill it.
    Kill,
}

/// How one call runs.
#[derive(Clone, Debug)]
pub struct CallOptions {
    /// How long its waiter waits; `None` for as long as it runs.
    pub timeout: Option<Duration>,
    /// What happens once the timeout passes.
    pub on_timeout: TimeoutPolicy,
    /// What happens once it waits for someone to type.
    pub on_input: InputPolicy,
    /// The cap of the result text, in bytes; past it, a head and a tail of half the cap each.
    pub max_result_bytes: usize,
    /// How long it waits for its PTY's end of file once the shell exited.
    pub exit_grace: Duration,
    /// How long a killed tree gets between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Where the shell writes its folder as it ends, for a call whose result says it.
    pub folder_file: Option<PathBuf>,
    /// The text ends with a line saying how a failed command ended (`[exit code 3]`); off for a
    /// waiter that says it apart from the output.
    pub exit_note: bool,
}

impl Default for CallOptions {
    fn default() -> Self {
        Self {
            timeout: None,
            on_timeout: TimeoutPolicy::Kill,
            on_input: InputPolicy::Wait,
            max_result_bytes: crate::output::DEFAULT_MAX_RESULT_BYTES,
            exit_grace: DEFAULT_EXIT_GRACE,
            kill_grace: crate::pty::DEFAULT_KILL_GRACE,
            folder_file: None,
            exit_note: true,
        }
    }
}

/// The task a call was detached to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetachedTo {
    /// The task's id (`t3`).
    pub task_id: String,
    /// Why: the words of a detach, the timeout, `waiting for input: PROMPT`, or
    /// `PROGRAM (full screen) waits for keys`.
    pub reason: String,
    /// Why, as a front end decides on it (the words are for people).
    pub cause: DetachCause,
}

pub use crate::registry::DetachCause;

/// What a call returns to its waiter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallResult {
    /// The output as clean text, capped (past the cap, a head and a tail and a line saying what was
    /// left out), then a line on how it failed, or the detach marker.
    pub text: String,
    /// It failed: a non-zero exit, a signal, or a timeout that killed it (a detach is no error).
    pub is_error: bool,
    /// How the shell ended; `None` when detached (it still runs).
    pub exit: Option<ProcessExit>,
    /// Its timeout passed: it was killed, or detached.
    pub timed_out: bool,
    /// The task it became, when it was detached.
    pub detached: Option<DetachedTo>,
    /// The complete output, when the text was cut.
    pub full_output_path: Option<PathBuf>,
    /// Why the log could not be written (the output is then kept in memory, its newest part).
    pub log_error: Option<String>,
    /// What the log's cap left out, once it did.
    pub log_cut: Option<crate::output::LogCut>,
    /// When the text was cut and the call detached: the raw offset where what the text left
    /// out begins, so that the task's output can be read on from there.
    pub omitted_from: Option<u64>,
    /// The shell's folder when it ended, for a call that asked for it.
    pub folder: Option<PathBuf>,
}

impl CallResult {
    /// The status `oino run` exits with: the command's, 124 after a timeout, 0 when detached.
    #[must_use]
    pub fn exit_status(&self) -> i32 {
        if self.detached.is_some() {
            0
        } else if self.timed_out {
            124
        } else {
            self.exit.map_or(1, ProcessExit::shell_status)
        }
    }
}

/// How a call ended.
#[derive(Debug)]
pub(crate) enum CallEnd {
    /// The process ended (by itself, or killed at its timeout).
    Finished(CallResult),
    /// Detached through the registry: the process went to the requester.
    Detached(CallResult),
    /// Its timeout passed under [`TimeoutPolicy::Detach`]: the owner makes it a task.
    TimedOut {
        detached: DetachedProcess,
        timeout: Duration,
        /// Where the output its text left out begins, when it was cut.
        omitted_from: Option<u64>,
    },
}

/// Runs one call to its end.
pub(crate) struct CallRunner {
    stream: ProcessStream,
    sink: Arc<OutputSink>,
    messages: mpsc::UnboundedReceiver<CallMessage>,
    registration: Registration,
    options: CallOptions,
    cleaner: TextCleaner,
    text: CappedText,
    scratch: String,
    /// The raw bytes of output consumed.
    raw_seen: u64,
}

impl CallRunner {
    #[must_use]
    pub(crate) fn new(
        process: SpawnedProcess,
        sink: Arc<OutputSink>,
        (registration, messages): (Registration, mpsc::UnboundedReceiver<CallMessage>),
        options: CallOptions,
    ) -> Self {
        Self {
            stream: ProcessStream::new(process, options.exit_grace),
            messages,
            registration,
            text: CappedText::new(options.max_result_bytes),
            cleaner: TextCleaner::new(sink.width()),
            raw_seen: sink.readable(),
            sink,
            options,
            scratch: String::new(),
        }
    }

    pub async fn run(mut self) -> CallEnd {
        let deadline = self
            .options
            .timeout
            .map(|timeout| tokio::time::Instant::now() + timeout);
        loop {
            tokio::select! {
                // Messages first: a detach is served at the next chunk boundary even in a flood.
                biased;
                Some(message) = self.messages.recv() => match message {
                    CallMessage::Pid(reply) => {
                        let _ = reply.send(Some(self.stream.control().pid()));
                    }
                    CallMessage::Detach(request) => match self.detach(request) {
                        Ok(end) => return end,
                        Err(runner) => self = *runner,
                    },
                },
                event = self.stream.next() => match event {
                    StreamEvent::Output(chunk) => self.consume(&chunk).await,
                    StreamEvent::Ended(exit) => return CallEnd::Finished(self.finish(exit, false)),
                },
                () = crate::time::sleep_until_opt(deadline), if deadline.is_some() => {
                    return self.time_out().await;
                }
            }
        }
    }

    async fn consume(&mut self, chunk: &[u8]) {
        route_chunk(&self.sink, self.stream.control(), chunk).await;
        self.cleaner.set_width(self.sink.width());
        let from = self.raw_seen;
        self.raw_seen += chunk.len() as u64;
        if !self.text.wants_marks() {
            self.cleaner.push(chunk, &mut self.scratch);
            self.text.push(&self.scratch);
            self.scratch.clear();
            return;
        }
        // Line by line while the head may still end here: where the text is cut, the raw offset
        // of the first line left out is known exactly.
        let mut start = 0;
        for piece in chunk.split_inclusive(|byte| *byte == b'\n') {
            start += piece.len();
            self.cleaner.push(piece, &mut self.scratch);
            // Only a piece that ends a line is all in the text: the cleaner holds a line's start.
            if piece.ends_with(b"\n") {
                self.text.push_at(&self.scratch, from + start as u64);
            } else {
                self.text.push(&self.scratch);
            }
            self.scratch.clear();
        }
    }

    /// Where the whole output is, when the text had to be cut and the log could be written
    /// whole.
    fn full_output(&self, log_error: Option<&String>) -> Option<PathBuf> {
        (self.text.is_cut() && log_error.is_none() && self.sink.log_cut().is_none())
            .then(|| self.sink.log_path().to_owned())
    }

    /// Ends `text` with what it must say of the log: that it could not be written, or what its
    /// cap left out.
    fn push_log_notes(&self, text: &mut String, log_error: Option<&String>) {
        if let Some(error) = log_error {
            push_note(text, &log_error_note(error));
        }
        if let Some(cut) = self.sink.log_cut() {
            push_note(text, &log_cut_note(&cut, self.sink.log_path()));
        }
    }

    /// The text so far (the unfinished line included, and a note when the log could not be
    /// written) and the log's path when it was cut; while a full-screen program is on, its
    /// screen's rows instead of its drawing.
    fn text_so_far(&self) -> (String, Option<PathBuf>) {
        let log_error = self.sink.log_error();
        if let Some(mut screen) = self.sink.full_screen_text() {
            self.push_log_notes(&mut screen, log_error.as_ref());
            return (screen, None);
        }
        let full_output = self.full_output(log_error.as_ref());
        let mut text = self
            .text
            .render_saying(full_output.as_deref(), Some(READ_ON_FROM_THEM));
        text.extend(self.cleaner.pending_line());
        self.push_log_notes(&mut text, log_error.as_ref());
        (text, full_output)
    }

    /// Hands the process to the requester; gives the runner back when the requester is gone.
    fn detach(self, request: DetachRequest) -> Result<CallEnd, Box<Self>> {
        let (output_so_far, full_output) = self.text_so_far();
        let detached = DetachedProcess {
            process: self.stream.into_process(),
            output_so_far: output_so_far.clone(),
            full_output_path: full_output.as_ref().map(|path| path.display().to_string()),
        };
        match request.reply.send(detached) {
            Ok(()) => Ok(CallEnd::Detached(CallResult {
                text: output_so_far + &detach_marker(&request.task_id, &request.reason),
                is_error: false,
                exit: None,
                timed_out: false,
                detached: Some(DetachedTo {
                    task_id: request.task_id,
                    reason: request.reason,
                    cause: request.cause,
                }),
                full_output_path: full_output,
                log_error: self.sink.log_error(),
                log_cut: self.sink.log_cut(),
                omitted_from: self.text.omitted_from(),
                folder: None,
            })),
            Err(detached) => Err(Box::new(Self {
                stream: ProcessStream::new(detached.process, self.options.exit_grace),
                sink: self.sink,
                messages: self.messages,
                registration: self.registration,
                options: self.options,
                cleaner: self.cleaner,
                text: self.text,
                scratch: self.scratch,
                raw_seen: self.raw_seen,
            })),
        }
    }

    async fn time_out(mut self) -> CallEnd {
        if self.options.on_timeout == TimeoutPolicy::Detach {
            let (output_so_far, full_output) = self.text_so_far();
            return CallEnd::TimedOut {
                timeout: self.options.timeout.unwrap_or_default(),
                omitted_from: self.text.omitted_from(),
                detached: DetachedProcess {
                    process: self.stream.into_process(),
                    output_so_far,
                    full_output_path: full_output.map(|path| path.display().to_string()),
                },
            };
        }
        let control = self.stream.control().clone();
        control.kill_tree(self.options.kill_grace).await;
        // The tree is gone: the PTY drains and closes.
        let exit = loop {
            match self.stream.next().await {
                StreamEvent::Output(chunk) => self.consume(&chunk).await,
                StreamEvent::Ended(exit) => break exit,
            }
        };
        CallEnd::Finished(self.finish(exit, true))
    }

    fn finish(mut self, exit: ProcessExit, timed_out: bool) -> CallResult {
        self.sink.settle();
        self.cleaner.finish(&mut self.scratch);
        self.text.push(&self.scratch);
        let log_error = self.sink.log_error();
        let full_output = self.full_output(log_error.as_ref());
        let mut text = self.text.render(full_output.as_deref());
        self.push_log_notes(&mut text, log_error.as_ref());
        let note = if timed_out {
            let seconds = self.options.timeout.unwrap_or_default().as_secs_f64();
            Some(format!(
                "[timed out after {seconds} s: the process and its children were killed]"
            ))
        } else if !exit.success() && self.options.exit_note {
            Some(format!("[{exit}]"))
        } else {
            None
        };
        if let Some(note) = note {
            push_note(&mut text, &note);
        }
        end_leftovers(self.stream.control(), self.options.kill_grace);
        drop(self.registration);
        CallResult {
            text,
            is_error: timed_out || !exit.success(),
            exit: Some(exit),
            timed_out,
            detached: None,
            full_output_path: full_output,
            log_error,
            log_cut: self.sink.log_cut(),
            omitted_from: None,
            folder: self.options.folder_file.as_deref().and_then(final_folder),
        }
    }
}

/// The command that runs `command` and, as its shell ends, writes the shell's folder to `file`
/// (an exit trap: the shell's own folder, not a child's; a command that sets its own exit trap
/// or `exec`s reports none).
#[must_use]
pub(crate) fn reporting_folder(command: &str, file: &Path) -> String {
    // `pwd`, not `$PWD`: a command may have assigned PWD without moving.
    let write = format!(
        "builtin pwd >| {} 2>/dev/null",
        shell_quoted(&file.to_string_lossy())
    );
    // On the command's first line: an error in it still names line 1.
    format!("trap {} EXIT; {command}", shell_quoted(&write))
}

/// The command a person or an agent gave, out of what [`reporting_folder`] made of it (a command
/// read back from /proc, as a survivor of a dead server is); any other as it is.
#[must_use]
pub(crate) fn without_folder_report(command: &str) -> &str {
    command
        .strip_prefix("trap 'builtin pwd >| ")
        .and_then(|rest| rest.split_once("' EXIT; "))
        .map_or(command, |(_, given)| given)
}

/// `text` as one word for bash, whatever it holds.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The folder a shell wrote to `file` as it ended; the file is removed.
fn final_folder(file: &Path) -> Option<PathBuf> {
    let bytes = crate::paths::read_regular_file(file, 64 * 1024).ok();
    let _ = std::fs::remove_file(file);
    let folder = String::from_utf8(bytes?).ok()?;
    let folder = folder.strip_suffix('\n')?;
    folder.starts_with('/').then(|| PathBuf::from(folder))
}

/// Ends the text with a line of its own.
fn push_note(text: &mut String, note: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(note);
}

/// The line a result gets when its log reached its cap.
#[must_use]
pub(crate) fn log_cut_note(cut: &crate::output::LogCut, path: &std::path::Path) -> String {
    format!(
        "[{cut}; what is kept: {} and the .N.log files beside it]",
        path.display()
    )
}

/// The line a result gets when its log could not be written.
#[must_use]
pub(crate) fn log_error_note(error: &str) -> String {
    format!("[oino could not write this call's log ({error})]")
}
