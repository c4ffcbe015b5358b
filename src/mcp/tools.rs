//! What the bridge offers an agent: its instructions, each tool's description and arguments
//! (their JSON schemas made plain for every client), and how they are read.

use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use rmcp::schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{
    DEFAULT_IDLE_WAIT_MS, DEFAULT_OUTPUT_BYTES, MAX_OUTPUT_BYTES, MAX_TIMEOUT_MS, MAX_WAIT_MS,
    ToolError,
};

pub(super) const INSTRUCTIONS: &str = "oino runs your shell commands in terminals that the person \
supervising you watches live. Use its `bash` tool for commands. A command that would block you \
(a dev server, a watcher, a long build) can be detached into a background task: by you \
(run_in_background, detach_after_ms) or by the person, at any time. A detached call returns at \
once with its output so far and a line `[Detached to background task tN: reason]`; the process \
keeps running. Follow it with task_output, see its screen with task_screen, type into it with \
task_input, end it with task_kill, and see every task with task_list.";

pub(super) const BASH_DESCRIPTION: &str = "Run a shell command with `bash -c` in its own terminal, watched \
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
Each call starts a fresh bash in the folder where the last call's shell ended: a `cd` carries \
over (the result says `[cwd: /new/folder]` when the folder changed), but `export`, aliases and \
other shell state do not. cwd runs one call elsewhere (relative to the current folder) and \
leaves the current folder as it is. The result ends with a line of notes: `[ran 0.8 s]`, or how \
it failed and when (`[exit code 1 · 12.4 s]`). Stdin is a terminal: a command that asks a question (a prompt, a password) returns \
detached after a second of waiting, with `waiting for input: PROMPT` as its reason; answer with \
task_input, or ask the person, who can type it in oino. A full-screen program (vim, top) returns \
its screen's rows, with `PROGRAM (full screen) waits for keys` as its reason. Pagers are `cat` and \
editors `true` here (`git commit` without -m aborts). Prefer non-interactive flags.";

pub(super) const TASK_OUTPUT_DESCRIPTION: &str = "Read a background task's output (clean text; stdout \
and stderr merged, as a terminal shows them). Without `since`, returns what you have not read \
yet: on from where your last task_output of this task stopped (the first time, from where the \
task began, after its detach line). At most max_bytes (default 30000, at most 1048576) come \
back, in pages that end at a line's end; the closing line in brackets gives the task's state \
(running, waiting for input at a prompt, or its exit code), how long it has run, how much more \
there is to read, and `next since=N` (pass since to read from an offset again).\n\n\
wait_ms (at most 600000) waits until max_bytes of new output are there, the task ends, a line \
matches `pattern` (a regular expression), the task has been quiet for idle_ms, it waits for \
input (then answer it with task_input), or the time is up, and says which. To wait for a server: pattern \"listening|ready\", or idle_ms 1000 (alone, \
it waits up to 50000). The newest 1000 ended tasks stay readable while the oino server \
runs.";

pub(super) const TASK_SCREEN_DESCRIPTION: &str = "What a background task's terminal shows now, as a \
person would see it: its rows as text (trailing blanks trimmed), then a line with its size, \
the cursor's row and column, and whether a full-screen program has the alternate screen on. \
Use it for a prompt waiting for an answer, a REPL, a test runner's summary or a full-screen \
program, where the output's text alone is hard to read.";

pub(super) const TASK_LIST_DESCRIPTION: &str = "List your background tasks (those you started or read; \
all: true for every task of the oino server): id (t1, t2, …), name, state (waiting for input, \
running, or how it ended), how long it has run, its folder, its process id, output size and \
command. Those waiting for input come first, then the running ones, then the ended ones, the \
newest first; a long list is cut, with a line saying how many more there are.";

pub(super) const TASK_KILL_DESCRIPTION: &str = "End a background task and every process it started \
(SIGTERM and SIGHUP, then SIGKILL after 2 s). Says how it ended. Its output can still be read.";

