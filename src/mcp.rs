//! The agent bridge: `oino mcp`, an MCP server on standard input and output whose tools run an
//! agent's shell commands as calls of the oino server, so that a person watching any attached
//! interface sees them live and can detach one that would block the agent.
//!
//! The bridge holds no processes: every tool is a request to the server (started when none
//! answers). A server that went away is noticed before each tool call and replaced; a call that
//! was running on it ends with an error that says so.

mod notices;
mod transport;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use regex::Regex;
#[allow(deprecated)] // MCP's logging: see `log_end`.
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, RequestId,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, Tool, ToolAnnotations,
};
use rmcp::schemars::JsonSchema;
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::call::{CallOptions, CallResult, InputPolicy};
use crate::core::{CallRequest, CoreEvent, EntryInfo, EntryKind, ErrorCode};
use crate::link::{DetachWhen, Link, LinkError, LinkEvent, RunResult};
use crate::output::{Followed, LineMatcher};

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

const INSTRUCTIONS: &str = "oino runs your shell commands in terminals that the person \
supervising you watches live. Use its `bash` tool for commands. A command that would block you \
(a dev server, a watcher, a long build) can be detached into a background task: by you \
(run_in_background, detach_after_ms) or by the person, at any time. A detached call returns at \
once with its output so far and a line `[Detached to background task tN: reason]`; the process \
keeps running. Follow it with task_output, see its screen with task_screen, type into it with \
task_input, end it with task_kill, and see every task with task_list.";

const BASH_DESCRIPTION: &str = "Run a shell command with `bash -c` in its own terminal, watched \
live by the person supervising you. Returns its output when it ends: stdout and stderr merged, as \
a terminal shows them, colors removed; past 30000 bytes the head and tail are kept, with the \
path of a file holding all of it. isError is true when it exits non-zero or times out \
(timeout_ms, default 600000, at most 86400000, kills it and all it started).\n\n\
Commands that do not end by themselves (dev servers, watchers, `tail -f`) or take long: \
run_in_background: true starts one straight as a background task; detach_after_ms turns the \
call into a task if it still runs after that long (keep it below your client's own request \
timeout, often 60000: a request the client gives up on is cancelled, which ends the command); \
detach_on, a regular expression, turns it into one the moment a line of output matches (a dev \
server: \"listening|ready\"). The person may also detach any call.\n\n\
A detached call returns at once: its output so far, then a line `[Detached to background task \
t3: reason]`. That is not an error and the process did not stop: it keeps running as task t3. \
Read what it writes next with task_output, see its screen with task_screen, type into it with \
task_input, stop it with task_kill. When it ends, a later result tells you once.\n\n\
Each call starts a fresh bash: `cd` and `export` do not carry over to the next call; pass cwd \
instead. Stdin is a terminal: a command that asks a question (a prompt, a password) returns \
detached after a second of waiting, with `waiting for input: PROMPT` as its reason; answer with \
task_input, or ask the person, who can type it in oino. Prefer non-interactive flags.";

const TASK_OUTPUT_DESCRIPTION: &str = "Read a background task's output (clean text; stdout \
and stderr merged, as a terminal shows them). Without `since`, returns what you have not read \
yet: on from where your last task_output of this task stopped (the first time, from where the \
task began, after its detach line). At most max_bytes (default 30000, at most 1048576) come \
back; the closing line in brackets gives the task's state (running, or its exit code), how much \
more there is to read, and `next since=N` (pass since to read from an offset again).\n\n\
wait_ms (at most 600000) waits until max_bytes of new output are there, the task ends, a line \
matches `pattern` (a regular expression), the task has been quiet for idle_ms, or the time is \
up, and says which. To wait for a server: pattern \"listening|ready\", or idle_ms 1000 (alone, \
it waits up to 50000). The newest 1000 ended tasks stay readable while the oino server \
runs.";

const TASK_SCREEN_DESCRIPTION: &str = "What a background task's terminal shows now, as a \
person would see it: its rows as text (trailing blanks trimmed), then a line with its size, \
the cursor's row and column, and whether a full-screen program has the alternate screen on. \
Use it for a prompt waiting for an answer, a REPL, a test runner's summary or a full-screen \
program, where the output's text alone is hard to read.";

const TASK_LIST_DESCRIPTION: &str = "List the background tasks: id (t1, t2, …), name, state \
(running, or how it ended), how long it has run, its process id, output size and command.";

const TASK_KILL_DESCRIPTION: &str = "End a background task and every process it started \
(SIGTERM and SIGHUP, then SIGKILL after 2 s). Says how it ended. Its output can still be read.";

