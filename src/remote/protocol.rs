//! The protocol between oino's clients and its server: one JSON object a line, each way.
//!
//! Clients open with `hello` to check the protocol version (the server does not insist). A
//! request may carry an id, `req`: then it is answered when it is done, its reply carrying the
//! same `req`, while the connection goes on with others (a `run`, a `wait` and a `subscribe`'s events
//! share one connection with quick questions), and `cancel` ends it. A request without one is
//! answered in order, as a script reading one line after another expects: `{"ok": true,
//! "result": …}` or `{"ok": false, "code": "…", "error": "what to do"}`. docs/protocol.md
//! describes every request.

pub mod bounds;
pub mod requests;
pub mod wire;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

pub use crate::core::ErrorCode;
pub use bounds::Bounded;
pub use requests::{Ask, Request};
pub use wire::Travel;

/// The version a client and a server must share: 2 since `run` carries `size` and `name`, 3
/// since it carries `on_input`, which older servers refuse as unknown fields, 4 since projects
/// carry conditions and probes, 5 since `run` carries `background` and `report_folder` and a
/// result `omitted_from` and `folder`, 6 since `find_line` takes a regular expression and
/// answers with the match's rank and the count of matches, 7 since `kill` answers with the
/// count of `processes` and `project` with the steps `done`, 8 since a cell's attributes carry
/// `hidden` and `overline`, 9 since `hello` may say that the connection is `relayed`, 10 since `project`
/// answers which processes were `left_running` by a server that died, 11 since requests carry
/// an id (`req`) and share one connection, and `cancel` ends one.
pub(crate) const PROTOCOL_VERSION: u32 = 11;
/// The longest request line the server reads: room for a command of the longest a program can
/// be given and an environment of the most the kernel takes (6 MiB), as JSON escapes ordinary
/// text (control characters, six bytes each, could still pass it).
pub const MAX_REQUEST_BYTES: usize = 16 << 20;
/// The longest reply line a client reads, and a server writes: a larger answer is refused as
/// `too_large` in its place, so that a connection never carries a line its reader drops.
pub const MAX_REPLY_BYTES: usize = 16 << 20;

/// The most requests with an id one connection has under way at once: past them, the server
/// reads the next request only once one is answered.
pub const MAX_IN_FLIGHT: usize = 64;

/// The start of a line that carries a request's id, as this side writes it first. Its key is
/// `req`: `id` is a call's id in `run` and in entries.
const ID_KEY: &[u8] = br#"{"req":"#;
/// What follows the id of a reply that another will follow (a `run`'s entry, before its
/// result).
const MORE: &[u8] = br#""more":true,"#;

/// A request as a client writes it: `{"req": N, "op": …}` and its newline.
#[must_use]
pub fn encode_request(id: u64, request: &Request) -> Vec<u8> {
    // A request always serializes as an object: `{"op":…}`.
    let body = serde_json::to_vec(request).unwrap_or_else(|_| b"{}".to_vec());
    let mut line = format!(r#"{{"req":{id},"#).into_bytes();
    line.extend_from_slice(body.strip_prefix(b"{").unwrap_or(&body));
    line.push(b'\n');
    line
}

/// A request line as the server reads it (without its newline): its id when it has one (a
/// number, anywhere among its fields), and the request, or why it is none.
pub fn decode_request(line: &[u8]) -> (Option<u64>, Result<Request, serde_json::Error>) {
    // As clients of this protocol write it: the id first, read without a second pass.
    if let Some((id, rest)) = leading_id(line) {
        let mut body = Vec::with_capacity(rest.len() + 1);
        body.push(b'{');
        body.extend_from_slice(rest);
        return (Some(id), serde_json::from_slice(&body));
    }
    let mut value: serde_json::Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(err) => return (None, Err(err)),
    };
    let id = value
        .as_object_mut()
        .and_then(|object| object.remove("req"));
    let id = match id.map(|id| id.as_u64()) {
        None => None,
        Some(Some(id)) => Some(id),
        Some(None) => {
            use serde::de::Error as _;
            let err = serde_json::Error::custom("`req` is a whole number from 0");
            return (None, Err(err));
        }
    };
    (id, serde_json::from_value(value))
}

/// `{"req":N,` at the start of `line`: N, and what follows its comma.
fn leading_id(line: &[u8]) -> Option<(u64, &[u8])> {
    let rest = line.strip_prefix(ID_KEY)?;
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
    let (number, rest) = rest.split_at(digits);
    let rest = rest.strip_prefix(b",")?;
    // At most 19 digits: any such number fits in a u64; more is no id of ours.
    if digits == 0 || digits > 19 {
        return None;
    }
    let id = std::str::from_utf8(number).ok()?.parse().ok()?;
    Some((id, rest))
}

/// The id of a reply line, and whether another reply to the same request follows; `None` for
/// an event (or a reply to a request without an id).
#[must_use]
pub fn reply_id(line: &[u8]) -> Option<(u64, bool)> {
    let (id, rest) = leading_id(line)?;
    Some((id, rest.starts_with(MORE)))
}

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

/// What the server answers: `{"ok": true, "result": …}` or `{"ok": false, "error": "…"}`,
/// serialized once, straight from the result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The line, its newline included: a reply goes out in one write (over a transport, one
    /// packet rather than two).
    line: Vec<u8>,
}

