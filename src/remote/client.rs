//! The client side of the protocol: connect to the server (starting it when none answers) and
//! ask it things.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::inert::escaped;
use crate::remote::address::{Address, Transport};

use crate::remote::protocol::{
    Ask, ErrorCode, MAX_REPLY_BYTES, PROTOCOL_VERSION, ReplyOf, Request, Travel, requests,
};

/// How long a client waits for a server it started to answer.
const START_DEADLINE: Duration = Duration::from_secs(10);
/// How often it looks meanwhile.
const START_POLL: Duration = Duration::from_millis(20);

/// How long a server on another machine may take to answer a quick question (the hello, a list,
/// a page) before the client gives up on it: a far side that went silent, or a transport that
/// never reaches one (`--via 'sleep 1000'`).
pub(crate) const FAR_ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// Bytes read from the server at a time: a page of output (a mebibyte of JSON) comes in 16
/// reads, not 128.
const READ_BYTES: usize = 64 * 1024;

/// Bytes from the server.
type Incoming = BufReader<Box<dyn AsyncRead + Send + Unpin>>;

/// A connection to a server.
pub struct Client {
    reader: Incoming,
    writer: Box<dyn AsyncWrite + Send + Unpin>,
    address: Address,
    /// The transport's process, for a server elsewhere: it ends with the connection.
    transport: Option<tokio::process::Child>,
    /// The last of what the transport said on its standard error, drained as it comes so that
    /// a chatty transport never blocks on a full pipe.
    said: Arc<Mutex<Vec<u8>>>,
}

/// The other side sent what is no reply of oino's protocol (a line past [`MAX_REPLY_BYTES`],
/// text that is no reply): the connection is no use.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NotOino(pub String);

/// A server on another machine said nothing within [`FAR_ANSWER_WITHIN`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NoAnswer(pub String);

/// A request the server turned down: what kind of failure, and what to do in words.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Refused {
    pub code: ErrorCode,
    pub message: String,
    pub data: crate::core::ErrorData,
}

impl Client {
    /// Connects and says hello, once it has made sure that the server is this user's own: not a
    /// byte (the hello, a command, its environment) goes to a server of another user. A server
    /// elsewhere is reached through its transport, whose far side (`oino proxy`) makes the
    /// same check there.
    pub async fn connect(address: &Address) -> anyhow::Result<Self> {
        // Links are kept ready for a far side once a transport of a command's own reached it
        // (never for one out of reach, whose keeper would only fail again and again).
        let mut keep_ready = match address {
            Address::Through(transport) => transport.persist.map(|persist| (transport, persist)),
            Address::Socket(_) => None,
        };
        if let Some((transport, _)) = keep_ready
            && let Some((mut ready, report)) = Self::through_ready_link(transport).await
        {
            keep_ready = None;
            // A link kept ready that went stale meanwhile (its ssh connection dropped, or hangs)
            // is let go: a transport of this command's own says why, if it fails too.
            let answered =
                tokio::time::timeout(crate::remote::ready::ANSWER_WITHIN, ready.hello()).await;
            let answered = matches!(answered, Ok(Ok(())));
            report.answered(answered);
            if answered {
                return Ok(ready);
            }
        }
        let mut client = match address {
            Address::Socket(socket) => Self::connect_socket(socket).await?,
            Address::Through(transport) => Self::connect_through(transport)?,
        };
        match client.hello().await {
            Ok(()) => {
                if let Some((transport, persist)) = keep_ready {
                    crate::remote::ready::start_keeper(transport, persist);
                }
                Ok(client)
            }
            Err(err) => Err(client.refused_hello(err).await),
        }
    }

    async fn hello(&mut self) -> anyhow::Result<()> {
        self.ask(requests::Hello {
            version: PROTOCOL_VERSION,
            relayed: false,
        })
        .await
        .map(drop)
    }