pub(super) const TASK_INPUT_DESCRIPTION: &str = "Type text into a running background task's terminal, as \
if at its keyboard, then press Enter unless enter is false. Control characters work (send them \
with enter: false): \"\\u0003\" is Ctrl-C, \"\\u0004\" Ctrl-D (end of input). Then read its \
answer with task_output (idle_ms 500 waits until it has answered).";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(super) struct BashArgs {
    /// The command, run by `bash -c`.
    pub(super) command: String,
    /// Kill the command (and all it started) if it runs longer than this. Default 600000, at
    /// most 86400000.
    #[schemars(range(min = 1))]
    pub(super) timeout_ms: Option<u64>,
    /// Folder to run this call in: absolute, or relative to the current folder. Default: the
    /// current folder (where the last call's shell ended).
    pub(super) cwd: Option<PathBuf>,
    /// Five to ten words saying what the command does: shown to the person watching; its first
    /// words name the task it may become (`start-the-dev-server`).
    pub(super) description: Option<String>,
    /// Start it straight as a background task and return at once.
    pub(super) run_in_background: Option<bool>,
    /// Detach it into a background task if it still runs after this long, and return then.
    #[schemars(range(min = 1))]
    pub(super) detach_after_ms: Option<u64>,
    /// A regular expression: detach it the moment a line of its output matches (a server
    /// saying it listens), and return then with the output so far.
    pub(super) detach_on: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(super) struct TaskOutputArgs {
    /// The task: its id (t3) or name.
    pub(super) task: String,
    /// Byte offset to read from: the `next since` of the previous answer.
    pub(super) since: Option<u64>,
    /// At most this much text comes back (default 30000).
    #[schemars(range(min = 1))]
    pub(super) max_bytes: Option<usize>,
    /// Wait up to this long, until `max_bytes` of new output are there, the task ends, `pattern`
    /// matches or it goes quiet for `idle_ms`.
    pub(super) wait_ms: Option<u64>,
    /// A regular expression: wait until a line of new output matches it.
    pub(super) pattern: Option<String>,
    /// Return once the task has written nothing for this long (a server done starting).
    #[schemars(range(min = 1))]
    pub(super) idle_ms: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(super) struct TaskArgs {
    /// The task: its id (t3) or name.
    pub(super) task: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(super) struct TaskInputArgs {
    /// The task: its id (t3) or name.
    pub(super) task: String,
    /// The text to type.
    pub(super) text: String,
    /// Press Enter after the text (default true).
    pub(super) enter: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
pub(super) struct TaskListArgs {
    /// List every task of the oino server, not only those you started or read.
    pub(super) all: Option<bool>,
}

/// What a `task_output` looks for and how long it waits, checked.
pub(super) struct Waits {
    pub(super) pattern: Option<Regex>,
    pub(super) max_bytes: usize,
    pub(super) idle: Option<Duration>,
    pub(super) wait: Duration,
}

impl BashArgs {
    /// Checks the arguments; the pattern to detach at, if there is one.
    pub(super) fn checked(&self) -> Result<Option<Regex>, ToolError> {
        if self.command.trim().is_empty() {
            return Err("`command` is empty: give the shell command to run".into());
        }
        match self.timeout_ms {
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
        if self.detach_after_ms == Some(0) {
            return Err(
                "`detach_after_ms` must be more than 0: to start it as a task at once, pass \
                 run_in_background: true"
                    .into(),
            );
        }
        let detach_on = self
            .detach_on
            .as_deref()
            .map(|pattern| {
                Regex::new(pattern)
                    .map_err(|err| format!("`detach_on` is not a valid regular expression: {err}"))
            })
            .transpose()?;
        Ok(detach_on)
    }
}

impl TaskOutputArgs {
    pub(super) fn waits(&self) -> Result<Waits, ToolError> {
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

/// Reads a tool's arguments, or says what is wrong with them.
pub(super) fn arguments<T: DeserializeOwned>(
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

pub(super) fn tool<T: JsonSchema + 'static>(name: &'static str, description: &'static str) -> Tool {
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
pub(super) fn plain_schema(schema: &mut serde_json::Value) {
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

/// What a tool that only reads says of itself.
pub(super) fn read_only() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true)
}
