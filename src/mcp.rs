//! The agent bridge: `oino mcp`, an MCP server on standard input and output whose tools run an
//! agent's shell commands as calls of the oino server, so that a person watching any attached
//! interface sees them live and can detach one that would block the agent.
//!
//! The bridge holds no processes: every tool is a request to the server (started when none
//! answers). A server that went away is noticed before each tool call and replaced; a call that
//! was running on it ends with an error that says so.

mod notices;
mod reader;
mod results;
mod tools;
mod transport;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[allow(deprecated)] // MCP's logging: see `log_end`.
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressToken, RequestId, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};

use crate::call::{CallOptions, InputPolicy};
use crate::core::{CallRequest, CoreEvent, EntryInfo, EntryKind, ErrorCode};
use crate::link::{DetachWhen, Link, LinkError, LinkEvent, RunResult};
use crate::remote::address::Address;
use crate::remote::protocol::requests as ask;
use reader::{OutputReader, task_label};
use results::{bash_result, ended_note, report_progress, task_line};
use tools::{BashArgs, INSTRUCTIONS, TaskArgs, TaskInputArgs, TaskListArgs, TaskOutputArgs, Waits};

/// A bash call's timeout when the agent gives none.
const DEFAULT_TIMEOUT_MS: u64 = 10 * 60 * 1000;
/// The longest timeout a bash call may ask for.
const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// Text returned by `task_output` when the agent gives no `max_bytes`.
const DEFAULT_OUTPUT_BYTES: usize = 30_000;
/// What `task_output` reads at a time looking for a pattern (of which it keeps the newest).
const PATTERN_PIECE_BYTES: usize = 64 * 1024;
/// The most `task_output` returns at once, whatever is asked.
const MAX_OUTPUT_BYTES: usize = 1 << 20;
/// How long `task_output` waits at most, whatever is asked: clients give up on long calls.
const MAX_WAIT_MS: u64 = 10 * 60 * 1000;
/// How long `task_output` with `idle_ms` and no `wait_ms` waits at most: under the 60 s after
/// which common clients give up on a request.
const DEFAULT_IDLE_WAIT_MS: u64 = 50_000;

/// A tool call that failed, in words the model can act on.
#[derive(Debug)]
struct ToolError(String);

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self(message.to_owned())
    }
}

type ToolResult = Result<CallToolResult, ToolError>;

/// The bridge: the MCP side of one agent.
pub(crate) struct Bridge {
    server: Address,
    /// When a call that says nothing of it is detached (`oino mcp --detach-after`).
    detach_after: Option<Duration>,
    link: tokio::sync::Mutex<Option<Link>>,
    /// The folder the agent's shell is in: where the last call that gave none ended
    /// (`None`: the bridge's own).
    folder: std::sync::Mutex<Option<PathBuf>>,
    /// Per entry id, the raw offset up to which this bridge has returned its output.
    cursors: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    /// The tasks whose end the agent is to be told of.
    watched: Arc<notices::Watched>,
    /// The client, for messages sent outside a tool's result.
    peer: Arc<std::sync::Mutex<Option<Peer<RoleServer>>>>,
    /// Whether the server's events are followed for ends to log.
    following_ends: Arc<AtomicBool>,
    /// The least severity of log message the client asked for, as a rank in `LOG_LEVELS`
    /// (every one, when it did not ask).
    log_level: Arc<std::sync::Mutex<Option<usize>>>,
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Serves MCP on standard input and output until the client closes it (or a signal). The server
/// ends the calls the bridge still waited for, as their connections close; tasks keep running.
pub async fn serve(address: Address, detach_after: Option<Duration>) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    use tokio::signal::unix::{SignalKind, signal};
    if std::io::stdin().is_terminal() {
        eprintln!(
            "oino mcp: waiting for an MCP client on standard input; it is meant to be started by \
             an agent (see `oino mcp --help`). Ctrl-C ends it."
        );
    }
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let (transport, input_ended) = transport::lines(tokio::io::stdin(), tokio::io::stdout());
    let serving = async {
        let service = Bridge::new(address, detach_after).serve(transport).await?;
        service.waiting().await?;
        anyhow::Ok(())
    };
    // The end of the input (the agent went), or a signal, ends it at once, from the handshake on:
    // the calls it waited for end as their connections close with the process.
    tokio::select! {
        biased;
        () = input_ended.wait() => Ok(()),
        _ = terminate.recv() => Ok(()),
        _ = interrupt.recv() => Ok(()),
        served = serving => served,
    }
}

