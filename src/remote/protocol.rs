//! The protocol between oino's clients and its server: one JSON object a line, each way.
//!
//! Clients open with `hello` to check the protocol version (the server does not insist); each
//! request gets exactly one reply, in order: `{"ok": true, "result": …}` or `{"ok": false,
//! "code": "…", "error": "what to do"}`. A request that runs long (`run`, `wait`) holds its
//! connection; clients open another for the rest. docs/protocol.md describes every request.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use crate::call::{CallOptions, InputPolicy, TimeoutPolicy};
use crate::core::CallRequest;
pub use crate::core::ErrorCode;
use crate::output::DEFAULT_MAX_RESULT_BYTES;
use crate::pty::{TermSize, Waiter};

/// The version a client and a server must share: 2 since `run` carries `size` and `name`, 3
/// since it carries `on_input`, which older servers refuse as unknown fields.
pub const PROTOCOL_VERSION: u32 = 3;
/// The longest request line the server reads: room for a command of the longest a program can
/// be given and an environment of the most the kernel takes (6 MiB), as JSON escapes ordinary
/// text (control characters, six bytes each, could still pass it).
pub const MAX_REQUEST_BYTES: usize = 16 << 20;

/// What reading one line found.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line, newline included.
    Whole,
    /// The end of the input, between lines.
    End,
    /// A line past the cap, read to its end and dropped.
    TooLong,
    /// The end of the input in the middle of a line (what came is in the buffer).
    CutShort,
}

/// The buffer kept between lines; a larger one goes with its line.
const KEPT_LINE_BYTES: usize = 64 * 1024;

/// Reads the next line into `line`, at most `cap` bytes before its newline. A longer one is read
/// to its end and dropped, so that the next line is still read whole.
pub async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Line> {
    if line.capacity() > KEPT_LINE_BYTES {
        *line = Vec::new();
    }
    line.clear();
    let read = (&mut *reader)
        .take(cap as u64 + 1)
        .read_until(b'\n', line)
        .await?;
    if read == 0 {
        return Ok(Line::End);
    }
    if line.ends_with(b"\n") {
        return Ok(Line::Whole);
    }
    if line.len() <= cap {
        return Ok(Line::CutShort);
    }
    line.clear();
    loop {
        let buffered = reader.fill_buf().await?;
        if buffered.is_empty() {
            return Ok(Line::TooLong);
        }
        if let Some(end) = buffered.iter().position(|byte| *byte == b'\n') {
            reader.consume(end + 1);
            return Ok(Line::TooLong);
        }
        let all = buffered.len();
        reader.consume(all);
    }
}