    /// A link its keeper kept ready (`link_persist`), when one runs.
    async fn through_ready_link(
        transport: &Transport,
    ) -> Option<(Self, crate::remote::ready::Report)> {
        let (ready, report) = crate::remote::ready::take(transport).await?;
        let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(ready.stdout).ok()?;
        let writer = tokio::net::unix::pipe::Sender::from_owned_fd(ready.stdin).ok()?;
        let said = Arc::new(Mutex::new(Vec::new()));
        if let Ok(stderr) = tokio::net::unix::pipe::Receiver::from_owned_fd(ready.stderr) {
            tokio::spawn(keep_last_words(stderr, Arc::clone(&said)));
        }
        let client = Self {
            reader: BufReader::with_capacity(READ_BYTES, Box::new(reader)),
            writer: Box::new(writer),
            address: Address::Through(transport.clone()),
            transport: None,
            said,
        };
        Some((client, report))
    }

    async fn connect_socket(socket: &Path) -> anyhow::Result<Self> {
        if let Some(dir) = socket.parent().filter(|dir| dir.exists()) {
            crate::remote::socket::prepare_dir(dir)?;
        }
        let stream = UnixStream::connect(socket).await.map_err(|err| {
            if listens_not(&err) {
                anyhow::Error::new(NoServer {
                    socket: socket.to_owned(),
                    kind: err.kind(),
                })
            } else {
                anyhow::Error::new(err).context(format!(
                    "connecting to the oino server at {}",
                    socket.display()
                ))
            }
        })?;
        check_peer(&stream, socket)?;
        let (read, writer) = stream.into_split();
        Ok(Self {
            reader: BufReader::with_capacity(READ_BYTES, Box::new(read)),
            writer: Box::new(writer),
            address: Address::Socket(socket.to_owned()),
            transport: None,
            said: Arc::default(),
        })
    }