impl Bridge {
    /// A bridge to `server`; `detach_after`, the detach of a call that gives none.
    #[must_use]
    pub fn new(server: Address, detach_after: Option<Duration>) -> Self {
        Self {
            server,
            detach_after,
            link: tokio::sync::Mutex::new(None),
            folder: std::sync::Mutex::default(),
            cursors: std::sync::Mutex::default(),
            watched: Arc::default(),
            peer: Arc::default(),
            following_ends: Arc::default(),
            log_level: Arc::default(),
        }
    }

    /// The link to the server, checked; a new one (starting a server) when the old one is gone.
    async fn link(&self) -> Result<Link, ToolError> {
        let mut slot = self.link.lock().await;
        if let Some(link) = slot.as_ref() {
            if link.ping().await.is_ok() {
                return Ok(link.clone());
            }
        }
        if slot.take().is_some() {
            // A new server: ids start again, so the old offsets and ends mean nothing there.
            lock(&self.cursors).clear();
            self.following_ends.store(false, Ordering::Release);
        }
        let link = Link::remote(&self.server).await.map_err(|err| {
            format!(
                "cannot reach the oino server at {}: {err:#}",
                crate::inert::escaped(&self.server.to_string())
            )
        })?;
        *slot = Some(link.clone());
        Ok(link)
    }

    /// The link as it is, unchecked (a new one when there is none): for a `run`, which is sent
    /// on a connection of its own and tried once more on a new server when it could not be.
    async fn link_unchecked(&self) -> Result<Link, ToolError> {
        if let Some(link) = self.link.lock().await.as_ref() {
            return Ok(link.clone());
        }
        self.link().await
    }

    /// Says what went wrong with a request: the server's refusal as it gave it, or the server
    /// gone (the next tool call starts a new one).
    fn failure(doing: &str, err: &LinkError) -> ToolError {
        if err.code().is_some() {
            let advice = if err.data().left_by_server.is_some() {
                "; task_kill ends it"
            } else {
                ""
            };
            return ToolError(format!("{doing}: {err:#}{advice}"));
        }
        ToolError(format!(
            "{doing}: the oino server went away ({err:#}); it was stopped, restarted or killed. \
             Try again: a new server starts by itself (and lists what a killed one left running \
             as orphaned)."
        ))
    }

    async fn bash(&self, args: BashArgs, call: &ToolCall<'_>) -> ToolResult {
        let request_id = &call.context.id;
        let progress = call.progress.clone();
        let cancelled = call.context.ct.cancelled();
        let detach_on = args.checked()?;
        let mut notes = Vec::new();
        let request = self.bash_request(&args, request_id, &mut notes)?;
        let background = request.background;
        let started_in = request.cwd.clone();
        let began = std::time::Instant::now();
        let (link, id, result) = self.start(request).await?;
        // A background start is a task already: its result is there at once.
        let detach = DetachWhen {
            after: args
                .detach_after_ms
                .map(Duration::from_millis)
                .or(self.detach_after)
                .filter(|_| !background),
            on_line: detach_on.as_ref().filter(|_| !background),
            name: None,
        };
        let finished = tokio::select! {
            finished = link.finish_run(&id, result, detach, |_| {}) => finished,
            () = report_progress(&link, &id, progress) => unreachable!("progress reports go on"),
            () = cancelled => {
                // The agent stopped waiting (its user interrupted): end what it started.
                let _ = link.ask(ask::Kill { key: String::from(&id) }).await;
                return Err("cancelled: the command and everything it started were ended".into());
            }
        };
        let result = finished.map_err(|err| match err {
            // What it wrote is in its log: the agent gets it, and what to do next.
            LinkError::ServerGone(gone) => ToolError(format!(
                "{}\n\n[{gone}]",
                gone.output_so_far(crate::output::DEFAULT_MAX_RESULT_BYTES)
            )),
            err => Self::failure("the command's result was lost", &err),
        })?;
        let ran = notices::run_time(began.elapsed());
        if let Some(detached) = &result.detached {
            self.watch(&link, &id);
            if detached.cause == crate::call::DetachCause::Input {
                let task = format!("task {}", detached.task_id);
                self.log(notices::input_notice(&task, &detached.reason))
                    .await;
            }
            // The task's output is read on from what the capped text left out.
            if let Some(omitted_from) = result.omitted_from {
                self.advance_cursor(&id, omitted_from);
            }
        } else {
            notes.insert(0, ended_note(&result, &ran));
            notes.extend(self.moved_to(started_in.as_deref(), result.folder.as_deref()));
        }
        Ok(bash_result(&link, &id, result, (&ran, background), &notes).await)
    }