/// What a client asks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    Hello {
        version: u32,
    },
    /// Runs a call; the reply is its result.
    Run {
        command: String,
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        cwd: Option<PathBuf>,
        #[serde(default)]
        timeout_ms: Option<u64>,
        /// `"kill"` (default) or `"detach"`.
        #[serde(default)]
        on_timeout: Option<TimeoutPolicy>,
        #[serde(default)]
        max_bytes: Option<usize>,
        #[serde(default)]
        title: Option<String>,
        /// The call's whole environment (a client sends its own, so that the command runs as it
        /// would in the client's shell); empty, the server's.
        #[serde(default)]
        env: Vec<(String, String)>,
        /// The terminal size the call runs at (the client's terminal); 80x24 when left out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<TermSize>,
        /// The name of the task it becomes when its timeout detaches it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// What happens when it waits for someone to type: `"wait"` (default), `"detach"` or
        /// `"kill"`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        on_input: Option<InputPolicy>,
        /// Answer twice: the new entry as soon as the call exists (or why it could not start),
        /// then its result. A client that detaches, kills or writes to it waits for the first.
        #[serde(default)]
        started: bool,
    },
    List {},
    Entry {
        key: String,
    },
    Detach {
        key: String,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        reason: Option<String>,
    },
    Output {
        key: String,
        #[serde(default)]
        since: Option<u64>,
        #[serde(default)]
        max_bytes: Option<usize>,
    },
    /// Waits until `key` has more than `offset` bytes of output or has ended.
    WaitOutput {
        key: String,
        offset: u64,
        timeout_ms: u64,
    },
    Wait {
        key: String,
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    Kill {
        key: String,
    },
    /// Starts the processes of a project file that do not run yet (or only `only`), each a task
    /// named after it, from the caller's environment `env`.
    Project {
        project: crate::core::project::Project,
        #[serde(default)]
        env: Vec<(String, String)>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        only: Option<String>,
    },
    /// Starts `key`'s command again as a new call (ending it first if it still runs).
    Restart {
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<TermSize>,
    },
    /// Types `text`, then `bytes` (any bytes, such as keys a terminal sends), into the process.
    Send {
        key: String,
        #[serde(default)]
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        bytes: Vec<u8>,
    },
    KillServer {},
    /// Starts a call and answers at once with its entry (an interface is its own waiter).
    Start {
        command: String,
        #[serde(default)]
        cwd: Option<PathBuf>,
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        env: Vec<(String, String)>,
        #[serde(default)]
        size: Option<TermSize>,
    },
    /// The entry's screen at `size`, its PTY resized to it.
    Snapshot {
        key: String,
        #[serde(default)]
        size: Option<TermSize>,
    },
    Resize {
        key: String,
        size: TermSize,
    },
    /// Clean lines of the whole output: `rows` of them, ending `lines_back` before the last.
    HistoryPage {
        key: String,
        lines_back: u64,
        rows: usize,
    },
    /// The nearest line before `from` (after it when `newer`) that contains `query` (smart case).
    FindLine {
        key: String,
        from: u64,
        newer: bool,
        query: String,
    },
    /// Turns the connection into a stream of events, one a line, after an `ok` reply.
    Subscribe {},
}

impl Request {
    /// The `run` request for `call` (a program waits for it); with `started`, the server
    /// answers first with the new entry, then with the result.
    #[must_use]
    pub fn run(call: CallRequest, started: bool) -> Self {
        let options = call.options;
        Self::Run {
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
            size: call.size,
            name: call.task_name,
            on_input: (options.on_input != InputPolicy::Wait).then_some(options.on_input),
            started,
        }
    }

    /// The `start` request for `call` (a person waits for it, in an interface).
    #[must_use]
    pub fn start(call: CallRequest) -> Self {
        Self::Start {
            command: call.command,
            cwd: call.cwd,
            title: call.title,
            env: call.env,
            size: call.size,
        }
    }

    /// The call a `run` or `start` request asks for, and whether a `run` wants its entry first;
    /// `None` for any other request.
    #[must_use]
    pub fn into_call(self) -> Option<(CallRequest, bool)> {
        match self {
            Self::Run {
                command,
                id,
                cwd,
                timeout_ms,
                on_timeout,
                max_bytes,
                title,
                env,
                size,
                name,
                on_input,
                started,
            } => Some((
                CallRequest {
                    id,
                    cwd,
                    env,
                    size,
                    title,
                    task_name: name,
                    options: CallOptions {
                        timeout: timeout_ms.map(std::time::Duration::from_millis),
                        on_timeout: on_timeout.unwrap_or_default(),
                        on_input: on_input.unwrap_or_default(),
                        max_result_bytes: max_bytes.unwrap_or(DEFAULT_MAX_RESULT_BYTES),
                        ..CallOptions::default()
                    },
                    waiter: Waiter::Program,
                    ..CallRequest::new(command)
                },
                started,
            )),
            Self::Start {
                command,
                cwd,
                title,
                env,
                size,
            } => Some((
                CallRequest {
                    cwd,
                    env,
                    size,
                    title,
                    waiter: Waiter::Person,
                    ..CallRequest::new(command)
                },
                false,
            )),
            _ => None,
        }
    }
}

/// What the server answers: `{"ok": true, "result": …}` or `{"ok": false, "error": "…"}`,
/// serialized once, straight from the result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    line: Vec<u8>,
}