    fn connect_through(transport: &Transport) -> anyhow::Result<Self> {
        let mut child = transport.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            anyhow::bail!(
                "the transport {} has no standard input or output",
                transport.described()
            );
        };
        let said = Arc::new(Mutex::new(Vec::new()));
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(keep_last_words(stderr, Arc::clone(&said)));
        }
        Ok(Self {
            reader: BufReader::with_capacity(READ_BYTES, Box::new(stdout)),
            writer: Box::new(stdin),
            address: Address::Through(transport.clone()),
            transport: Some(child),
            said,
        })
    }

    /// Why the hello failed, in words: another version on the far side, something else than
    /// oino answering, or the transport's own error (ssh's "Could not resolve hostname", no
    /// `oino` there) when it ended.
    async fn refused_hello(mut self, err: anyhow::Error) -> anyhow::Error {
        let Address::Through(transport) = &self.address else {
            return err;
        };
        let this = format!(
            "this is oino {} (protocol {PROTOCOL_VERSION}): install the same version on both",
            env!("CARGO_PKG_VERSION")
        );
        if let Some(refused) = err.downcast_ref::<Refused>() {
            return match (refused.code, &refused.data.runs) {
                (ErrorCode::Version, Some(runs)) => {
                    NotOino(format!("{} {}; {this}", transport.name(), escaped(runs))).into()
                }
                // A server from before versions were said in data: its own words.
                (ErrorCode::Version, None) => NotOino(format!(
                    "{} runs another version of oino ({}); {this}",
                    transport.name(),
                    escaped(&refused.message)
                ))
                .into(),
                _ => err,
            };
        }
        if let Some(not_oino) = err.downcast_ref::<NotOino>() {
            return NotOino(format!(
                "{not_oino}: is `oino proxy` what runs there, and does the login print nothing \
                 before it? ({this})"
            ))
            .into();
        }
        if let Some(silent) = err.downcast_ref::<NoAnswer>() {
            return NoAnswer(format!(
                "{silent}: is `oino proxy` what runs there, and does the link reach it?"
            ))
            .into();
        }
        let Some(mut child) = self.transport.take() else {
            return err;
        };
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        // What it said before it ended, its pipe read to the end.
        let drained = async {
            while Arc::strong_count(&self.said) > 1 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), drained).await;
        let said = last_words(&self.said);
        let ended = match status {
            Ok(Ok(status)) => format!(" ({status})"),
            _ => String::new(),
        };
        // Its own words are the cause (a host's heading shows them alone).
        let words = if said.is_empty() {
            "it said nothing; is oino installed there (`oino proxy` on its PATH)?".to_owned()
        } else {
            escaped(&said).into_owned()
        };
        anyhow::anyhow!(words).context(format!(
            "cannot reach the oino server {}{ended}",
            transport.described()
        ))
    }

    /// Connects, starting a server in the background when none answers.
    pub(crate) async fn connect_or_start(address: &Address) -> anyhow::Result<Self> {
        // The far side's `oino proxy` starts its own server.
        let Address::Socket(socket) = address else {
            return Self::connect(address).await;
        };
        match Self::connect(address).await {
            Ok(client) => return Ok(client),
            // Nothing listens there: start a server. Anything else (a refusal) is an answer.
            Err(err) if !nobody_listens(&err) => return Err(err),
            Err(_) => {}
        }
        // A live server whose socket was just removed makes it again by itself; one that is
        // ending (its socket gone first, its lock last) does not: once it has let go of the lock,
        // a new one is started.
        let mut started: Option<std::process::Child> = None;
        let deadline = tokio::time::Instant::now() + START_DEADLINE;
        loop {
            if started.is_none() && crate::remote::socket::lock_holder(socket).is_none() {
                started = Some(start_server(socket)?);
            }
            match Self::connect(address).await {
                Ok(client) => return Ok(client),
                Err(err) if !nobody_listens(&err) => return Err(err),
                Err(err) => {
                    if let Some(failed) = started
                        .as_mut()
                        .and_then(|child| failed_start(child, socket))
                    {
                        return Err(failed);
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(not_started(err, socket));
                    }
                    tokio::time::sleep(START_POLL).await;
                }
            }
        }
    }

    /// Where the server is.
    #[must_use]
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// Asks a request of any kind, and reads its reply. A quick one asked of another machine
    /// is answered within [`FAR_ANSWER_WITHIN`], or given up on.
    pub async fn ask<A: Ask>(&mut self, request: A) -> anyhow::Result<A::Reply> {
        let request = request.into();
        let wire = match &self.address {
            Address::Through(transport) if !A::APART => {
                let name = transport.name();
                tokio::time::timeout(FAR_ANSWER_WITHIN, self.request(&request))
                    .await
                    .map_err(|_| {
                        NoAnswer(format!(
                            "{name} gave no answer within {} s",
                            FAR_ANSWER_WITHIN.as_secs()
                        ))
                    })??
            }
            _ => self.request(&request).await?,
        };
        Ok(Travel::from_wire(wire))
    }

    /// Sends a request and reads its reply in its wire form.
    pub async fn request<T: DeserializeOwned>(&mut self, request: &Request) -> anyhow::Result<T> {
        let mut line = serde_json::to_vec(request)?;
        line.push(b'\n');
        if let Err(err) = self.writer.write_all(&line).await {
            // A server that refused before reading (out of resources) has said why already.
            return match self.reply().await {
                Ok(reply) => Ok(reply),
                Err(refused) if refused.downcast_ref::<Refused>().is_some() => Err(refused),
                Err(_) => Err(self.went_away(err)),
            };
        }
        self.reply().await
    }

    /// The connection broke: the server went away, which is a failure to tell (never a reader
    /// of this command's output leaving).
    fn went_away(&self, err: std::io::Error) -> anyhow::Error {
        let why = match &self.address {
            Address::Socket(socket) => format!(
                "the oino server at {} went away before it answered (it was stopped, or it died)",
                socket.display()
            ),
            Address::Through(transport) => format!(
                "the link to {} dropped before the server there answered",
                transport.name()
            ),
        };
        anyhow::Error::new(err).context(why)
    }

    /// Whether the other side closed, or said something unasked: a connection kept for later
    /// that is no longer fit for a request.
    pub(crate) fn is_closed(&mut self) -> bool {
        // Polled once, never waited for (a request after it pays nothing): a connection that is
        // fine has nothing to read, and a close the reactor has seen is ready at once.
        let mut asked = std::task::Context::from_waker(std::task::Waker::noop());
        std::pin::pin!(self.reader.fill_buf())
            .as_mut()
            .poll(&mut asked)
            .is_ready()
    }

    /// Resolves once the other side closed the connection (what it says meanwhile is dropped).
    pub(crate) async fn closed(&mut self) {
        loop {
            let read = match self.reader.fill_buf().await {
                Ok([]) | Err(_) => return,
                Ok(bytes) => bytes.len(),
            };
            self.reader.consume(read);
        }
    }

    /// The next line the other side sends, at most [`MAX_REPLY_BYTES`] long (read a page at a
    /// time, never more): a longer one, or one cut short by the end of the connection, is an
    /// error, and the connection is no use after it.
    async fn next_line(&mut self) -> anyhow::Result<Vec<u8>> {
        let mut line = Vec::new();
        let read = (&mut self.reader)
            .take(MAX_REPLY_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        let cut =
            |why: &str| std::io::Error::new(std::io::ErrorKind::UnexpectedEof, why.to_owned());
        match read {
            Ok(0) => Err(self.went_away(cut("the connection was closed"))),
            Ok(_) if line.ends_with(b"\n") => Ok(line),
            Ok(_) if line.len() > MAX_REPLY_BYTES => Err(NotOino(format!(
                "{} sent a line longer than {} MiB, more than any reply of oino's protocol",
                self.other_side(),
                MAX_REPLY_BYTES >> 20
            ))
            .into()),
            // A reply is a whole line: one cut short is a server that died while it wrote.
            Ok(_) => Err(self.went_away(cut("the connection was closed in the middle of a reply"))),
            Err(err) => Err(self.went_away(err)),
        }
    }

    /// Who answers, in words: the far side of a transport, or the server at a socket.
    fn other_side(&self) -> String {
        match &self.address {
            Address::Socket(socket) => format!("the oino server at {}", socket.display()),
            Address::Through(transport) => transport.name(),
        }
    }

    /// Reads the next reply (a `run` with `started` has two).
    pub async fn reply<T: DeserializeOwned>(&mut self) -> anyhow::Result<T> {
        let reply = self.next_line().await?;
        let reply: ReplyOf<T> = serde_json::from_slice(&reply).map_err(|_| {
            NotOino(format!(
                "{} answered in something other than oino's protocol",
                self.other_side()
            ))
        })?;
        if !reply.ok {
            return Err(Refused {
                code: reply.code.unwrap_or(ErrorCode::Unknown),
                message: reply.error.unwrap_or_else(|| "refused".into()),
                data: reply.data.map(Travel::from_wire).unwrap_or_default(),
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
    pub async fn subscribe(mut self) -> anyhow::Result<Self> {
        self.ask(requests::Subscribe {}).await?;
        Ok(self)
    }

    /// Reads a line of what the server sends (an event, after [`Client::subscribe`]), at most
    /// [`MAX_REPLY_BYTES`]: an error at the end of the connection or past the cap.
    pub async fn next_event(&mut self) -> anyhow::Result<Vec<u8>> {
        self.next_line().await
    }

    /// The raw connection, for `oino proxy` to carry.
    pub(crate) fn into_parts(self) -> (Incoming, Box<dyn AsyncWrite + Send + Unpin>) {
        (self.reader, self.writer)
    }
}

/// Refuses a server run by another user (`SO_PEERCRED`), before anything is sent to it. Root's
/// server is another user's too, unless the client is root.
fn check_peer(stream: &UnixStream, socket: &Path) -> anyhow::Result<()> {
    let peer = stream
        .peer_cred()
        .with_context(|| format!("asking who serves {}", socket.display()))?
        .uid();
    let me = nix::unistd::getuid().as_raw();
    if peer == me {
        return Ok(());
    }
    Err(Refused {
        data: crate::core::ErrorData::default(),
        code: ErrorCode::Forbidden,
        message: format!(
            "the server at {} is run by {}, not by you ({}): oino sent it nothing. Another user \
             may be listening where your server should be: see who made {} (`ls -ld`), and \
             choose another socket (--socket, or XDG_RUNTIME_DIR)",
            socket.display(),
            crate::paths::user_name(peer),
            crate::paths::user_name(me),
            socket.parent().unwrap_or(socket).display()
        ),
    }
    .into())
}

/// No server listens at a socket: said as such, with what to do, not as the system's error.
#[derive(Debug, thiserror::Error)]
#[error(
    "no oino server is running on {}: `oino server` starts one (as `oino`, `oino run` and \
     `oino ls` do); another session's is chosen with -s NAME or --socket PATH",
    socket.display()
)]
pub struct NoServer {
    /// The socket tried.
    pub socket: PathBuf,
    /// How connecting failed: no socket, or a stale one.
    pub kind: std::io::ErrorKind,
}

/// Whether a connection's failure means that nobody listens: no socket, a stale one, or one
/// whose server died as the connection came.
fn listens_not(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::NotFound
            | std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::BrokenPipe
            | std::io::ErrorKind::UnexpectedEof
    )
}

/// Whether connecting failed because no server listens (starting one is safe then: the lock
/// lets one serve).
#[must_use]
pub(crate) fn nobody_listens(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.is::<NoServer>()
            || cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(listens_not)
    })
}