    /// The call a `bash` tool call asks for: in the bridge's folder unless it gives one (a
    /// relative one from there), its shell's last folder reported when it does not.
    fn bash_request(
        &self,
        args: &BashArgs,
        request_id: &RequestId,
        notes: &mut Vec<String>,
    ) -> Result<CallRequest, ToolError> {
        // The call id is the request's, made unique to this bridge (the agent's ids start
        // again with each session).
        // Any characters of a string request id that could break a line or a table are left out.
        let request_id: String = request_id
            .to_string()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .take(40)
            .collect();
        let background = args.run_in_background == Some(true);
        let here = self.folder(notes);
        let cwd = match args.cwd.clone().map(home_expanded) {
            Some(cwd) => Some(
                here.as_ref()
                    .map_or_else(|| cwd.clone(), |here| here.join(&cwd)),
            ),
            None => here,
        };
        let request = CallRequest {
            id: Some(format!("mcp{}-{request_id}", std::process::id())),
            cwd,
            // The task it may become is named after what it does.
            task_name: args
                .description
                .as_deref()
                .and_then(crate::core::tasks::name_from_words),
            title: args
                .description
                .clone()
                .filter(|title| !title.trim().is_empty()),
            options: CallOptions {
                timeout: Some(Duration::from_millis(
                    args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
                )),
                // A prompt would hold the agent until the timeout: it gets the prompt instead.
                on_input: InputPolicy::Detach,
                // Said in the notes, with the time it ran.
                exit_note: false,
                ..CallOptions::default()
            },
            background,
            // A folder given is for this call only; a `cd` in one that gives none carries over.
            report_folder: args.cwd.is_none() && !background,
            ..CallRequest::new(args.command.clone())
        };
        // On another machine, the far side's own environment (see `Link::from_here`).
        if self.server.transport().is_some() {
            return Ok(request);
        }
        request.from_here().map_err(|err| err.to_string().into())
    }

    /// The folder the agent's shell is in (`None`: the bridge's own); one removed since is let
    /// go, and a note says so.
    fn folder(&self, notes: &mut Vec<String>) -> Option<PathBuf> {
        let mut folder = lock(&self.folder);
        // A folder on another machine is that machine's to check.
        let here = self.server.transport().is_none();
        if let Some(gone) = folder.take_if(|folder| here && !folder.is_dir()) {
            let back = std::env::current_dir().unwrap_or_default();
            notes.push(format!(
                "[cwd: {} ({} no longer exists)]",
                shown_path(&back),
                shown_path(&gone)
            ));
        }
        folder.clone()
    }

    /// The note a call's last folder gets when it is not where the call started: it is where
    /// the next call runs. (Compared with the call's own start, not the bridge's folder now: of
    /// two calls run at once, one that did not `cd` undoes nothing.)
    fn moved_to(
        &self,
        started_in: Option<&std::path::Path>,
        last: Option<&std::path::Path>,
    ) -> Option<String> {
        let (started_in, last) = (started_in?, last?);
        let same = |a: &std::path::Path, b: &std::path::Path| {
            a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
        };
        if same(started_in, last) {
            return None;
        }
        *lock(&self.folder) = Some(last.to_owned());
        Some(format!("[cwd: {}]", shown_path(last)))
    }