const TASK_INPUT_DESCRIPTION: &str = "Type text into a running background task's terminal, as \
if at its keyboard, then press Enter unless enter is false. Control characters work (send them \
with enter: false): \"\\u0003\" is Ctrl-C, \"\\u0004\" Ctrl-D (end of input). Then read its \
answer with task_output (idle_ms 500 waits until it has answered).";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct BashArgs {
    /// The command, run by `bash -c`.
    command: String,
    /// Kill the command (and all it started) if it runs longer than this. Default 600000, at
    /// most 86400000.
    timeout_ms: Option<u64>,
    /// Folder to run in: absolute, or relative to the agent's. Default: the agent's folder.
    cwd: Option<PathBuf>,
    /// Five to ten words saying what the command does: shown to the person watching; its first
    /// words name the task it may become (`start-the-dev-server`).
    description: Option<String>,
    /// Start it straight as a background task and return at once.
    run_in_background: Option<bool>,
    /// Detach it into a background task if it still runs after this long, and return then.
    detach_after_ms: Option<u64>,
    /// A regular expression: detach it the moment a line of its output matches (a server
    /// saying it listens), and return then with the output so far.
    detach_on: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct TaskOutputArgs {
    /// The task: its id (t3) or name.
    task: String,
    /// Byte offset to read from: the `next since` of the previous answer.
    since: Option<u64>,
    /// At most this much text comes back (default 30000).
    max_bytes: Option<usize>,
    /// Wait up to this long, until `max_bytes` of new output are there, the task ends, `pattern`
    /// matches or it goes quiet for `idle_ms`.
    wait_ms: Option<u64>,
    /// A regular expression: wait until a line of new output matches it.
    pattern: Option<String>,
    /// Return once the task has written nothing for this long (a server done starting).
    idle_ms: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct TaskArgs {
    /// The task: its id (t3) or name.
    task: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct TaskInputArgs {
    /// The task: its id (t3) or name.
    task: String,
    /// The text to type.
    text: String,
    /// Press Enter after the text (default true).
    enter: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct NoArgs {}

/// What a `task_output` looks for and how long it waits, checked.
struct Waits {
    pattern: Option<Regex>,
    max_bytes: usize,
    idle: Option<Duration>,
    wait: Duration,
}

impl TaskOutputArgs {
    fn waits(&self) -> Result<Waits, ToolError> {
        let pattern = self
            .pattern
            .as_deref()
            .map(|pattern| {
                Regex::new(pattern)
                    .map_err(|err| format!("`pattern` is not a valid regular expression: {err}"))
            })
            .transpose()?;
        let max_bytes = match self.max_bytes {
            Some(0) => return Err("`max_bytes` must be more than 0".into()),
            Some(max) => max.min(MAX_OUTPUT_BYTES),
            None => DEFAULT_OUTPUT_BYTES,
        };
        let idle = match self.idle_ms {
            Some(0) => return Err("`idle_ms` must be more than 0".into()),
            idle => idle.map(|idle| Duration::from_millis(idle.min(MAX_WAIT_MS))),
        };
        let wait = match (self.wait_ms, idle) {
            (Some(wait), _) => wait,
            (None, Some(_)) => DEFAULT_IDLE_WAIT_MS,
            (None, None) => 0,
        };
        let wait = Duration::from_millis(wait.min(MAX_WAIT_MS));
        Ok(Waits {
            pattern,
            max_bytes,
            idle,
            wait,
        })
    }
}

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
pub struct Bridge {
    socket: PathBuf,
    /// When a call that says nothing of it is detached (`oino mcp --detach-after`).
    detach_after: Option<Duration>,
    link: tokio::sync::Mutex<Option<Link>>,
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
pub async fn serve(socket: PathBuf, detach_after: Option<Duration>) -> anyhow::Result<()> {
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
        let service = Bridge::new(socket, detach_after).serve(transport).await?;
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
    /// A bridge to the server at `socket`; `detach_after`, the detach of a call that gives none.
    #[must_use]
    pub fn new(socket: PathBuf, detach_after: Option<Duration>) -> Self {
        Self {
            socket,
            detach_after,
            link: tokio::sync::Mutex::new(None),
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
        let link = Link::remote(&self.socket).await.map_err(|err| {
            format!(
                "cannot reach the oino server at {}: {err:#}",
                self.socket.display()
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

    async fn bash(
        &self,
        args: Option<JsonObject>,
        request_id: &RequestId,
        progress: Option<(Peer<RoleServer>, ProgressToken)>,
        cancelled: impl Future<Output = ()>,
    ) -> ToolResult {
        let args: BashArgs = arguments("bash", args)?;
        if args.command.trim().is_empty() {
            return Err("`command` is empty: give the shell command to run".into());
        }
        match args.timeout_ms {
            Some(0) => {
                return Err("`timeout_ms` must be more than 0 (or left out for 600000)".into());
            }
            Some(timeout) if timeout > MAX_TIMEOUT_MS => {
                return Err(format!(
                    "`timeout_ms` is at most {MAX_TIMEOUT_MS} (a day): for a command that runs \
                     longer, pass run_in_background: true"
                )
                .into());
            }
            _ => {}
        }
        let detach_on = args
            .detach_on
            .as_deref()
            .map(|pattern| {
                Regex::new(pattern)
                    .map_err(|err| format!("`detach_on` is not a valid regular expression: {err}"))
            })
            .transpose()?;
        if args.detach_after_ms == Some(0) {
            return Err(
                "`detach_after_ms` must be more than 0: to start it as a task at once, \
                        pass run_in_background: true"
                    .into(),
            );
        }
        // The call id is the request's, made unique to this bridge (the agent's ids start
        // again with each session).
        // Any characters of a string request id that could break a line or a table are left out.
        let request_id: String = request_id
            .to_string()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .take(40)
            .collect();
        let id = format!("mcp{}-{request_id}", std::process::id());
        let request = CallRequest {
            id: Some(id.clone()),
            cwd: args.cwd.map(home_expanded),
            // The task it may become is named after what it does.
            task_name: args
                .description
                .as_deref()
                .and_then(crate::core::tasks::name_from_words),
            title: args.description.filter(|title| !title.trim().is_empty()),
            options: CallOptions {
                timeout: Some(Duration::from_millis(
                    args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
                )),
                // A prompt would hold the agent until the timeout: it gets the prompt instead.
                on_input: InputPolicy::Detach,
                ..CallOptions::default()
            },
            ..CallRequest::new(args.command)
        }
        .from_here()
        .map_err(|err| err.to_string())?;
        let (link, id, result) = self.start(request).await?;
        let after = if args.run_in_background == Some(true) {
            Some(Duration::ZERO)
        } else {
            args.detach_after_ms
                .map(Duration::from_millis)
                .or(self.detach_after)
        };
        let detach = DetachWhen {
            after,
            on_line: detach_on.as_ref(),
            name: None,
        };
        let finished = tokio::select! {
            finished = link.finish_run(&id, result, detach, |_| {}) => finished,
            () = report_progress(&link, &id, progress) => unreachable!("progress reports go on"),
            () = cancelled => {
                // The agent stopped waiting (its user interrupted): end what it started.
                let _ = link.kill(&id).await;
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
        if result.detached.is_some() {
            self.watch(&link, &id);
        }
        Ok(bash_result(&link, &id, result).await)
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

    async fn task_output(
        &self,
        args: Option<JsonObject>,
        cancelled: impl Future<Output = ()>,
    ) -> ToolResult {
        let args: TaskOutputArgs = arguments("task_output", args)?;
        let Waits {
            pattern,
            max_bytes,
            idle,
            wait,
        } = args.waits()?;
        let link = self.link().await?;
        let entry = self.task(&link, &args.task).await?;
        // What this bridge has not returned yet: from where its last read of the task stopped,
        // or where the task began (its output before went with the detached call's result).
        // An offset past the end (a cursor of a server that was restarted, a wrong `since`)
        // reads from the end.
        let since = args
            .since
            .unwrap_or_else(|| self.cursor(&entry.id).unwrap_or(entry.detach_offset))
            .min(entry.bytes);
        let deadline = tokio::time::Instant::now() + wait;
        let mut reader = OutputReader::new(since, max_bytes, pattern);
        let read = |err: LinkError| Self::failure("reading the output failed", &err);
        let mut last_output = tokio::time::Instant::now();
        let mut follower = link.follow(&entry.id, since);
        let reading = async {
            loop {
                // In order, max_bytes at most; looking for a pattern, all of it in large pieces,
                // keeping the newest max_bytes.
                let room = if reader.looks_for_a_line() {
                    PATTERN_PIECE_BYTES.max(max_bytes)
                } else {
                    max_bytes - reader.kept_bytes.min(max_bytes)
                };
                let until = idle.map_or(deadline, |idle| deadline.min(last_output + idle));
                // Output there already is read at once, whatever the time.
                match follower.next(room, Some(until)).await {
                    Err(err) => break Err(read(err)),
                    Ok(Followed::Output(slice)) => {
                        if let Some(line) = reader.push(slice) {
                            break Ok(Waited::Matched(line));
                        }
                        last_output = tokio::time::Instant::now();
                        // Full: a request for less than a character's bytes could only return
                        // one whole, past the limit.
                        if !reader.looks_for_a_line() && reader.kept_bytes + 4 > max_bytes {
                            break Ok(Waited::Full);
                        }
                        // Looking for a pattern in a flood: until the time is up.
                        if reader.looks_for_a_line() && last_output >= deadline {
                            break Ok(reader.at_the_end(Waited::TimedOut));
                        }
                    }
                    Ok(Followed::TimedOut) => {
                        let now = tokio::time::Instant::now();
                        if now >= deadline {
                            break Ok(reader.at_the_end(Waited::TimedOut));
                        }
                        if let Some(idle) = idle.filter(|idle| now >= last_output + *idle) {
                            break Ok(reader.at_the_end(Waited::Idle(idle)));
                        }
                    }
                    // Whatever it wrote last was read before.
                    Ok(Followed::Ended) => break Ok(reader.at_the_end(Waited::Ended)),
                }
            }
        };
        // A read the agent gave up on (its client's timeout, a cancel) returns nothing: the
        // cursor stays where the agent last got output.
        let outcome = tokio::select! {
            outcome = reading => outcome?,
            () = cancelled => return Err("cancelled: nothing was read".into()),
        };
        self.advance_cursor(&entry.id, reader.next_offset);
        let entry = link.entry(&entry.id).await.map_err(read)?;
        self.watch(&link, &entry.id);
        if !entry.state.is_running() {
            self.watched.told(&entry.id);
        }
        Ok(CallToolResult::success(
            reader.render(&entry, &outcome, wait),
        ))
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

    async fn task_screen(&self, args: Option<JsonObject>) -> ToolResult {
        let args: TaskArgs = arguments("task_screen", args)?;
        let link = self.link().await?;
        let entry = self.task(&link, &args.task).await?;
        self.watch(&link, &entry.id);
        let view = link
            .snapshot(&entry.id, None)
            .await
            .map_err(|err| Self::failure("reading the screen failed", &err))?
            .view();
        let mut content = Vec::new();
        let shown = view.shown_lines();
        if !shown.is_empty() {
            content.push(ContentBlock::text(shown.join("\n") + "\n"));
        }
        content.push(ContentBlock::text(format!(
            "[screen of {}: {} · {}]",
            task_label(&entry),
            view.summary(),
            entry.state
        )));
        Ok(CallToolResult::success(content))
    }

    async fn task_list(&self, args: Option<JsonObject>) -> ToolResult {
        let NoArgs {} = arguments("task_list", args)?;
        let link = self.link().await?;
        let entries = link
            .entries()
            .await
            .map_err(|err| Self::failure("listing the tasks failed", &err))?;
        let now = crate::time::now_ms();
        let lines: Vec<String> = entries
            .iter()
            .filter(|entry| entry.kind == EntryKind::Task)
            .map(|entry| {
                let end = entry.ended_ms.unwrap_or(now);
                let state = match (&entry.waiting_for_input, entry.state.is_running()) {
                    (Some(prompt), true) => format!("running, waiting for input: {prompt:?}"),
                    _ => entry.state.to_string(),
                };
                format!(
                    "{} {:?}: {} · {} s · pid {} · {} of output{} · $ {}",
                    entry.task_id.as_deref().unwrap_or(&entry.id),
                    entry.name.as_deref().unwrap_or_default(),
                    state,
                    end.saturating_sub(entry.started_ms) / 1000,
                    entry.pid,
                    crate::output::byte_size(entry.bytes.saturating_sub(entry.detach_offset)),
                    match (&entry.log_error, &entry.log_cut) {
                        (Some(_), _) => " (log not written: only the newest part is kept)".into(),
                        (None, Some(cut)) => format!(
                            " (log capped: {} left out)",
                            crate::output::byte_size(cut.left_out)
                        ),
                        (None, None) => String::new(),
                    },
                    entry.command,
                )
            })
            .collect();
        let text = if lines.is_empty() {
            "No background tasks. A bash call becomes one when it is detached (run_in_background, \
             detach_after_ms, or by the person watching)."
                .to_owned()
        } else {
            lines.join("\n")
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }

    async fn task_kill(&self, args: Option<JsonObject>) -> ToolResult {
        let args: TaskArgs = arguments("task_kill", args)?;
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
        let state = link
            .kill(&entry.id)
            .await
            .map_err(|err| Self::failure("killing the task failed", &err))?;
        let text = if state.is_running() {
            format!("{label} was sent SIGKILL but has not ended yet: check with task_list.")
        } else {
            format!("{label} ended, with everything it started ({state}).")
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }

    async fn task_input(&self, args: Option<JsonObject>) -> ToolResult {
        let args: TaskInputArgs = arguments("task_input", args)?;
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
        link.write(&entry.id, bytes)
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
                            let Ok(entry) = link.entry(&id).await else {
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

    /// Adds to `result` the ends of watched tasks not told yet.
    async fn add_end_notices(&self, result: &mut CallToolResult) {
        if !self.watched.any_untold() {
            return;
        }
        let Some(link) = self.link.lock().await.clone() else {
            return;
        };
        let Ok(entries) = link.entries().await else {
            return;
        };
        let notices = self.watched.notices(&entries);
        if !notices.is_empty() {
            result.content.push(ContentBlock::text(notices.join("\n")));
        }
    }

    /// The task `key` names, or an error that says how to find one.
    async fn task(&self, link: &Link, key: &str) -> Result<EntryInfo, ToolError> {
        let entry = link.entry(key).await.map_err(|err| match err.code() {
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

/// While a call runs, tells a client that asked for progress (with a `progressToken`) the
/// newest line of output, once a second: clients that show progress show it live, and clients
/// that reset their request timeout on progress keep waiting. Never ends.
async fn report_progress(
    link: &Link,
    id: &str,
    progress: Option<(Peer<RoleServer>, ProgressToken)>,
) {
    const EVERY: Duration = Duration::from_secs(1);
    let Some((peer, token)) = progress else {
        return std::future::pending().await;
    };
    let mut seconds = 0_u32;
    loop {
        tokio::time::sleep(EVERY).await;
        seconds += 1;
        let newest = newest_line(link, id)
            .await
            .unwrap_or_else(|| "(no output yet)".to_owned());
        let mut report = ProgressNotificationParam::new(token.clone(), f64::from(seconds));
        report.message = Some(format!("{seconds} s: {newest}"));
        let _ = peer.notify_progress(report).await;
    }
}

/// The last line of the entry's output that is not blank, shortened to a line's worth.
async fn newest_line(link: &Link, id: &str) -> Option<String> {
    const TAIL: u64 = 4096;
    let entry = link.entry(id).await.ok()?;
    let tail = link
        .output(id, Some(entry.bytes.saturating_sub(TAIL)), 4096)
        .await
        .ok()?;
    let last = tail
        .text
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())?;
    Some(last.chars().take(200).collect())
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
#[allow(deprecated)] // See `LOG_LEVELS`.
async fn log_end(peer: &Peer<RoleServer>, least: Option<usize>, entry: &EntryInfo) {
    let level = LoggingLevel::Notice;
    if least > LOG_LEVELS.iter().position(|known| *known == level) {
        return;
    }
    let message = LoggingMessageNotificationParam::new(
        level,
        serde_json::Value::String(notices::end_notice(entry)),
    )
    .with_logger("oino");
    let _ = peer.notify_logging_message(message).await;
}

/// A bash call's result as the agent gets it: the text (output so far and the marker, when
/// detached) and, after a detach, how to go on with the task.
async fn bash_result(link: &Link, id: &str, result: CallResult) -> CallToolResult {
    let text = if result.text.is_empty() {
        "(no output)".to_owned()
    } else {
        result.text
    };
    let mut content = vec![ContentBlock::text(text)];
    if let Some(detached) = &result.detached {
        let name = link
            .entry(id)
            .await
            .ok()
            .and_then(|entry| entry.name)
            .map(|name| format!(" ({name:?})"))
            .unwrap_or_default();
        content.push(ContentBlock::text(format!(
            "Task {task}{name} keeps running. Read what it writes next with task_output \
             {{\"task\": \"{task}\"}} (add wait_ms, and a pattern to wait for a line); type into \
             it with task_input; end it with task_kill.",
            task = detached.task_id
        )));
    }
    if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// How a `task_output` wait ended.
enum Waited {
    /// `max_bytes` of new output are there.
    Full,
    Matched(String),
    Ended,
    TimedOut,
    /// The task wrote nothing for this long.
    Idle(Duration),
}

/// Output read from an offset on, keeping at most `max_bytes` of the newest text, and looking
/// for a line that matches a pattern.
struct OutputReader {
    since: u64,
    next_offset: u64,
    max_bytes: usize,
    lines: Option<LineMatcher>,
    /// Slices kept, oldest first: (raw offset it starts at, text).
    kept: std::collections::VecDeque<(u64, String)>,
    kept_bytes: usize,
}

impl OutputReader {
    fn new(since: u64, max_bytes: usize, pattern: Option<Regex>) -> Self {
        Self {
            since,
            next_offset: since,
            max_bytes,
            lines: pattern.map(LineMatcher::new),
            kept: std::collections::VecDeque::new(),
            kept_bytes: 0,
        }
    }

    fn looks_for_a_line(&self) -> bool {
        self.lines.is_some()
    }

    /// How a wait that is over ended: a line not ended yet counts only now, at the end (a
    /// prompt waits on one; earlier, it could be half a line).
    fn at_the_end(&self, waited: Waited) -> Waited {
        match self.lines.as_ref().and_then(LineMatcher::open_line_match) {
            Some(line) => Waited::Matched(line),
            None => waited,
        }
    }

    /// Whether any output was read.
    fn moved(&self) -> bool {
        !self.kept.is_empty()
    }

    /// Adds a slice; returns the first line that matches the pattern, if one does.
    fn push(&mut self, slice: crate::output::OutputSlice) -> Option<String> {
        if slice.next_offset <= slice.from {
            return None;
        }
        self.next_offset = slice.next_offset;
        let matched = self
            .lines
            .as_mut()
            .and_then(|lines| lines.feed(&slice.text));
        self.kept_bytes += slice.text.len();
        self.kept.push_back((slice.from, slice.text));
        // Looking for a pattern, only the newest text is kept: it may be met after a lot of
        // output. Read in order, the text was asked for within max_bytes.
        while self.looks_for_a_line() && self.kept_bytes > self.max_bytes && self.kept.len() > 1 {
            if let Some((_, text)) = self.kept.pop_front() {
                self.kept_bytes -= text.len();
            }
        }
        matched
    }

    /// The output read (exactly as the task wrote it, cleaned), then a block of notes in
    /// brackets ending with the task's state and the offset to read from next.
    fn render(&self, entry: &EntryInfo, outcome: &Waited, wait: Duration) -> Vec<ContentBlock> {
        let mut notes = Vec::new();
        let kept_from = self
            .kept
            .front()
            .map_or(self.next_offset, |(from, _)| *from);
        if kept_from > self.since {
            // Only an offset that can still be read is offered: the log's cap may have left
            // some of them out since.
            let readable = readable_from(entry, self.since);
            let again = if readable < kept_from {
                format!("read them with since={readable}")
            } else {
                "the log's cap has left them out since".to_owned()
            };
            notes.push(format!(
                "[{} of output skipped, offsets {} to {kept_from}: {again}]",
                crate::output::byte_size(kept_from - self.since),
                self.since,
            ));
        }
        let mut body: String = self.kept.iter().map(|(_, text)| text.as_str()).collect();
        if self.looks_for_a_line() && body.len() > self.max_bytes {
            // One slice longer than asked (cleaning can grow invalid bytes): keep its end.
            let mut cut = body.len() - self.max_bytes;
            while !body.is_char_boundary(cut) {
                cut += 1;
            }
            body.replace_range(..cut, "");
            notes.push(format!(
                "[the first {} of it were cut]",
                crate::output::byte_size(cut as u64)
            ));
        }
        let ended = !entry.state.is_running();
        if let Some(lines) = &self.lines {
            let pattern = lines.pattern().as_str();
            notes.push(match outcome {
                Waited::Matched(line) => format!("[matched /{pattern}/: {:?}]", line.trim_end()),
                _ if ended => format!("[the task ended with no line matching /{pattern}/]"),
                Waited::Idle(idle) => format!(
                    "[no line matched /{pattern}/; quiet for {} ms]",
                    idle.as_millis()
                ),
                _ => format!(
                    "[no line matched /{pattern}/ within {} ms]",
                    wait.as_millis()
                ),
            });
        } else {
            match outcome {
                Waited::Idle(idle) => {
                    notes.push(format!("[quiet for {} ms]", idle.as_millis()));
                }
                Waited::TimedOut if !self.moved() && !wait.is_zero() && !ended => {
                    notes.push(format!("[no new output within {} ms]", wait.as_millis()));
                }
                _ if !self.moved() => notes.push("[no new output]".to_owned()),
                _ => {}
            }
        }
        if let Some(error) = &entry.log_error {
            notes.push(crate::call::log_error_note(error));
        } else if let Some(cut) = &entry.log_cut {
            notes.push(crate::call::log_cut_note(cut, &entry.log_path));
        }
        let more = entry.bytes.saturating_sub(self.next_offset);
        let more = if more > 0 {
            format!(
                " · {} more to read (call again for the next part, or since={} for the newest)",
                crate::output::byte_size(more),
                readable_from(entry, entry.bytes.saturating_sub(self.max_bytes as u64))
            )
        } else {
            String::new()
        };
        notes.push(format!(
            "[{}: {}{more} · next since={}]",
            task_label(entry),
            entry.state,
            self.next_offset
        ));
        let mut content = Vec::new();
        if !body.is_empty() {
            content.push(ContentBlock::text(body));
        }
        content.push(ContentBlock::text(notes.join("\n")));
        content
    }
}

/// The first offset at or after `offset` that the entry's log can still be read from: past what
/// its cap left out.
fn readable_from(entry: &EntryInfo, offset: u64) -> u64 {
    match &entry.log_cut {
        Some(cut) if (cut.head..cut.head + cut.left_out).contains(&offset) => {
            cut.head + cut.left_out
        }
        _ => offset,
    }
}

fn task_label(entry: &EntryInfo) -> String {
    let id = entry.task_id.as_deref().unwrap_or(&entry.id);
    match &entry.name {
        Some(name) => format!("task {id} ({name:?})"),
        None => format!("task {id}"),
    }
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

/// Reads a tool's arguments, or says what is wrong with them.
fn arguments<T: DeserializeOwned>(
    tool: &str,
    arguments: Option<JsonObject>,
) -> Result<T, ToolError> {
    serde_json::from_value(serde_json::Value::Object(arguments.unwrap_or_default())).map_err(
        |err| {
            ToolError(format!(
                "bad arguments to {tool}: {err} (see the tool's input schema)"
            ))
        },
    )
}

fn tool<T: JsonSchema + 'static>(name: &'static str, description: &'static str) -> Tool {
    let schema = rmcp::handler::server::common::schema_for_input::<T>()
        .unwrap_or_else(|_| rmcp::handler::server::common::schema_for_empty_input());
    let mut schema = serde_json::Value::Object((*schema).clone());
    plain_schema(&mut schema);
    let serde_json::Value::Object(schema) = schema else {
        unreachable!("a schema stays an object")
    };
    Tool::new(name, description, schema)
}

/// A schema as the strictest clients read it: an optional field is one that is not
/// `required`, not one typed `[T, "null"]` (some clients then send its value as a string);
/// every object has `properties`; no formats beyond JSON Schema's own.
fn plain_schema(schema: &mut serde_json::Value) {
    use serde_json::Value;
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(Value::Array(kinds)) = object.get("type") {
        let kinds: Vec<&Value> = kinds.iter().filter(|kind| *kind != "null").collect();
        if let [kind] = kinds[..] {
            let kind = kind.clone();
            object.insert("type".into(), kind);
        }
    }
    object.remove("format");
    object.remove("nullable");
    if object.get("type").is_some_and(|kind| kind == "object") {
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.values_mut().for_each(plain_schema);
    }
    if let Some(items) = object.get_mut("items") {
        plain_schema(items);
    }
}

fn tools() -> Vec<Tool> {
    let read_only = ToolAnnotations::new().read_only(true);
    vec![
        tool::<BashArgs>("bash", BASH_DESCRIPTION),
        tool::<TaskOutputArgs>("task_output", TASK_OUTPUT_DESCRIPTION)
            .with_annotations(read_only.clone()),
        tool::<TaskArgs>("task_screen", TASK_SCREEN_DESCRIPTION)
            .with_annotations(read_only.clone()),
        tool::<NoArgs>("task_list", TASK_LIST_DESCRIPTION).with_annotations(read_only),
        tool::<TaskArgs>("task_kill", TASK_KILL_DESCRIPTION),
        tool::<TaskInputArgs>("task_input", TASK_INPUT_DESCRIPTION),
    ]
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
        let outcome = match request.name.as_ref() {
            "bash" => {
                let progress = request
                    .meta
                    .as_ref()
                    .and_then(rmcp::model::RequestMetaObject::get_progress_token)
                    .or_else(|| context.meta.get_progress_token())
                    .map(|token| (context.peer.clone(), token));
                self.bash(args, &context.id, progress, context.ct.cancelled())
                    .await
            }
            "task_output" => self.task_output(args, context.ct.cancelled()).await,
            "task_screen" => self.task_screen(args).await,
            "task_list" => self.task_list(args).await,
            "task_kill" => self.task_kill(args).await,
            "task_input" => self.task_input(args).await,
            other => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "no tool `{other}`: the tools are bash, task_output, task_screen, \
                         task_list, task_kill and task_input"
                    ),
                    None,
                ));
            }
        };
        let mut result = outcome.unwrap_or_else(|ToolError(message)| {
            CallToolResult::error(vec![ContentBlock::text(message)])
        });
        self.add_end_notices(&mut result).await;
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
mod tests {
    use super::*;
    use crate::core::EntryState;
    use crate::output::OutputSlice;

    fn slice(from: u64, text: &str) -> OutputSlice {
        OutputSlice {
            text: text.to_owned(),
            from,
            next_offset: from + text.len() as u64,
        }
    }

    fn entry(bytes: u64, state: EntryState) -> EntryInfo {
        EntryInfo {
            id: "c1".into(),
            kind: EntryKind::Task,
            task_id: Some("t1".into()),
            name: Some("web".into()),
            title: None,
            command: "npm run dev".into(),
            cwd: "/".into(),
            pid: 1,
            started_ms: 0,
            detached_ms: Some(0),
            ended_ms: None,
            state,
            timed_out: false,
            bytes,
            detach_offset: 0,
            log_path: "/dev/null".into(),
            log_error: None,
            log_cut: None,
            waiting_for_input: None,
            ready: None,
        }
    }

    fn rendered(reader: &OutputReader, entry: &EntryInfo, outcome: &Waited) -> Vec<String> {
        reader
            .render(entry, outcome, Duration::from_millis(500))
            .iter()
            .filter_map(|block| block.as_text().map(|text| text.text.clone()))
            .collect()
    }

    #[test]
    fn a_line_split_across_slices_is_matched_whole() {
        let pattern = Regex::new("^listening on :3000$").expect("regex");
        let mut reader = OutputReader::new(10, 1000, Some(pattern));
        assert_eq!(reader.push(slice(10, "compiling\nlisten")), None);
        assert_eq!(
            reader.push(slice(26, "ing on :3000\nready\n")),
            Some("listening on :3000".to_owned())
        );
        let running = entry(45, EntryState::Running);
        assert_eq!(
            rendered(
                &reader,
                &running,
                &Waited::Matched("listening on :3000".into())
            ),
            [
                "compiling\nlistening on :3000\nready\n",
                "[matched /^listening on :3000$/: \"listening on :3000\"]\n\
                 [task t1 (\"web\"): running · next since=45]"
            ]
        );
    }

    #[test]
    fn a_long_wait_keeps_the_newest_output_and_says_what_it_skipped() {
        let pattern = Regex::new("done").expect("regex");
        let mut reader = OutputReader::new(0, 21, Some(pattern));
        let mut from = 0;
        for n in 0..10 {
            let text = format!("line {n:02} of work\n");
            assert_eq!(reader.push(slice(from, &text)), None);
            from += text.len() as u64;
        }
        assert_eq!(reader.push(slice(from, "done\n")), Some("done".into()));
        let ended = entry(from + 5, EntryState::Exited { code: 0 });
        let blocks = rendered(&reader, &ended, &Waited::Matched("done".into()));
        assert_eq!(blocks[0], "line 09 of work\ndone\n");
        assert!(
            blocks[1].starts_with(
                "[144 bytes of output skipped, offsets 0 to 144: read them with since=0]"
            ),
            "{}",
            blocks[1]
        );
        assert!(blocks[1].ends_with("[task t1 (\"web\"): exited with code 0 · next since=165]"));
    }

    #[test]
    fn no_offset_is_offered_that_the_cap_left_out() {
        let pattern = Regex::new("never").expect("regex");
        let mut reader = OutputReader::new(300_000, 100, Some(pattern));
        reader.push(slice(300_000, "[... 99700 bytes of output left out ...]\n"));
        reader.push(slice(400_000, &format!("{}\n", "x".repeat(99))));
        reader.push(slice(400_100, &format!("{}\n", "y".repeat(99))));
        let mut capped = entry(2_000_000, EntryState::Running);
        capped.log_cut = Some(crate::output::LogCut {
            cap: 1 << 20,
            head: 262_144,
            left_out: 137_856,
            newest: 1_600_000,
        });
        let blocks = rendered(&reader, &capped, &Waited::TimedOut);
        let notes = blocks.last().expect("notes");
        assert!(
            notes.starts_with(
                "[97.8 KiB of output skipped, offsets 300000 to 400100: read them with \
                 since=400000]"
            ),
            "{notes}"
        );
        let mut reader = OutputReader::new(300_000, 100, None);
        reader.push(slice(300_000, "[... 99700 bytes of output left out ...]\n"));
        capped.bytes = 400_050;
        let blocks = rendered(&reader, &capped, &Waited::Full);
        assert!(
            blocks
                .last()
                .expect("notes")
                .contains("or since=400000 for the newest"),
            "{blocks:?}"
        );
    }

    #[test]
    fn no_output_says_so_and_what_remains_is_counted() {
        let reader = OutputReader::new(7, 100, None);
        let running = entry(7, EntryState::Running);
        assert_eq!(
            rendered(&reader, &running, &Waited::TimedOut),
            ["[no new output within 500 ms]\n[task t1 (\"web\"): running · next since=7]"]
        );
        let mut reader = OutputReader::new(0, 100, None);
        reader.push(slice(0, "first part\n"));
        let killed = entry(4096, EntryState::Killed { signal: 15 });
        assert_eq!(
            rendered(&reader, &killed, &Waited::Full),
            [
                "first part\n",
                "[task t1 (\"web\"): killed by signal 15 (SIGTERM) · 4.0 KiB more to read (call \
                 again for the next part, or since=3996 for the newest) · next since=11]"
            ]
        );
    }
}

#[cfg(test)]
mod schema_tests {
    use serde_json::Value;

    /// What the strictest known clients accept: a plain `type` string, `properties` on every
    /// object, no custom `format`, optional fields simply not `required`.
    fn faults(path: &str, schema: &Value, out: &mut Vec<String>) {
        let Some(object) = schema.as_object() else {
            return;
        };
        match object.get("type") {
            Some(Value::String(kind)) if kind == "object" && !object.contains_key("properties") => {
                out.push(format!("{path}: an object without `properties`"));
            }
            Some(Value::String(_)) => {}
            Some(other) => out.push(format!("{path}: `type` is {other}, not one string")),
            None if !path.is_empty() || object.contains_key("properties") => {
                out.push(format!("{path}: no `type`"));
            }
            None => {}
        }
        for key in ["format", "nullable", "anyOf", "oneOf", "$ref", "$defs"] {
            if object.contains_key(key) {
                out.push(format!("{path}: has `{key}`"));
            }
        }
        if let Some(Value::Object(properties)) = object.get("properties") {
            for (name, property) in properties {
                faults(&format!("{path}.{name}"), property, out);
            }
        }
        if let Some(items) = object.get("items") {
            faults(&format!("{path}[]"), items, out);
        }
    }

    #[test]
    fn every_tool_schema_is_one_every_client_accepts() {
        for tool in super::tools() {
            let schema = Value::Object((*tool.input_schema).clone());
            let mut found = Vec::new();
            faults("", &schema, &mut found);
            if schema.get("type") != Some(&Value::String("object".into())) {
                found.push("the input is not typed `object`".into());
            }
            assert!(found.is_empty(), "{}: {found:#?}\n{schema:#}", tool.name);
        }
    }
}