impl Reply {
    pub fn success(result: impl Serialize) -> Self {
        let mut line = br#"{"ok":true,"result":"#.to_vec();
        match serde_json::to_writer(&mut line, &result) {
            Ok(()) => {
                line.push(b'}');
                Self { line }
            }
            Err(err) => Self::failure(
                ErrorCode::Failed,
                format!("the answer could not be written: {err}"),
            ),
        }
    }

    /// A failure: its kind for the client to decide on, and what to do in words.
    pub fn failure(code: ErrorCode, error: impl Into<String>) -> Self {
        let error = serde_json::Value::String(error.into());
        let code = serde_json::to_string(&code).unwrap_or_else(|_| r#""failed""#.to_owned());
        Self {
            line: format!(r#"{{"ok":false,"code":{code},"error":{error}}}"#).into_bytes(),
        }
    }

    /// The failure a core error is.
    #[must_use]
    pub fn from_error(error: &crate::core::CoreError) -> Self {
        Self::failure(error.code(), error.to_string())
    }

    /// The reply's line, without its newline.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.line
    }
}

/// A reply as a client reads it, straight into the result's type.
#[derive(Debug, Deserialize)]
pub struct ReplyOf<T> {
    pub ok: bool,
    #[serde(default = "Option::default")]
    pub result: Option<T>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub code: Option<ErrorCode>,
}

/// The reply to `hello`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub server_pid: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_documented() {
        let request: Request =
            serde_json::from_str(r#"{"op":"detach","key":"c1","name":"web"}"#).expect("parse");
        assert_eq!(
            request,
            Request::Detach {
                key: "c1".into(),
                name: Some("web".into()),
                reason: None
            }
        );
        assert!(serde_json::from_str::<Request>(r#"{"op":"fly"}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"op":"list","extra":1}"#).is_err());
        assert_eq!(
            Reply::failure(ErrorCode::NoSuchEntry, "no \"way\"").as_bytes(),
            br#"{"ok":false,"code":"no_such_entry","error":"no \"way\""}"#
        );
        assert_eq!(
            Reply::success(vec![1, 2]).as_bytes(),
            br#"{"ok":true,"result":[1,2]}"#
        );
        let read: ReplyOf<Vec<u8>> =
            serde_json::from_slice(Reply::success(vec![1, 2]).as_bytes()).expect("parse");
        assert_eq!(read.result, Some(vec![1, 2]));
    }

    /// One request of each kind, with every field set that can be.
    fn one_of_each() -> Vec<Request> {
        let size = TermSize::new(80, 24);
        let key = || "t1".to_owned();
        vec![
            Request::Hello { version: 1 },
            Request::Run {
                command: "make test".into(),
                id: Some("run-1".into()),
                cwd: Some("/src".into()),
                timeout_ms: Some(5000),
                on_timeout: Some(TimeoutPolicy::Detach),
                max_bytes: Some(1000),
                title: Some("tests".into()),
                env: vec![("A".into(), "b".into())],
                size: Some(size),
                name: Some("tests".into()),
                on_input: Some(InputPolicy::Detach),
                started: true,
            },
            Request::List {},
            Request::Entry { key: key() },
            Request::Detach {
                key: key(),
                name: Some("web".into()),
                reason: Some("slow".into()),
            },
            Request::Output {
                key: key(),
                since: Some(7),
                max_bytes: Some(10),
            },
            Request::WaitOutput {
                key: key(),
                offset: 7,
                timeout_ms: 100,
            },
            Request::Wait {
                key: key(),
                timeout_ms: Some(100),
            },
            Request::Kill { key: key() },
            Request::Send {
                key: key(),
                text: "y\r".into(),
                bytes: vec![0x1b, b'[', b'A', 0xff],
            },
            Request::KillServer {},
            Request::Start {
                command: "vim".into(),
                cwd: Some("/src".into()),
                title: None,
                env: Vec::new(),
                size: Some(size),
            },
            Request::Snapshot {
                key: key(),
                size: Some(size),
            },
            Request::Resize { key: key(), size },
            Request::HistoryPage {
                key: key(),
                lines_back: 3,
                rows: 24,
            },
            Request::FindLine {
                key: key(),
                from: 9,
                newer: true,
                query: "error".into(),
            },
            Request::Subscribe {},
            Request::Restart {
                key: key(),
                size: Some(size),
            },
            Request::Project {
                project: crate::core::project::Project {
                    file: "/src/oino.toml".into(),
                    processes: Vec::new(),
                },
                env: vec![("A".into(), "b".into())],
                only: Some("web".into()),
            },
        ]
    }

    /// Each kind's place in [`one_of_each`]: a new kind does not compile until it has one.
    fn kind(request: &Request) -> usize {
        match request {
            Request::Hello { .. } => 0,
            Request::Run { .. } => 1,
            Request::List {} => 2,
            Request::Entry { .. } => 3,
            Request::Detach { .. } => 4,
            Request::Output { .. } => 5,
            Request::WaitOutput { .. } => 6,
            Request::Wait { .. } => 7,
            Request::Kill { .. } => 8,
            Request::Send { .. } => 9,
            Request::KillServer {} => 10,
            Request::Start { .. } => 11,
            Request::Snapshot { .. } => 12,
            Request::Resize { .. } => 13,
            Request::HistoryPage { .. } => 14,
            Request::FindLine { .. } => 15,
            Request::Subscribe {} => 16,
            Request::Restart { .. } => 17,
            Request::Project { .. } => 18,
        }
    }

    #[test]
    fn every_request_kind_round_trips_through_the_wire() {
        let requests = one_of_each();
        let kinds: Vec<usize> = requests.iter().map(kind).collect();
        assert_eq!(
            kinds,
            (0..=18).collect::<Vec<_>>(),
            "one request of each kind, in order"
        );
        for request in requests {
            let line = serde_json::to_string(&request).expect("encode");
            assert!(!line.contains('\n'), "{line}");
            let read: Request = serde_json::from_str(&line).expect("decode");
            assert_eq!(read, request, "{line}");
        }
    }

    #[test]
    fn fixed_messages_encode_and_decode_as_documented() {
        // Wire API: these lines must keep reading (and writing) exactly so.
        let golden = [
            (
                r#"{"op":"run","command":"sleep 9","id":null,"cwd":null,"timeout_ms":500,"on_timeout":"detach","max_bytes":null,"title":null,"env":[],"started":false}"#,
                Request::Run {
                    command: "sleep 9".into(),
                    id: None,
                    cwd: None,
                    timeout_ms: Some(500),
                    on_timeout: Some(TimeoutPolicy::Detach),
                    max_bytes: None,
                    title: None,
                    env: Vec::new(),
                    size: None,
                    name: None,
                    on_input: None,
                    started: false,
                },
            ),
            (
                r#"{"op":"send","key":"c1","text":"q","bytes":[27,255]}"#,
                Request::Send {
                    key: "c1".into(),
                    text: "q".into(),
                    bytes: vec![27, 255],
                },
            ),
            (
                r#"{"op":"send","key":"c1","text":"yes\n"}"#,
                Request::Send {
                    key: "c1".into(),
                    text: "yes\n".into(),
                    bytes: Vec::new(),
                },
            ),
            (
                r#"{"op":"kill","key":"web"}"#,
                Request::Kill { key: "web".into() },
            ),
            (r#"{"op":"list"}"#, Request::List {}),
        ];
        for (line, request) in golden {
            assert_eq!(serde_json::from_str::<Request>(line).expect(line), request);
            assert_eq!(serde_json::to_string(&request).expect("encode"), line);
        }
        // Short forms clients may send: optional fields left out.
        let short: Request =
            serde_json::from_str(r#"{"op":"run","command":"ls"}"#).expect("short run");
        let Some((call, started)) = short.into_call() else {
            panic!("a run request is a call");
        };
        assert_eq!((call.command.as_str(), started), ("ls", false));
        assert_eq!(call.options.on_timeout, TimeoutPolicy::Kill);
        assert_eq!(call.options.max_result_bytes, DEFAULT_MAX_RESULT_BYTES);
        let unknown = serde_json::from_str::<Request>(
            r#"{"op":"run","command":"ls","on_timeout":"explode"}"#,
        )
        .expect_err("an unknown policy");
        assert!(
            unknown.to_string().contains("expected `kill` or `detach`"),
            "{unknown}"
        );
    }

    #[test]
    fn error_codes_are_fixed_words() {
        let codes = [
            (ErrorCode::NoSuchEntry, "no_such_entry"),
            (ErrorCode::Forgotten, "forgotten"),
            (ErrorCode::DuplicateId, "duplicate_id"),
            (ErrorCode::DuplicateName, "duplicate_name"),
            (ErrorCode::InvalidName, "invalid_name"),
            (ErrorCode::NotRunning, "not_running"),
            (ErrorCode::AlreadyTask, "already_task"),
            (ErrorCode::TooLarge, "too_large"),
            (ErrorCode::BadRequest, "bad_request"),
            (ErrorCode::Version, "version"),
            (ErrorCode::Forbidden, "forbidden"),
            (ErrorCode::Busy, "busy"),
            (ErrorCode::Failed, "failed"),
            (ErrorCode::Unknown, "unknown"),
        ];
        for (code, word) in codes {
            let line = Reply::failure(code, "why").as_bytes().to_vec();
            let expected = format!(r#"{{"ok":false,"code":"{word}","error":"why"}}"#);
            assert_eq!(String::from_utf8_lossy(&line), expected);
            let read: ReplyOf<()> = serde_json::from_slice(&line).expect("decode");
            assert_eq!(
                (read.ok, read.code, read.error.as_deref()),
                (false, Some(code), Some("why"))
            );
        }
        // A code from a newer server reads as unknown, not as a broken reply.
        let newer: ReplyOf<()> =
            serde_json::from_str(r#"{"ok":false,"code":"out_of_moon","error":"x"}"#)
                .expect("decode");
        assert_eq!(newer.code, Some(ErrorCode::Unknown));
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;
        use crate::screen::decode::hostile;

        /// Lines a client might send: garbage, and requests cut or altered anywhere.
        fn line() -> impl Strategy<Value = Vec<u8>> {
            let request = proptest::sample::select(vec![
                &br#"{"op":"run","command":"echo hi","timeout_ms":5,"env":[["A","b"]]}"#[..],
                br#"{"op":"output","key":"t1","since":18446744073709551615,"max_bytes":1}"#,
                br#"{"op":"send","key":"c1","text":"\u0000\ud800"}"#,
                br#"{"op":"hello","version":1}"#,
            ]);
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..200),
                (request.clone(), any::<prop::sample::Index>())
                    .prop_map(|(line, cut)| { line[..cut.index(line.len() + 1)].to_vec() }),
                (request, any::<prop::sample::Index>(), any::<u8>()).prop_map(
                    |(line, at, byte)| {
                        let mut line = line.to_vec();
                        let at = at.index(line.len());
                        line[at] = byte;
                        line
                    }
                ),
            ]
        }

        proptest! {
            #![proptest_config(hostile::config())]

            #[test]
            fn any_line_reads_as_a_request_or_an_error(line in line()) {
                // Neither side panics, whatever comes; what reads as a request reads back the same.
                let reply = serde_json::from_slice::<ReplyOf<serde_json::Value>>(&line);
                drop(reply);
                if let Ok(request) = serde_json::from_slice::<Request>(&line) {
                    let again = serde_json::to_vec(&request).expect("encode");
                    prop_assert_eq!(serde_json::from_slice::<Request>(&again).ok(), Some(request));
                }
            }
        }
    }
}