    /// Starts an agent's call, on a new server when the old one stopped between the check and
    /// the call. Its id is made unique, and so is the task name from its description (`name`,
    /// `name-2`…): two calls described alike both run.
    async fn start(
        &self,
        mut request: CallRequest,
    ) -> Result<(Link, String, RunResult), ToolError> {
        const NAME_ATTEMPTS: u32 = 100;
        let mut base = request.task_name.clone();
        let mut link = self.link_unchecked().await?;
        let mut attempt = 1;
        loop {
            // A bridge of a former session (or another pid namespace) may have had this pid.
            let started = match link.run_unique(request.clone()).await {
                // The server stopped between the check and the call (a `kill-server` finishing):
                // nothing was sent, so once more on a new server.
                Err(LinkError::NotSent(_)) => {
                    *self.link.lock().await = None;
                    link = self.link().await?;
                    link.run_unique(request.clone()).await
                }
                started => started,
            };
            match started {
                Ok((id, result)) => return Ok((link, id, result)),
                Err(err) if base.is_some() => {
                    match err.code() {
                        Some(ErrorCode::DuplicateName) if attempt < NAME_ATTEMPTS => {
                            attempt += 1;
                            request.task_name =
                                base.as_ref().map(|base| format!("{base}-{attempt}"));
                        }
                        // A name that reads as an id once numbered: the task goes without.
                        Some(ErrorCode::InvalidName | ErrorCode::DuplicateName) => {
                            request.task_name = None;
                        }
                        _ => return Err(Self::failure("the command did not start", &err)),
                    }
                    if request.task_name.is_none() {
                        base = None;
                    }
                }
                Err(err) => return Err(Self::failure("the command did not start", &err)),
            }
        }
    }

    async fn task_output(&self, args: TaskOutputArgs, call: &ToolCall<'_>) -> ToolResult {
        let cancelled = call.context.ct.cancelled();
        let Waits {
            pattern,
            max_bytes,
            idle,
            wait,
        } = args.waits()?;
        let link = self.link().await?;
        let entry = self.task(&link, &args.task).await?;
        if let Some(since) = args.since.filter(|since| *since > entry.bytes) {
            return Err(format!(
                "`since` is {since}, past the end of {}'s output, which is at {} now: pass \
                 since={} for what comes next, or leave since out to read what you have not read",
                task_label(&entry),
                entry.bytes,
                entry.bytes
            )
            .into());
        }
        // What this bridge has not returned yet: from where its last read of the task stopped,
        // or where the task began (its output before went with the detached call's result).
        // A cursor past the end (one of a server that was restarted) reads from the end.
        let since = args
            .since
            .unwrap_or_else(|| self.cursor(&entry.id).unwrap_or(entry.detach_offset))
            .min(entry.bytes);
        let deadline = tokio::time::Instant::now() + wait;
        let mut reader = OutputReader::new(since, max_bytes, pattern);
        let read = |err: LinkError| Self::failure("reading the output failed", &err);
        let mut follower = link.follow(&entry.id, since);
        let reading = reader::read_until(&mut follower, &mut reader, deadline, idle);
        // A read the agent gave up on (its client's timeout, a cancel) returns nothing: the
        // cursor stays where the agent last got output.
        let outcome = tokio::select! {
            outcome = reading => outcome.map_err(read)?,
            () = cancelled => return Err("cancelled: nothing was read".into()),
        };
        self.advance_cursor(&entry.id, reader.next_offset);
        let entry = link
            .ask(ask::Entry {
                key: String::from(&entry.id),
            })
            .await
            .map_err(read)?;
        self.watch(&link, &entry.id);
        if !entry.state.is_running() {
            self.watched.told(&entry.id);
        }
        if let reader::Waited::Prompt(prompt) = &outcome {
            let reason = format!("waiting for input: {prompt}");
            self.log(notices::input_notice(&task_label(&entry), &reason))
                .await;
        }
        Ok(CallToolResult::success(reader.render(
            &entry,
            (&outcome, wait),
            crate::time::now_ms(),
        )))
    }

    /// Where this bridge's reads of the entry `id` stopped.
    fn cursor(&self, id: &str) -> Option<u64> {
        lock(&self.cursors).get(id).copied()
    }

    /// Moves the entry's cursor on to `offset` (never back: a read of older output with
    /// `since` leaves what is new unread).
    fn advance_cursor(&self, id: &str, offset: u64) {
        let mut cursors = lock(&self.cursors);
        let cursor = cursors.entry(id.to_owned()).or_insert(offset);
        *cursor = (*cursor).max(offset);
    }

