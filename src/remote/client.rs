//! The client side of the protocol: connect to the server (starting it when none answers) and
//! ask it things.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::remote::protocol::{ErrorCode, Hello, PROTOCOL_VERSION, ReplyOf, Request};

/// How long a client waits for a server it started to answer.
const START_DEADLINE: Duration = Duration::from_secs(10);
/// How often it looks meanwhile.
const START_POLL: Duration = Duration::from_millis(20);

/// A connection to a server.
pub struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    socket: PathBuf,
}

/// A request the server turned down: what kind of failure, and what to do in words.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    pub code: ErrorCode,
    pub message: String,
}

impl Client {
    /// Connects and says hello.
    pub async fn connect(socket: &Path) -> anyhow::Result<Self> {
        let stream = UnixStream::connect(socket)
            .await
            .with_context(|| format!("connecting to the oino server at {}", socket.display()))?;
        let (read, writer) = stream.into_split();
        let mut client = Self {
            reader: BufReader::new(read),
            writer,
            socket: socket.to_owned(),
        };
        let _: Hello = client
            .request(&Request::Hello {
                version: PROTOCOL_VERSION,
            })
            .await?;
        Ok(client)
    }

    /// Connects, starting a server in the background when none answers.
    pub async fn connect_or_start(socket: &Path) -> anyhow::Result<Self> {
        match Self::connect(socket).await {
            Ok(client) => return Ok(client),
            // Nothing listens there: start a server. Anything else (a refusal) is an answer.
            Err(err) if !nobody_listens(&err) => return Err(err),
            Err(_) => {}
        }
        // A live server whose socket was just removed makes it again by itself; one that is
        // ending (its socket gone first, its lock last) does not: once it has let go of the lock,
        // a new one is started.
        let mut started = false;
        let deadline = tokio::time::Instant::now() + START_DEADLINE;
        loop {
            if !started && crate::remote::socket::lock_holder(socket).is_none() {
                start_server(socket)?;
                started = true;
            }
            match Self::connect(socket).await {
                Ok(client) => return Ok(client),
                Err(err) if tokio::time::Instant::now() >= deadline => {
                    let why = match crate::remote::socket::lock_holder(socket) {
                        Some(pid) => format!(
                            "a server (pid {pid}) holds {} but does not answer at {}",
                            crate::remote::socket::lock_path(socket).display(),
                            socket.display()
                        ),
                        None => format!(
                            "the oino server did not start within {} s",
                            START_DEADLINE.as_secs()
                        ),
                    };
                    return Err(err.context(format!(
                        "{why}; its log is {}",
                        crate::remote::socket::server_log(socket).display()
                    )));
                }
                Err(_) => tokio::time::sleep(START_POLL).await,
            }
        }
    }

    #[must_use]
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Sends a request and reads its reply.
    pub async fn request<T: DeserializeOwned>(&mut self, request: &Request) -> anyhow::Result<T> {
        let mut line = serde_json::to_vec(request)?;
        line.push(b'\n');
        if let Err(err) = self.writer.write_all(&line).await {
            // A server that refused before reading (out of resources) has said why already.
            return match self.reply().await {
                Ok(reply) => Ok(reply),
                Err(refused) if refused.downcast_ref::<Refused>().is_some() => Err(refused),
                Err(_) => Err(err.into()),
            };
        }
        self.reply().await
    }

    /// Reads the next reply (a `run` with `started` has two).
    pub async fn reply<T: DeserializeOwned>(&mut self) -> anyhow::Result<T> {
        let mut reply = String::new();
        if self.reader.read_line(&mut reply).await? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the oino server closed the connection",
            )
            .into());
        }
        let reply: ReplyOf<T> =
            serde_json::from_str(&reply).context("reading the server's reply")?;
        if !reply.ok {
            return Err(Refused {
                code: reply.code.unwrap_or(ErrorCode::Unknown),
                message: reply.error.unwrap_or_else(|| "refused".into()),
            }
            .into());
        }
        match reply.result {
            Some(result) => Ok(result),
            // A result of null reads as absent: read it as the type's null.
            None => Ok(serde_json::from_value(serde_json::Value::Null)?),
        }
    }
}

impl Client {
    /// Turns this connection into the server's stream of events, one JSON object a line.
    pub async fn subscribe(mut self) -> anyhow::Result<BufReader<OwnedReadHalf>> {
        let _: String = self.request(&Request::Subscribe {}).await?;
        Ok(self.reader)
    }
}

/// Whether connecting failed because no server listens: no socket, a stale one, or one whose
/// server died as the connection came (starting one is safe: the lock lets one serve).
fn nobody_listens(err: &anyhow::Error) -> bool {
    err.downcast_ref::<std::io::Error>().is_some_and(|err| {
        matches!(
            err.kind(),
            std::io::ErrorKind::NotFound
                | std::io::ErrorKind::ConnectionRefused
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof
        )
    })
}

/// Starts `oino server` for `socket` in the background, detached from this terminal.
fn start_server(socket: &Path) -> anyhow::Result<()> {
    crate::remote::socket::prepare_dir(socket.parent().context("the socket path has no folder")?)?;
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .open(crate::remote::socket::server_log(socket))
        .context("opening the server's log")?;
    let exe = std::env::current_exe().context("finding the oino program")?;
    std::process::Command::new(exe)
        .arg("server")
        .arg("--socket")
        .arg(socket)
        .arg("--foreground")
        .arg("--detached")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting the oino server")?;
    Ok(())
}
