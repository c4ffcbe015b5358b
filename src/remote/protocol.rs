//! The protocol between oino's clients and its server: one JSON object a line, each way.
//!
//! A connection opens with `hello` (the protocol version); then each request gets exactly one
//! reply, in order: `{"ok": true, "result": …}` or `{"ok": false, "error": "what to do"}`. A
//! request that runs long (`run`, `wait`) holds its connection; clients open another for the
//! rest. docs/protocol.md describes every request.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::core::ErrorCode;
use crate::pty::TermSize;

/// The version a client and a server must share.
pub const PROTOCOL_VERSION: u32 = 1;
/// The longest request line the server reads.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;

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
        on_timeout: Option<String>,
        #[serde(default)]
        max_bytes: Option<usize>,
        #[serde(default)]
        title: Option<String>,
        /// Variables set for the call on top of the server's environment (a client sends its
        /// own, so that the command runs as it would in the client's shell).
        #[serde(default)]
        env: Vec<(String, String)>,
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
    Send {
        key: String,
        text: String,
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