    async fn task_screen(&self, args: TaskArgs, _: &ToolCall<'_>) -> ToolResult {
        let link = self.link().await?;
        let entry = self.task(&link, &args.task).await?;
        self.watch(&link, &entry.id);
        let view = link
            .ask(ask::Snapshot {
                key: String::from(&entry.id),
                size: None,
            })
            .await
            .map_err(|err| Self::failure("reading the screen failed", &err))?
            .view();
        let mut content = Vec::new();
        // The very text a full-screen call detached with.
        let shown = view.shown_text();
        if !shown.is_empty() {
            content.push(ContentBlock::text(shown));
        }
        content.push(ContentBlock::text(format!(
            "[screen of {}: {} · {} · {}]\n",
            task_label(&entry),
            view.summary(),
            entry.state,
            reader::ran_words(&entry, crate::time::now_ms())
        )));
        Ok(CallToolResult::success(content))
    }

    async fn task_list(&self, args: TaskListArgs, _: &ToolCall<'_>) -> ToolResult {
        let all = args.all == Some(true);
        let link = self.link().await?;
        let entries = link
            .ask(ask::List {})
            .await
            .map_err(|err| Self::failure("listing the tasks failed", &err))?;
        let mut tasks: Vec<&EntryInfo> = entries
            .iter()
            .filter(|entry| entry.kind == EntryKind::Task)
            .filter(|entry| all || self.watched.is_watched(&entry.id))
            .collect();
        // Waiting for input first, then running, then ended; the newest first within each.
        tasks.sort_by_key(|entry| {
            let rank = match (entry.state.is_running(), entry.waiting_for_input.is_some()) {
                (true, true) => 0,
                (true, false) => 1,
                (false, _) => 2,
            };
            (rank, std::cmp::Reverse(entry.started_ms))
        });
        let mut text = String::new();
        let mut shown = 0;
        for entry in &tasks {
            let shown_line = task_line(entry);
            if text.len() + shown_line.len() + 1 > DEFAULT_OUTPUT_BYTES {
                break;
            }
            text.push_str(&shown_line);
            text.push('\n');
            shown += 1;
        }
        let hidden = entries
            .iter()
            .filter(|entry| entry.kind == EntryKind::Task)
            .count()
            - tasks.len();
        if shown < tasks.len() {
            let left = &tasks[shown..];
            let running = left.iter().filter(|entry| entry.state.is_running()).count();
            let _ = writeln!(
                text,
                "[{} more not shown ({running} running, {} ended, the oldest last): task_output \
                 reads any by id; task_kill ends any]",
                left.len(),
                left.len() - running
            );
        }
        if hidden > 0 {
            let _ = writeln!(
                text,
                "[{hidden} more tasks of the server, not started or read by you: \
                 task_list {{\"all\": true}} lists them]"
            );
        }
        if text.is_empty() {
            text.push_str(
                "No background tasks. A bash call becomes one when it is detached \
                 (run_in_background, detach_after_ms, or by the person watching).",
            );
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }

    async fn task_kill(&self, args: TaskArgs, _: &ToolCall<'_>) -> ToolResult {
        let link = self.link().await?;
        let entry = self.task(&link, &args.task).await?;
        let label = task_label(&entry);
        // The answer says how it ended: no notice is owed after it.
        self.watched.told(&entry.id);
        if !entry.state.is_running() {
            return Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "{label} had already ended ({}).",
                entry.state
            ))]));
        }
        let killed = link
            .ask(ask::Kill {
                key: String::from(&entry.id),
            })
            .await
            .map_err(|err| Self::failure("killing the task failed", &err))?;
        let state = killed.state;
        let processes = match killed.processes {
            0 | 1 => String::new(),
            count => format!(", {count} processes"),
        };
        let text = if state.is_running() {
            format!("{label} was sent SIGKILL but has not ended yet: check with task_list.")
        } else {
            let entry = link
                .ask(ask::Entry {
                    key: String::from(&entry.id),
                })
                .await
                .unwrap_or(entry);
            let ran = reader::ran_words(&entry, crate::time::now_ms());
            format!("{label} ended, with everything it started ({state}, after {ran}{processes}).")
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }

    async fn task_input(&self, args: TaskInputArgs, _: &ToolCall<'_>) -> ToolResult {
        let mut bytes = args.text.into_bytes();
        if args.enter.unwrap_or(true) {
            bytes.push(b'\r');
        }
        if bytes.is_empty() {
            return Err(
                "nothing to type: give `text`, or leave `enter` true to press Enter".into(),
            );
        }
        let link = self.link().await?;
        let entry = self.task(&link, &args.task).await?;
        let label = task_label(&entry);
        self.watch(&link, &entry.id);
        if !entry.state.is_running() {
            self.watched.told(&entry.id);
            return Err(format!(
                "{label} has ended ({}): it reads no more input",
                entry.state
            )
            .into());
        }
        let count = bytes.len();
        link.ask(ask::Send::bytes(&entry.id, bytes))
            .await
            .map_err(|err| Self::failure("typing into the task failed", &err))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "Typed {count} bytes into {label}. Read its answer with task_output {{\"task\": \"{}\", \
             \"idle_ms\": 500}}.",
            entry.task_id.as_deref().unwrap_or(&entry.id),
        ))]))
    }

    /// From now on the end of entry `id` is told to the agent: in its next tool result, and as
    /// a log message when it happens.
    fn watch(&self, link: &Link, id: &str) {
        self.watched.watch(id);
        if self.following_ends.swap(true, Ordering::AcqRel) {
            return;
        }
        let link = link.clone();
        let watched = Arc::clone(&self.watched);
        let peer = Arc::clone(&self.peer);
        let following = Arc::clone(&self.following_ends);
        let level = Arc::clone(&self.log_level);
        tokio::spawn(async move {
            if let Ok(mut events) = link.events().await {
                loop {
                    match events.recv().await {
                        LinkEvent::Core(CoreEvent::Ended { id, .. }) if watched.log_end(&id) => {
                            let Ok(entry) = link
                                .ask(ask::Entry {
                                    key: String::from(&id),
                                })
                                .await
                            else {
                                continue;
                            };
                            let peer = lock(&peer).clone();
                            let least = *lock(&level);
                            if let Some(peer) = peer {
                                log_end(&peer, least, &entry).await;
                            }
                        }
                        LinkEvent::Closed => break,
                        _ => {}
                    }
                }
            }
            // The server went: the next watch follows the new one.
            following.store(false, Ordering::Release);
        });
    }

    /// Tells the client `message` as a log message (for clients that show those), unless it
    /// asked for more severe ones only.
    async fn log(&self, message: String) {
        let peer = lock(&self.peer).clone();
        let least = *lock(&self.log_level);
        if let Some(peer) = peer {
            log_notice(&peer, least, message).await;
        }
    }

    /// Adds to `result` the ends of watched tasks not told yet, but that of the task the result
    /// is about (`about`, its id or name): its state line was read before, and may say it runs;
    /// its end is told in the next result.
    async fn add_end_notices(&self, result: &mut CallToolResult, about: Option<&str>) {
        if !self.watched.any_untold() {
            return;
        }
        let Some(link) = self.link.lock().await.clone() else {
            return;
        };
        let Ok(entries) = link.ask(ask::List {}).await else {
            return;
        };
        let notices = self.watched.notices(&entries, about);
        if !notices.is_empty() {
            result.content.push(ContentBlock::text(notices.join("\n")));
        }
    }

    /// The task `key` names, or an error that says how to find one.
    async fn task(&self, link: &Link, key: &str) -> Result<EntryInfo, ToolError> {
        let entry = link
            .ask(ask::Entry {
                key: String::from(key),
            })
            .await
            .map_err(|err| match err.code() {
                Some(ErrorCode::NoSuchEntry) => ToolError(format!(
                    "no task `{key}`: task_list shows the tasks there are"
                )),
                Some(_) => ToolError(format!("{err:#}")),
                None => Self::failure("finding the task failed", &err),
            })?;
        if entry.kind == EntryKind::Call {
            return Err(format!(
                "`{key}` is a call that someone waits for, not a background task: it becomes \
                 one when detached (task_list shows the tasks there are)"
            )
            .into());
        }
        Ok(entry)
    }
}