/// Why no server answered in time.
fn not_started(err: anyhow::Error, socket: &Path) -> anyhow::Error {
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
    let why = format!(
        "{why}; its log is {}",
        crate::remote::socket::server_log(socket).display()
    );
    // That none runs is what `why` says, better.
    if err.is::<NoServer>() {
        anyhow::anyhow!(why)
    } else {
        err.context(why)
    }
}

/// A server this client started that has already failed (one that gave way to another exits
/// with success): why, from the end of its log.
fn failed_start(child: &mut std::process::Child, socket: &Path) -> Option<anyhow::Error> {
    let status = child.try_wait().ok()??;
    if status.success() {
        return None;
    }
    let log = crate::remote::socket::server_log(socket);
    let last = crate::paths::open_for_reading(&log)
        .ok()
        .and_then(|file| {
            use std::io::{Read, Seek, SeekFrom};
            let mut file = file;
            let len = file.metadata().ok()?.len();
            file.seek(SeekFrom::Start(len.saturating_sub(4096))).ok()?;
            let mut tail = Vec::new();
            file.take(4096).read_to_end(&mut tail).ok()?;
            let tail = String::from_utf8_lossy(&tail).into_owned();
            tail.lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| format!("see its log, {}", log.display()));
    Some(anyhow::anyhow!(
        "the oino server for {} could not start: {}",
        socket.display(),
        crate::inert::escaped(&last)
    ))
}

/// How much of a transport's standard error is kept.
const LAST_WORDS: usize = 2048;

/// Reads a transport's standard error to its end, keeping the last [`LAST_WORDS`] bytes.
async fn keep_last_words(mut stderr: impl AsyncRead + Unpin, said: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = [0; 4096];
    while let Ok(read @ 1..) = stderr.read(&mut chunk).await {
        let mut kept = said
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.extend_from_slice(&chunk[..read]);
        let excess = kept.len().saturating_sub(LAST_WORDS);
        kept.drain(..excess);
    }
}

/// What a transport said, trimmed.
fn last_words(said: &Mutex<Vec<u8>>) -> String {
    let kept = said
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    String::from_utf8_lossy(&kept).trim().to_owned()
}

/// Starts `oino server` for `socket` in the background, detached from this terminal.
fn start_server(socket: &Path) -> anyhow::Result<std::process::Child> {
    crate::remote::socket::prepare_socket_dir(socket)?;
    // The server inherits this environment: a log folder it would refuse is refused here, in
    // words and with the status of an unsafe folder.
    crate::output::log_dir()?;
    let log = crate::paths::open_own_file(&crate::remote::socket::server_log(socket), true)
        .context("opening the server's log")?;
    let exe = std::env::current_exe().context("finding the oino program")?;
    std::process::Command::new(exe)
        // A client inside a call (an agent's `oino run`) starts a server that is not part of
        // that call: killing the call, or finding what it left after a crash, spares the server.
        .env_remove(crate::pty::CALL_ID_ENV)
        .env_remove(crate::pty::TREE_KEY_ENV)
        .env_remove(crate::pty::OWNER_ENV)
        .arg("server")
        .arg("--socket")
        .arg(socket)
        .arg("--foreground")
        .arg("--detached")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting the oino server")
}
