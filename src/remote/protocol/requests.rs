//! Every request a client may send, each a struct of its own paired with its reply in one table
//! ([`requests!`] below): a caller asks with a request and gets its reply's type. A new kind
//! costs its struct, its table line and its handler, and nothing compiles without all three:
//! the table gives it its place in [`Request`], its bounds and its way in (the core answers it
//! through its [`Handle`], which the dispatcher's arms call; or its connection does), and a
//! golden example (the `examples` module at the end of this file; `requests/tests.rs` pins the
//! lines they give, and `cargo insta` shows them).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::bounds::{self, Bounded, Held};
use super::wire::{self, Size, Travel};
use crate::call::{CallOptions, CallResult, InputPolicy, TimeoutPolicy};
use crate::core::project::{ProjectApplied, ProjectStarted, ProjectStopped};
use crate::core::{CallRequest, Core, CoreError, EntryInfo, EntryState, HistoryPage as Page};
use crate::output::{DEFAULT_MAX_RESULT_BYTES, OutputSlice, SearchHit};
use crate::pty::Waiter;
use crate::screen::ScreenSnapshot;

/// A request of one kind, and what it is answered with.
pub trait Ask: Into<Request> + Bounded {
    /// The reply, as the core gives it ([`Travel`] says how it goes over the wire).
    type Reply: Travel;
    /// Whether it may take a while (a wait, a kill, a run): a client waits for its answer
    /// without a deadline, even from another machine.
    const SLOW: bool;
    /// Whether it carries this machine's files and environment (a project): never sent to a
    /// server on another machine, where they mean nothing.
    const HERE: bool;
}

/// A request the core answers by itself (not one its connection answers: `hello`, `run`,
/// `subscribe`, `kill_server`, `cancel`), for the server and a link in process alike.
pub trait Handle: Ask + std::marker::Send + 'static {
    /// Answers it from `core`: the reply, or why the core refused.
    fn handle(
        self,
        core: &Core,
    ) -> impl Future<Output = Result<Self::Reply, CoreError>> + std::marker::Send;
}

/// What is done with a request the core answers, whatever its kind: the dispatcher's arms
/// (see [`Request::by_core`]).
pub trait ByCore {
    /// What it comes to.
    type Out;
    /// Takes the request, as its own kind.
    fn answer<A: Handle>(self, request: A) -> Self::Out;
}

/// The table of requests: each kind, its reply, who answers it (`core`, through its
/// [`Handle`], or its `connection`), `slow` when it may take a while, `here` when it carries
/// this machine's files, and the bound of each of its fields (from [`bounds`]):
/// `{ field: BOUND, … }`.
macro_rules! requests {
    (@has $flag:ident) => { false };
    (@has $flag:ident $first:ident $($rest:ident)*) => {
        requests!(@same $flag $first) || requests!(@has $flag $($rest)*)
    };
    (@same slow slow) => { true };
    (@same here here) => { true };
    (@same $flag:ident $other:ident) => { false };
    (@by core $answer:ident $request:ident $kind:ident) => { Ok($answer.answer($request)) };
    (@by connection $answer:ident $request:ident $kind:ident) => { Err(Self::$kind($request)) };
    ($($kind:ident -> $reply:ty, $by:ident $(, $flag:ident)* $({ $($field:ident: $bound:ident),* })?;)*) => {
        /// What a client asks: a JSON object whose `op` names the kind (in snake case).
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(tag = "op", rename_all = "snake_case")]
        pub enum Request {
            $(
                #[doc = concat!("A [`", stringify!($kind), "`] request.")]
                $kind($kind),
            )*
        }

        $(
            impl Ask for $kind {
                type Reply = $reply;
                const SLOW: bool = requests!(@has slow $($flag)*);
                const HERE: bool = requests!(@has here $($flag)*);
            }

            impl From<$kind> for Request {
                fn from(request: $kind) -> Self {
                    Self::$kind(request)
                }
            }

            impl Bounded for $kind {
                fn bounded(self) -> Result<Self, CoreError> {
                    #[allow(unused_mut)]
                    let mut request = self;
                    $($(request.$field = Held::held(request.$field, &bounds::$bound)?;)*)?
                    Ok(request)
                }
            }
        )*

        impl Request {
            /// A request the core answers, given to `answer` as its own kind (the arms of the
            /// dispatcher, from the table); one its connection answers, back.
            #[allow(clippy::result_large_err)] // The request itself, given back as it came.
            pub fn by_core<A: ByCore>(self, answer: A) -> Result<A::Out, Self> {
                match self {
                    $(Self::$kind(request) => requests!(@by $by answer request $kind),)*
                }
            }
        }

        impl Bounded for Request {
            fn bounded(self) -> Result<Self, CoreError> {
                Ok(match self {
                    $(Self::$kind(request) => Self::$kind(request.bounded()?),)*
                })
            }
        }

        /// Each kind's golden example, in the table's order: its name, the request's line and
        /// the reply's line, each checked to read back as the value it was written from.
        #[cfg(test)]
        pub(crate) fn golden_lines() -> Vec<(&'static str, String, String)> {
            vec![$({
                let (request, reply) = <$kind as examples::Example>::example();
                let request = Request::from(request);
                let request_line = serde_json::to_string(&request).expect("a request encodes");
                assert_eq!(
                    serde_json::from_str::<Request>(&request_line).expect("it decodes"),
                    request,
                    "{request_line}"
                );
                let reply_line = serde_json::to_string(&reply.clone().to_wire())
                    .expect("a reply encodes");
                let read: <$reply as Travel>::Wire =
                    serde_json::from_str(&reply_line).expect("it decodes");
                assert_eq!(<$reply as Travel>::from_wire(read), reply, "{reply_line}");
                (stringify!($kind), request_line, reply_line)
            },)*]
        }

        /// Each kind's fields, as serde reads them, and the fields the table bounds.
        #[cfg(test)]
        pub(crate) fn fields_of_each_kind()
            -> Vec<(&'static str, &'static [&'static str], Vec<&'static str>)> {
            vec![$((
                stringify!($kind),
                tests::field_names::<$kind>(),
                vec![$($(stringify!($field)),*)?],
            ),)*]
        }
    };
}