/// MCP's log levels, least severe first.
#[allow(deprecated)] // MCP's logging is deprecated in favour of nothing yet; clients show it.
const LOG_LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

/// Tells the client that a task ended, as a log message (for clients that show those), unless
/// it asked for more severe messages only.
async fn log_end(peer: &Peer<RoleServer>, least: Option<usize>, entry: &EntryInfo) {
    log_notice(peer, least, notices::end_notice(entry)).await;
}

/// Sends `message` as a log message of level notice, unless the client asked for more severe
/// messages only.
#[allow(deprecated)] // See `LOG_LEVELS`.
async fn log_notice(peer: &Peer<RoleServer>, least: Option<usize>, message: String) {
    let level = LoggingLevel::Notice;
    if least > LOG_LEVELS.iter().position(|known| *known == level) {
        return;
    }
    let message = LoggingMessageNotificationParam::new(level, serde_json::Value::String(message))
        .with_logger("oino");
    let _ = peer.notify_logging_message(message).await;
}

/// What a tool's handler has of its call besides its arguments.
struct ToolCall<'a> {
    context: &'a RequestContext<RoleServer>,
    /// Where to report progress, when the client asked for it.
    progress: Option<(Peer<RoleServer>, ProgressToken)>,
}

/// The tools, one table: each name (its handler's too), its arguments, its description, and
/// whether it only reads. `tools/list`, the calls and `oino mcp --help` all come from it.
macro_rules! tools {
    ($($name:ident($args:ty): $description:ident $(, $read_only:ident)?;)*) => {
        /// Every tool, as `tools/list` gives it.
        fn tools() -> Vec<Tool> {
            vec![$(tools::tool::<$args>(stringify!($name), tools::$description)
                $(.with_annotations(tools::$read_only()))?,)*]
        }

        /// The tools' names, in the table's order.
        const TOOL_NAMES: &[&str] = &[$(stringify!($name)),*];

        impl Bridge {
            /// Calls the tool `name` with `args`; `None` when there is no such tool.
            async fn call(
                &self,
                name: &str,
                args: Option<JsonObject>,
                call: &ToolCall<'_>,
            ) -> Option<ToolResult> {
                Some(match name {
                    $(stringify!($name) => match tools::arguments::<$args>(stringify!($name), args) {
                        Ok(args) => self.$name(args, call).await,
                        Err(err) => Err(err),
                    },)*
                    _ => return None,
                })
            }
        }
    };
}

