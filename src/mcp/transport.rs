//! Standard input and output as the bridge's MCP transport: one JSON-RPC message a line.
//!
//! Ours rather than rmcp's for two things a client must be able to count on: a line that is not a
//! message is answered (JSON-RPC's parse error -32700, or invalid request -32600, with a null id
//! when none can be read) instead of dropped without a word, and the end of the input is known at
//! once, so that the bridge ends itself and its waited calls without first waiting for answers
//! nobody will read.

use std::io;

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use crate::remote::protocol::{Line, read_line};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

/// The longest line read as a message; a longer one is answered with an error and dropped. Well
/// past what a tool call can use (a command is refused past 128 KiB, by the bridge, with the
/// request's id), so that a client is told about its too-long command and not left waiting for
/// an answer to a message that could not be read.
const MAX_LINE_BYTES: usize = 64 << 20;
/// Messages read ahead of the service, and lines queued for the writer.
const QUEUED_MESSAGES: usize = 64;

/// The transport given to rmcp.
pub struct Lines {
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    outgoing: mpsc::Sender<Vec<u8>>,
}

/// Resolves once the input has ended (or cannot be read).
pub(crate) struct InputEnded(watch::Receiver<bool>);

impl InputEnded {
    pub async fn wait(mut self) {
        let _ = self.0.wait_for(|ended| *ended).await;
    }
}

/// Reads messages from `input` and writes them to `output`, each on a task of its own.
pub fn lines<R, W>(input: R, output: W) -> (Lines, InputEnded)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (incoming_tx, incoming) = mpsc::channel(QUEUED_MESSAGES);
    let (outgoing, outgoing_rx) = mpsc::channel(QUEUED_MESSAGES);
    let (ended_tx, ended) = watch::channel(false);
    tokio::spawn(write_lines(output, outgoing_rx));
    tokio::spawn(read_lines(input, incoming_tx, outgoing.clone(), ended_tx));
    (Lines { incoming, outgoing }, InputEnded(ended))
}

impl Transport<RoleServer> for Lines {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            outgoing
                .send(line)
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "standard output closed"))
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        Ok(())
    }
}

async fn write_lines(mut output: impl AsyncWrite + Unpin, mut lines: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = lines.recv().await {
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

async fn read_lines(
    input: impl AsyncRead + Unpin,
    incoming: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    answers: mpsc::Sender<Vec<u8>>,
    ended: watch::Sender<bool>,
) {
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        let read = match read_line(&mut reader, &mut line, MAX_LINE_BYTES).await {
            // A last message without its newline is still one.
            Ok(Line::Whole | Line::CutShort) => read_message(&line),
            Ok(Line::TooLong) => Read::Answer(error_line(
                &Value::Null,
                PARSE_ERROR,
                &format!("Parse error: the message is longer than {MAX_LINE_BYTES} bytes"),
            )),
            Ok(Line::End) | Err(_) => break,
        };
        let delivered = match read {
            Read::Message(message) => incoming.send(*message).await.is_ok(),
            Read::Answer(answer) => answers.send(answer).await.is_ok(),
            Read::Nothing => true,
        };
        if !delivered {
            break;
        }
    }
    ended.send_replace(true);
}

const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const INVALID_PARAMS: i32 = -32602;

/// What one line is.
enum Read {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// An error response to write back.
    Answer(Vec<u8>),
    /// Nothing to do: an empty line, or a notification this bridge does not know (a
    /// notification is never answered).
    Nothing,
}

fn read_message(line: &[u8]) -> Read {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Read::Nothing;
    }
    if let Some(answer) = tool_call_without_a_name(line) {
        return Read::Answer(answer);
    }
    let err = match serde_json::from_slice(line) {
        Ok(message) => return Read::Message(Box::new(message)),
        Err(err) => err,
    };
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Read::Answer(error_line(
            &Value::Null,
            PARSE_ERROR,
            &format!("Parse error: {err}; send one JSON-RPC message a line"),
        ));
    };
    // A notification (a method, no id at all) is never answered, even a malformed one.
    if value.get("method").is_some() && value.get("id").is_none() {
        return Read::Nothing;
    }
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .unwrap_or(&Value::Null);
    Read::Answer(error_line(
        id,
        INVALID_REQUEST,
        &format!("Invalid Request: {err}"),
    ))
}

/// The answer to a `tools/call` request that names no tool (no `params`, or no `params.name`):
/// invalid params, saying what is missing, where the protocol's own reading would call the
/// method unknown.
fn tool_call_without_a_name(line: &[u8]) -> Option<Vec<u8>> {
    const TOOLS_CALL: &[u8] = b"\"tools/call\"";
    if !line
        .windows(TOOLS_CALL.len())
        .any(|window| window == TOOLS_CALL)
    {
        return None;
    }
    let value: Value = serde_json::from_slice(line).ok()?;
    if value.get("method")? != "tools/call" {
        return None;
    }
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())?;
    if value.pointer("/params/name").is_some_and(Value::is_string) {
        return None;
    }
    Some(error_line(
        id,
        INVALID_PARAMS,
        "Invalid params: `params.name` is missing: tools/call takes {\"name\": TOOL, \
         \"arguments\": {...}} (tools/list names the tools)",
    ))
}

fn error_line(id: &Value, code: i32, message: &str) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match read_message(line.as_bytes()) {
            Read::Answer(bytes) => serde_json::from_slice(&bytes).expect("JSON"),
            Read::Message(_) => panic!("{line} read as a message"),
            Read::Nothing => panic!("{line} not answered"),
        }
    }

    #[test]
    fn lines_that_are_no_message_get_the_error_json_rpc_names() {
        let garbage = answer("garbage\n");
        assert_eq!(garbage["id"], Value::Null);
        assert_eq!(garbage["error"]["code"], PARSE_ERROR);
        let cut = answer(r#"{"jsonrpc": "2.0", "id": 1, "method""#);
        assert_eq!(cut["error"]["code"], PARSE_ERROR);
        let shapeless = answer(r#"{"a": 1}"#);
        assert_eq!(shapeless["id"], Value::Null);
        assert_eq!(shapeless["error"]["code"], INVALID_REQUEST);
        let bad_params = answer(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":7}"#);
        assert_eq!(bad_params["id"], 4);
        assert_eq!(bad_params["error"]["code"], INVALID_PARAMS);
        let nameless = answer(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#);
        assert_eq!(nameless["id"], 5);
        assert_eq!(nameless["error"]["code"], INVALID_PARAMS);
        let message = nameless["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("`params.name` is missing"), "{message}");
        let nameless = answer(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}"#);
        assert_eq!(nameless["error"]["code"], INVALID_PARAMS);
        let named = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash"}}"#;
        assert!(matches!(read_message(named.as_bytes()), Read::Message(_)));
        let bad_id = answer(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#);
        assert_eq!(bad_id["id"], Value::Null);
        assert_eq!(bad_id["error"]["code"], INVALID_REQUEST);
    }

    #[test]
    fn messages_blank_lines_and_unknown_notifications_are_not_answered() {
        let ping = r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#;
        assert!(matches!(read_message(ping.as_bytes()), Read::Message(_)));
        let with_crlf = format!("{ping}\r\n");
        assert!(matches!(
            read_message(with_crlf.as_bytes()),
            Read::Message(_)
        ));
        assert!(matches!(read_message(b"  \r\n"), Read::Nothing));
        let foreign = r#"{"jsonrpc":"2.0","method":"$/progress","params":{"x":1}}"#;
        assert!(!matches!(read_message(foreign.as_bytes()), Read::Answer(_)));
    }
}