requests! {
    Hello -> wire::Hello, connection;
    Run -> CallResult, connection, slow {
        command: COMMAND, timeout_ms: WAIT_MS, max_bytes: RESULT_BYTES, size: SIZE
    };
    List -> Vec<EntryInfo>, core;
    Entry -> EntryInfo, core;
    Detach -> EntryInfo, core, slow;
    Output -> OutputSlice, core { max_bytes: PAGE_BYTES };
    WaitOutput -> bool, core, slow { timeout_ms: WAIT_MS };
    Wait -> EntryState, core, slow { timeout_ms: WAIT_MS };
    Kill -> crate::core::Killed, core, slow;
    Project -> ProjectStarted, core, here { project: PROJECT };
    Down -> ProjectStopped, core, slow, here { project: PROJECT };
    Up -> ProjectApplied, core, slow, here { project: PROJECT };
    Restart -> EntryInfo, core, slow { size: SIZE };
    Send -> String, core;
    KillServer -> String, connection;
    Start -> EntryInfo, core { command: COMMAND, size: SIZE };
    Snapshot -> ScreenSnapshot, core { size: SIZE };
    Resize -> String, core { size: SIZE };
    HistoryPage -> Page, core { rows: PAGE_ROWS };
    FindLine -> SearchHit, core;
    Subscribe -> String, connection, slow;
    Cancel -> String, connection;
}

/// Checks that both sides speak the same protocol (the first request of every connection).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// The protocol version the client speaks; a server of another answers `version`.
    pub version: u32,
    /// Said by `oino proxy`: the connection carries a client on another machine, so its
    /// closing is a link that dropped, not a waiter that left; a call it waited for lives on as
    /// a task. Once said, it holds for the connection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relayed: bool,
}

/// Runs a call; the reply is its result (with `started`, its entry comes first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(clippy::struct_excessive_bools)] // Each a flag of the protocol's own, read apart.
pub struct Run {
    /// The command, run by `bash -c`: at most 131,071 bytes.
    pub command: String,
    /// The call id: 1 to 64 letters, digits, `-`, `_` or `.`; `None` for the server to name it
    /// (`c1`, `c2`, …).
    #[serde(default)]
    pub id: Option<String>,
    /// The folder it runs in; `None` for the server's.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// How long its waiter waits, in ms, before `on_timeout`; `None` for no limit.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// `"kill"` (default) or `"detach"`.
    #[serde(default)]
    pub on_timeout: Option<TimeoutPolicy>,
    /// The cap of the result text, in bytes (30000 when left out); past it, a head and a tail.
    #[serde(default)]
    pub max_bytes: Option<usize>,
    /// Shown instead of the command.
    #[serde(default)]
    pub title: Option<String>,
    /// The call's whole environment (a client sends its own, so that the command runs as it
    /// would in the client's shell); empty, the server's.
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// The terminal size the call runs at (the client's terminal); 80x24 when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Size>,
    /// The name of the task it becomes when its timeout detaches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What happens when it waits for someone to type: `"wait"` (default), `"detach"` or
    /// `"kill"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_input: Option<InputPolicy>,
    /// Answer twice: the new entry as soon as the call exists (or why it could not start),
    /// then its result. A client that detaches, kills or writes to it waits for the first.
    #[serde(default)]
    pub started: bool,
    /// Start it as a background task: the result is the detach marker alone, and all of its
    /// output is the task's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// The result says the shell's folder as it ended (`folder`): where a `cd` left it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub report_folder: bool,
    /// The text leaves out the line saying how a failed command ended (`[exit code 3]`): the
    /// client says it apart from the output.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_exit_note: bool,
}