tools! {
    bash(BashArgs): BASH_DESCRIPTION;
    task_output(TaskOutputArgs): TASK_OUTPUT_DESCRIPTION, read_only;
    task_screen(TaskArgs): TASK_SCREEN_DESCRIPTION, read_only;
    task_list(TaskListArgs): TASK_LIST_DESCRIPTION, read_only;
    task_kill(TaskArgs): TASK_KILL_DESCRIPTION;
    task_input(TaskInputArgs): TASK_INPUT_DESCRIPTION;
}

/// The names of the tools the bridge offers, in its order (`oino mcp --help` lists them).
#[must_use]
pub(crate) fn tool_names() -> Vec<String> {
    TOOL_NAMES.iter().map(|name| (*name).to_owned()).collect()
}

/// A folder as a result shows it: control characters escaped (a folder's name is anyone's).
pub(crate) fn shown_path(path: &std::path::Path) -> String {
    crate::inert::escaped(&path.to_string_lossy()).into_owned()
}

/// `~` and `~/…` as a shell would read them (a model writes them as it would in a shell).
fn home_expanded(path: PathBuf) -> PathBuf {
    let Some(home) = std::env::var_os("HOME") else {
        return path;
    };
    match path.strip_prefix("~") {
        Ok(rest) => PathBuf::from(home).join(rest),
        Err(_) => path,
    }
}

impl ServerHandler for Bridge {
    #[allow(deprecated)] // Logging: see `LOG_LEVELS`.
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("oino", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        *lock(&self.peer) = Some(context.peer.clone());
        let args = request.arguments;
        let about = args
            .as_ref()
            .and_then(|args| args.get("task"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        let call = ToolCall {
            progress: request
                .meta
                .as_ref()
                .and_then(rmcp::model::RequestMetaObject::get_progress_token)
                .or_else(|| context.meta.get_progress_token())
                .map(|token| (context.peer.clone(), token)),
            context: &context,
        };
        let Some(outcome) = self.call(request.name.as_ref(), args, &call).await else {
            return Err(ErrorData::invalid_params(
                format!(
                    "no tool `{}`: the tools are {}",
                    request.name,
                    TOOL_NAMES.join(", ")
                ),
                None,
            ));
        };
        let mut result = outcome.unwrap_or_else(|ToolError(message)| {
            CallToolResult::error(vec![ContentBlock::text(message)])
        });
        self.add_end_notices(&mut result, about.as_deref()).await;
        Ok(result.into())
    }

    #[allow(deprecated)] // MCP's logging: see `log_end`.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *lock(&self.log_level) = LOG_LEVELS.iter().position(|known| *known == request.level);
        Ok(())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod schema_tests;