impl Reply {
    /// A success carrying `result`; a `failed` failure if `result` cannot be written as JSON.
    pub fn success(result: impl Serialize) -> Self {
        let mut line = br#"{"ok":true,"result":"#.to_vec();
        match serde_json::to_writer(&mut line, &result) {
            Ok(()) if line.len() + 2 > MAX_REPLY_BYTES => Self::failure(
                ErrorCode::TooLarge,
                format!(
                    "the answer is larger than a reply may be ({} MiB): ask for less at a time \
                     (a smaller screen, a shorter page)",
                    MAX_REPLY_BYTES >> 20
                ),
            ),
            Ok(()) => {
                line.extend_from_slice(b"}\n");
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
        Self::refusal(code, &error.into(), None)
    }

    /// The failure a core error is, with its data when it has some.
    #[must_use]
    pub(crate) fn from_error(error: &crate::core::CoreError) -> Self {
        let data = error.data();
        let data = (!data.is_empty()).then(|| data.to_wire());
        Self::refusal(error.code(), &error.to_string(), data)
    }

    /// A failure with data for the client to act on.
    pub(crate) fn refusal(code: ErrorCode, error: &str, data: Option<wire::ErrorData>) -> Self {
        /// `{"ok": false, "code": …, "error": …, "data": …}`, `data` when there is some.
        #[derive(Serialize)]
        struct Refusal<'a> {
            ok: bool,
            code: ErrorCode,
            error: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            data: Option<wire::ErrorData>,
        }
        let refusal = Refusal {
            ok: false,
            code,
            error,
            data,
        };
        // Nothing in it can fail to serialize; were it to, the words alone still go.
        let mut line = serde_json::to_vec(&refusal).unwrap_or_else(|_| {
            format!(
                r#"{{"ok":false,"code":"failed","error":{}}}"#,
                serde_json::Value::from(error)
            )
            .into_bytes()
        });
        line.push(b'\n');
        Self { line }
    }

    /// The reply's line, without its newline.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.line.strip_suffix(b"\n").unwrap_or(&self.line)
    }

    /// The reply's line with its newline, as it is written.
    #[must_use]
    pub fn as_line(&self) -> &[u8] {
        &self.line
    }

    /// The line for the request `id` (as it was asked: with its id first, or none without
    /// one); `more` when another reply to it follows.
    #[must_use]
    pub fn framed(self, id: Option<u64>, more: bool) -> Vec<u8> {
        let Some(id) = id else {
            return self.line;
        };
        let mut line = format!(r#"{{"req":{id},"#).into_bytes();
        if more {
            line.extend_from_slice(MORE);
        }
        line.extend_from_slice(self.line.strip_prefix(b"{").unwrap_or(&self.line));
        line
    }
}

/// A reply as a client reads it, straight into the result's type.
#[derive(Debug, Deserialize)]
pub(crate) struct ReplyOf<T> {
    pub ok: bool,
    #[serde(default = "Option::default")]
    pub result: Option<T>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub code: Option<ErrorCode>,
    /// What a front end acts on beside the words of a failure.
    #[serde(default)]
    pub data: Option<wire::ErrorData>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::TimeoutPolicy;

    #[test]
    fn requests_read_as_documented() {
        let request: Request =
            serde_json::from_str(r#"{"op":"detach","key":"c1","name":"web"}"#).expect("parse");
        assert_eq!(
            request,
            Request::Detach(requests::Detach {
                key: "c1".into(),
                name: Some("web".into()),
                reason: None
            })
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

    #[test]
    fn lines_clients_send_today_keep_reading_as_they_do() {
        // Wire API: these lines must keep reading (and writing) exactly so.
        let golden = [
            (
                r#"{"op":"run","command":"sleep 9","id":null,"cwd":null,"timeout_ms":500,"on_timeout":"detach","max_bytes":null,"title":null,"env":[],"started":false}"#,
                Request::Run(requests::Run {
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
                    background: false,
                    report_folder: false,
                    no_exit_note: false,
                }),
            ),
            (
                r#"{"op":"send","key":"c1","text":"q","bytes":[27,255]}"#,
                Request::Send(requests::Send {
                    key: "c1".into(),
                    text: "q".into(),
                    bytes: vec![27, 255],
                }),
            ),
            (
                r#"{"op":"send","key":"c1","text":"yes\n"}"#,
                Request::Send(requests::Send {
                    key: "c1".into(),
                    text: "yes\n".into(),
                    bytes: Vec::new(),
                }),
            ),
            (
                r#"{"op":"kill","key":"web"}"#,
                Request::Kill(requests::Kill { key: "web".into() }),
            ),
            (r#"{"op":"list"}"#, Request::List(requests::List {})),
        ];
        for (line, request) in golden {
            assert_eq!(serde_json::from_str::<Request>(line).expect(line), request);
            assert_eq!(serde_json::to_string(&request).expect("encode"), line);
        }
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
    fn a_refusal_carries_its_data_for_front_ends_to_act_on() {
        let forgotten = crate::core::CoreError::Forgotten {
            key: "t1".into(),
            kept: 1000,
            log_path: "/logs/c1.log".into(),
        };
        let line = Reply::from_error(&forgotten).as_bytes().to_vec();
        let expected = format!(
            r#"{{"ok":false,"code":"forgotten","error":{},"data":{{"key":"t1","log_path":"/logs/c1.log"}}}}"#,
            serde_json::Value::String(forgotten.to_string())
        );
        assert_eq!(String::from_utf8_lossy(&line), expected);
        let read: ReplyOf<()> = serde_json::from_slice(&line).expect("decode");
        let data = read.data.map(Travel::from_wire);
        assert_eq!(data, Some(forgotten.data()));
        // A failure without data has no `data`, as before.
        let plain = crate::core::CoreError::EmptyCommand;
        assert!(!String::from_utf8_lossy(Reply::from_error(&plain).as_bytes()).contains("data"));
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