impl Run {
    /// The request for `call` (a program waits for it).
    #[must_use]
    pub(crate) fn from_call(call: CallRequest, started: bool) -> Self {
        let options = call.options;
        Self {
            command: call.command,
            id: call.id,
            cwd: call.cwd,
            // Less than a millisecond is one, not none.
            timeout_ms: options
                .timeout
                .map(|timeout| u64::try_from(timeout.as_millis().max(1)).unwrap_or(u64::MAX)),
            on_timeout: Some(options.on_timeout),
            max_bytes: Some(options.max_result_bytes),
            title: call.title,
            env: call.env,
            size: call.size.to_wire(),
            name: call.task_name,
            on_input: (options.on_input != InputPolicy::Wait).then_some(options.on_input),
            started,
            background: call.background,
            report_folder: call.report_folder,
            no_exit_note: !options.exit_note,
        }
    }

    /// `call` held within a `run`'s bounds, as a server holds the request: a call started in
    /// process goes through the same door.
    pub(crate) fn bound_call(mut call: CallRequest) -> Result<CallRequest, CoreError> {
        let held = Self::from_call(call.clone(), false).bounded()?.into_call();
        call.size = held.size;
        call.options.timeout = held.options.timeout;
        call.options.max_result_bytes = held.options.max_result_bytes;
        Ok(call)
    }

    /// The call it asks for.
    #[must_use]
    pub(crate) fn into_call(self) -> CallRequest {
        CallRequest {
            id: self.id,
            cwd: self.cwd,
            env: self.env,
            size: Travel::from_wire(self.size),
            title: self.title,
            task_name: self.name,
            options: CallOptions {
                timeout: self.timeout_ms.map(std::time::Duration::from_millis),
                on_timeout: self.on_timeout.unwrap_or_default(),
                on_input: self.on_input.unwrap_or_default(),
                max_result_bytes: self.max_bytes.unwrap_or(DEFAULT_MAX_RESULT_BYTES),
                exit_note: !self.no_exit_note,
                ..CallOptions::default()
            },
            waiter: Waiter::Program,
            background: self.background,
            report_folder: self.report_folder,
            ..CallRequest::new(self.command)
        }
    }
}

/// Every entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct List {}

/// One entry, by call id, task id or name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
}

/// Makes a running call a task (named `name`, else after its command).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detach {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// The task's name; made from the command when left out.
    #[serde(default)]
    pub name: Option<String>,
    /// Why, as the detach marker in its waiter's text says it; "detached by `oino detach`" when
    /// left out.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Clean output from raw offset `since` (default: the start, or a task's own start), at most
/// `max_bytes` raw bytes of it (default 64 KiB).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// The raw offset to read from (one within a character or a sequence moves to the next
    /// boundary); `None` for the start, or where a task's own output starts.
    #[serde(default)]
    pub since: Option<u64>,
    /// At most about this many raw bytes (64 KiB when left out); a read goes past it rather than
    /// cut a sequence.
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// Waits until `key` has more than `offset` bytes of output or has ended: whether it has more.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitOutput {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// The raw offset past which output counts as more.
    pub offset: u64,
    /// How long to wait, in ms, before answering `false`.
    pub timeout_ms: u64,
}

/// Waits until the entry ends, at most `timeout_ms` (no limit without it): its state then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wait {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// How long to wait, in ms, before answering `running`; `None` for no limit.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Ends the entry's process (and what it started): its state after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kill {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
}

/// Starts the processes of a project file that do not run yet (or only `only`), each a task
/// named after it, from the caller's environment `env`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    /// The project, as a client read its file.
    pub project: wire::Project,
    /// The caller's environment, which each process's own variables go over.
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// One process's name: only it starts, whatever its `autostart`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<String>,
}

/// Stops the processes of a project file (or those of `only` and those that wait for them),
/// each before those it waits for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Down {
    /// The project, as `oino` read its file.
    pub project: wire::Project,
    /// The processes to stop, with those that wait for them; none: every process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
}

/// Starts a project (or `only` and what they wait for) when it does not run; when it does,
/// applies its file: stops the processes it no longer has, starts again those whose definition
/// changed, starts the added ones. Says what it did to each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Up {
    /// The project, as a client read its file.
    pub project: wire::Project,
    /// The caller's environment, which each process's own variables go over.
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// The processes to start or apply, with what they wait for; none: the whole project.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
}

/// Starts `key`'s command again as a new call (ending it first if it still runs): the new entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Restart {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// The new call's terminal size; `None` for the size the old one had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Size>,
}

/// Types `text`, then `bytes` (any bytes, such as keys a terminal sends), into the process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Send {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// UTF-8 text, written first.
    #[serde(default)]
    pub text: String,
    /// Any bytes (keys as a terminal sends them), written after `text`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bytes: Vec<u8>,
}

impl Send {
    /// Text as text (what a server of protocol 1 before `bytes` reads too); anything else as
    /// bytes, unchanged.
    #[must_use]
    pub fn bytes(key: &str, bytes: Vec<u8>) -> Self {
        let (text, bytes) = match String::from_utf8(bytes) {
            Ok(text) => (text, Vec::new()),
            Err(err) => (String::new(), err.into_bytes()),
        };
        Self {
            key: key.to_owned(),
            text,
            bytes,
        }
    }

    /// What it types, in order.
    #[must_use]
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        let mut bytes = self.bytes;
        bytes.splice(0..0, self.text.into_bytes());
        bytes
    }
}

/// Ends the server: its processes, then itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillServer {}

/// Starts a call and answers at once with its entry (an interface is its own waiter).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// The command, run by `bash -c`.
    pub command: String,
    /// The folder it runs in; `None` for the server's.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Shown instead of the command.
    #[serde(default)]
    pub title: Option<String>,
    /// The call's whole environment; empty, the server's.
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// Its terminal size; `None` for 80x24.
    #[serde(default)]
    pub size: Option<Size>,
}

impl Start {
    /// The request for `call` (a person waits for it, in an interface).
    #[must_use]
    pub(crate) fn from_call(call: CallRequest) -> Self {
        Self {
            command: call.command,
            cwd: call.cwd,
            title: call.title,
            env: call.env,
            size: call.size.to_wire(),
        }
    }

    /// The call it asks for.
    #[must_use]
    pub(crate) fn into_call(self) -> CallRequest {
        CallRequest {
            cwd: self.cwd,
            env: self.env,
            size: Travel::from_wire(self.size),
            title: self.title,
            waiter: Waiter::Person,
            ..CallRequest::new(self.command)
        }
    }
}

/// The entry's screen at `size`, its PTY resized to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// The size to draw it at (its PTY is resized to it); `None` for the one it has.
    #[serde(default)]
    pub size: Option<Size>,
}

/// Resizes the entry's PTY.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resize {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// The new size.
    pub size: Size,
}

/// Clean lines of the whole output: `rows` of them, ending `lines_back` before the last.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryPage {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// Lines between the page's end and the last line.
    pub lines_back: u64,
    /// How many lines the page has, at most.
    pub rows: usize,
}

/// The nearest line before `from` (after it when `newer`) that `query` matches, and how many
/// lines it matches in all: a regular expression (its text, when it does not parse as one),
/// case-insensitive unless it has a capital letter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindLine {
    /// The entry: a call id, a task id (`t3`) or a task name.
    pub key: String,
    /// The line number to search from (0 is the oldest line); that line itself is not searched.
    pub from: u64,
    /// Search after `from` (toward the newest line) rather than before it.
    pub newer: bool,
    /// What to find: a regular expression, or text when it does not parse as one;
    /// case-insensitive unless it has a capital letter (an escape's, as in `\S`, is none).
    pub query: String,
}

/// Turns the connection into a stream of events ([`wire::Event`]), one a line, after its reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subscribe {}

/// Ends the request of this connection whose id is `of`, if it is under way: a `run` (its call
/// is ended, unless it became a task), a `wait`, a `wait_output` or a `subscribe`. Others run to
/// their end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cancel {
    /// The id of the request to end.
    pub of: u64,
}

/// Each kind's golden example, in its own file: a new kind does not compile in tests
/// without one (the lines they give are pinned by `tests`).
#[cfg(test)]
pub(crate) mod examples;

#[cfg(test)]
mod tests;
