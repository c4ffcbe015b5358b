//! The client side of the protocol: one connection to a server (started when none answers),
//! shared by everything a front end asks of it. Each request carries an id (`req`) and its
//! replies name it, so a `run` that waits for its result, a `wait`, the server's events and
//! quick questions go side by side on one connection: through `--host`, one ssh connection. A
//! reader task hands each reply line to whoever asked it; a request given up on (its waiter
//! dropped) is cancelled on the server when it is one that waits (`run`, `wait`,
//! `wait_output`, `subscribe`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, watch};

use crate::inert::escaped;
use crate::remote::address::{Address, Transport};

use crate::remote::protocol::{
    Ask, ErrorCode, MAX_REPLY_BYTES, PROTOCOL_VERSION, ReplyOf, Request, Travel, encode_request,
    reply_id, requests, wire,
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

/// Event lines kept for a front end that has not taken them yet; past them, it is told that it
/// missed some (and lists everything again).
const EVENT_LINES: usize = 1024;

/// Bytes from the server.
type Incoming = BufReader<Box<dyn AsyncRead + Send + Unpin>>;
/// Bytes to the server.
type Outgoing = Box<dyn AsyncWrite + Send + Unpin>;

/// A connection to a server, before its reader runs: its two directions, and for a server
/// elsewhere, its transport.
struct Stream {
    reader: Incoming,
    writer: Outgoing,
    transport: Option<tokio::process::Child>,
    /// The last of what the transport said on its standard error, drained as it comes so that
    /// a chatty transport never blocks on a full pipe.
    said: Arc<Mutex<Vec<u8>>>,
}

/// A connection to a server, shared: clones ask on the same connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    address: Address,
    writer: tokio::sync::Mutex<Outgoing>,
    router: Arc<Router>,
    next_id: AtomicU64,
    reader: tokio::task::AbortHandle,
    /// The transport's process, for a server elsewhere: it ends with the connection.
    transport: Mutex<Option<tokio::process::Child>>,
    said: Arc<Mutex<Vec<u8>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// What the reader hands to whoever waits: a line, its reply (one naming the request, or one
/// naming none, from a server that answers in order: the oldest request's).
type Delivered = Vec<u8>;

/// Where the reader hands each line: the waiters by request id, and the events.
#[derive(Default)]
struct Router {
    waiting: Mutex<HashMap<u64, mpsc::Sender<Delivered>>>,
    events: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    /// Why the connection ended, once it did.
    ended: Mutex<Option<Ended>>,
    closed: watch::Sender<bool>,
}

/// How a connection ended.
#[derive(Clone, Debug)]
enum Ended {
    /// The other side closed it (between lines, or within one).
    Closed(&'static str),
    /// Reading failed.
    Failed(std::io::ErrorKind, String),
    /// A line past [`MAX_REPLY_BYTES`].
    TooLong,
}

/// A request the server turned down: what kind of failure, and what to do in words.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Refused {
    pub code: ErrorCode,
    pub message: String,
    pub data: crate::core::ErrorData,
}

/// The other side sent what is no reply of oino's protocol (a line past [`MAX_REPLY_BYTES`],
/// text that is no reply, a reply that names no request): the connection is no use.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NotOino(pub String);

/// A server on another machine said nothing within [`FAR_ANSWER_WITHIN`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NoAnswer(pub String);

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
            && let Some((ready, report)) = Self::through_ready_link(transport).await
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
        let stream = match address {
            Address::Socket(socket) => connect_socket(socket).await?,
            Address::Through(transport) => connect_through(transport)?,
        };
        let client = Self::start(address.clone(), stream);
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

    /// The client of `stream`, its reader running.
    fn start(address: Address, stream: Stream) -> Self {
        let router = Arc::new(Router::default());
        let reader = tokio::spawn(read_lines(
            stream.reader,
            Arc::clone(&router),
            address.clone(),
        ));
        Self {
            inner: Arc::new(Inner {
                address,
                writer: tokio::sync::Mutex::new(stream.writer),
                router,
                next_id: AtomicU64::new(1),
                reader: reader.abort_handle(),
                transport: Mutex::new(stream.transport),
                said: stream.said,
            }),
        }
    }

    async fn hello(&self) -> anyhow::Result<()> {
        let hello = self
            .ask(requests::Hello {
                version: PROTOCOL_VERSION,
                relayed: false,
            })
            .await;
        match hello {
            // A server of protocol 10 or older takes no request id: it refuses the field.
            Err(err)
                if err.downcast_ref::<Refused>().is_some_and(|refused| {
                    refused.code == ErrorCode::BadRequest && refused.message.contains("`req`")
                }) =>
            {
                Err(NotOino(format!(
                    "{} speaks an older protocol of oino",
                    self.other_side()
                ))
                .into())
            }
            hello => hello.map(drop),
        }
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
        let stream = Stream {
            reader: BufReader::with_capacity(READ_BYTES, Box::new(reader)),
            writer: Box::new(writer),
            transport: None,
            said,
        };
        Some((
            Self::start(Address::Through(transport.clone()), stream),
            report,
        ))
    }

    /// Why the hello failed, in words: another version on the far side, something else than
    /// oino answering, or the transport's own error (ssh's "Could not resolve hostname", no
    /// `oino` there) when it ended.
    async fn refused_hello(self, err: anyhow::Error) -> anyhow::Error {
        let this = format!(
            "this is oino {} (protocol {PROTOCOL_VERSION}): install the same version on both",
            env!("CARGO_PKG_VERSION")
        );
        let Address::Through(transport) = &self.inner.address else {
            // A server of this machine of another version: its own words say what to do.
            if let Some(not_oino) = err.downcast_ref::<NotOino>() {
                return NotOino(format!(
                    "{not_oino}: an oino server of another version still runs (`oino \
                     kill-server`, then start again; {this})"
                ))
                .into();
            }
            return err;
        };
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
        let child = self
            .inner
            .transport
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut child) = child else {
            return err;
        };
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        // What it said before it ended, its pipe read to the end.
        let said = Arc::clone(&self.inner.said);
        let drained = async {
            while Arc::strong_count(&said) > 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), drained).await;
        let said = last_words(&said);
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
        &self.inner.address
    }

    /// Asks a request of any kind, and reads its reply. A quick one asked of another machine
    /// is answered within [`FAR_ANSWER_WITHIN`], or given up on.
    pub async fn ask<A: Ask>(&self, request: A) -> anyhow::Result<A::Reply> {
        let request = request.into();
        let asked = async {
            let mut waiting = self.send(&request).await?;
            waiting.next().await
        };
        let line = match &self.inner.address {
            Address::Through(transport) if !A::SLOW => {
                tokio::time::timeout(FAR_ANSWER_WITHIN, asked)
                    .await
                    .map_err(|_| {
                        NoAnswer(format!(
                            "{} gave no answer within {} s",
                            transport.name(),
                            FAR_ANSWER_WITHIN.as_secs()
                        ))
                    })??
            }
            _ => asked.await?,
        };
        let wire = self.reply_of::<<A::Reply as Travel>::Wire>(&line)?;
        Ok(Travel::from_wire(wire))
    }

    /// Runs a call whose waiter is this client: its entry once it exists, and its result to
    /// come. Dropping the result's wait before it came cancels the run: the call is ended,
    /// unless it became a task.
    pub(crate) async fn run(&self, run: requests::Run) -> anyhow::Result<(wire::Entry, RunWait)> {
        let started = requests::Run {
            started: true,
            ..run
        };
        let mut waiting = self.send(&started.into()).await?;
        let entry = waiting.next().await?;
        let entry = self.reply_of(&entry)?;
        Ok((
            entry,
            RunWait {
                client: self.clone(),
                waiting,
            },
        ))
    }

    /// The server's events from now on, one JSON object a line, on this same connection. The
    /// subscription ends when the events are dropped.
    pub async fn subscribe(&self) -> anyhow::Result<Events> {
        let (tell, events) = mpsc::channel(EVENT_LINES);
        *self
            .inner
            .router
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(tell);
        let mut waiting = self.send(&requests::Subscribe {}.into()).await?;
        let subscribed = waiting.next().await?;
        self.reply_of::<String>(&subscribed)?;
        // Under way on the server until cancelled: cancelled when the events go.
        waiting.done = false;
        Ok(Events {
            lines: events,
            _subscription: waiting,
        })
    }

    /// Whether the other side closed the connection (a transport that died, a server that
    /// stopped): a connection kept for later that is no longer fit for a request.
    pub(crate) fn is_closed(&self) -> bool {
        *self.inner.router.closed.borrow()
    }

    /// Resolves once the other side closed the connection.
    pub(crate) async fn closed(&self) {
        let mut closed = self.inner.router.closed.subscribe();
        let _ = closed.wait_for(|closed| *closed).await;
    }

    /// Sends `request` under a new id; the wait for its replies.
    async fn send(&self, request: &Request) -> anyhow::Result<Waiting> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tell, replies) = mpsc::channel(2);
        self.inner
            .router
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, tell);
        // Waited for from here: dropped, it lets go of its place (and cancels what waits).
        let waiting = Waiting {
            client: self.clone(),
            id,
            replies,
            cancel: matches!(
                request,
                Request::Run(_) | Request::Wait(_) | Request::WaitOutput(_) | Request::Subscribe(_)
            ),
            done: false,
        };
        if let Err(err) = self.write(&encode_request(id, request)).await {
            // A server that refused before reading (out of resources) has said why already.
            let mut waiting = waiting;
            return match tokio::time::timeout(Duration::from_millis(200), waiting.next()).await {
                Ok(Ok(line)) => {
                    self.reply_of::<serde_json::Value>(&line)?;
                    Err(self.went_away(err))
                }
                _ => Err(self.went_away(err)),
            };
        }
        Ok(waiting)
    }

    async fn write(&self, line: &[u8]) -> std::io::Result<()> {
        let mut writer = self.inner.writer.lock().await;
        writer.write_all(line).await?;
        writer.flush().await
    }

    /// A reply line read as its result, or the refusal it says.
    fn reply_of<T: DeserializeOwned>(&self, line: &[u8]) -> anyhow::Result<T> {
        let reply: ReplyOf<T> = serde_json::from_slice(line).map_err(|_| {
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

    /// The connection broke: the server went away, which is a failure to tell (never a reader
    /// of this command's output leaving).
    fn went_away(&self, err: std::io::Error) -> anyhow::Error {
        let why = match &self.inner.address {
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

    /// Why the connection ended, as an error for whoever waited.
    fn ended(&self) -> anyhow::Error {
        let ended = self
            .inner
            .router
            .ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or(Ended::Closed("the connection was closed"));
        match ended {
            Ended::TooLong => NotOino(format!(
                "{} sent a line longer than {} MiB, more than any reply of oino's protocol",
                self.other_side(),
                MAX_REPLY_BYTES >> 20
            ))
            .into(),
            Ended::Closed(why) => {
                self.went_away(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, why))
            }
            Ended::Failed(kind, why) => self.went_away(std::io::Error::new(kind, why)),
        }
    }

    /// Who answers, in words: the far side of a transport, or the server at a socket.
    fn other_side(&self) -> String {
        match &self.inner.address {
            Address::Socket(socket) => format!("the oino server at {}", socket.display()),
            Address::Through(transport) => transport.name(),
        }
    }
}

/// The replies to one request, as they come; dropped before its last, it lets go of its place,
/// and cancels the request on the server when it is one that waits.
struct Waiting {
    client: Client,
    id: u64,
    replies: mpsc::Receiver<Delivered>,
    cancel: bool,
    done: bool,
}

impl Waiting {
    /// The next reply line; an error once the connection ended.
    async fn next(&mut self) -> anyhow::Result<Vec<u8>> {
        if let Some(line) = self.replies.recv().await {
            self.done = reply_id(&line).is_none_or(|(_, more)| !more);
            Ok(line)
        } else {
            self.done = true;
            Err(self.client.ended())
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.client
            .inner
            .router
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        if !self.done && self.cancel && !self.client.is_closed() {
            let client = self.client.clone();
            let cancel = encode_request(0, &requests::Cancel { of: self.id }.into());
            // Nothing waits for the cancel's own answer (id 0 is never asked for).
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = client.write(&cancel).await;
                });
            }
        }
    }
}

/// The result of a run, to come.
pub(crate) struct RunWait {
    client: Client,
    waiting: Waiting,
}

impl RunWait {
    /// Waits for the run's result.
    pub(crate) async fn result(mut self) -> anyhow::Result<wire::CallResult> {
        let line = self.waiting.next().await?;
        self.client.reply_of(&line)
    }
}

/// The server's events, one JSON object a line, while subscribed.
pub struct Events {
    lines: mpsc::Receiver<Vec<u8>>,
    _subscription: Waiting,
}

impl Events {
    /// The next event's line; `None` once the connection ended.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        self.lines.recv().await
    }
}

/// Reads the server's lines and hands each to whoever waits for it, until the connection ends.
async fn read_lines(mut reader: Incoming, router: Arc<Router>, _address: Address) {
    let mut lagged = false;
    let ended = loop {
        let mut line = Vec::new();
        let read = (&mut reader)
            .take(MAX_REPLY_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => break Ended::Closed("the connection was closed"),
            Ok(_) if line.ends_with(b"\n") => {}
            Ok(_) if line.len() > MAX_REPLY_BYTES => break Ended::TooLong,
            // A reply is a whole line: one cut short is a server that died while it wrote.
            Ok(_) => break Ended::Closed("the connection was closed in the middle of a reply"),
            Err(err) => break Ended::Failed(err.kind(), err.to_string()),
        }
        if let Some((id, more)) = reply_id(&line) {
            let waiter = {
                let mut waiting = router
                    .waiting
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if more {
                    waiting.get(&id).cloned()
                } else {
                    waiting.remove(&id)
                }
            };
            if let Some(waiter) = waiter {
                let _ = waiter.send(line).await;
            }
        } else if line.starts_with(br#"{"event""#) {
            let events = router
                .events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(events) = events {
                // A front end that falls behind is told it missed some, not waited for.
                if lagged && events.try_send(br#"{"event":"lagged"}"#.to_vec()).is_ok() {
                    lagged = false;
                }
                if !lagged && events.try_send(line).is_err() {
                    lagged = true;
                }
            }
        } else {
            // A line naming no request (a server of an older protocol, which answers in order;
            // a refusal before it read anything; a far side that is no oino): the oldest
            // request's, which reads it as it can.
            let oldest = {
                let mut waiting = router
                    .waiting
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let oldest = waiting.keys().min().copied();
                oldest.and_then(|id| waiting.remove(&id))
            };
            if let Some(waiter) = oldest {
                let _ = waiter.send(line).await;
            }
        }
    };
    *router.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(ended);
    // Whoever still waits learns that nothing more comes.
    router
        .waiting
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    router
        .events
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    router.closed.send_replace(true);
}

/// A connection to the server at `socket`, once it is known to be this user's.
async fn connect_socket(socket: &Path) -> anyhow::Result<Stream> {
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
    Ok(Stream {
        reader: BufReader::with_capacity(READ_BYTES, Box::new(read)),
        writer: Box::new(writer),
        transport: None,
        said: Arc::default(),
    })
}

/// A connection through `transport`, its process started.
fn connect_through(transport: &Transport) -> anyhow::Result<Stream> {
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
    Ok(Stream {
        reader: BufReader::with_capacity(READ_BYTES, Box::new(stdout)),
        writer: Box::new(stdin),
        transport: Some(child),
        said,
    })
}

/// The server at `socket` for `oino proxy` to carry: connected (started when none runs) and
/// told that a client on another machine is on the line, its two directions raw.
pub(crate) async fn relay(socket: &Path) -> anyhow::Result<(Incoming, Outgoing)> {
    // Started and checked as any client does, then let go: the relay's own connection says
    // that it carries a far client.
    drop(Client::connect_or_start(&Address::Socket(socket.to_owned())).await?);
    let mut stream = connect_socket(socket).await?;
    let hello = requests::Hello {
        version: PROTOCOL_VERSION,
        relayed: true,
    };
    let mut line = serde_json::to_vec(&Request::from(hello))?;
    line.push(b'\n');
    stream.writer.write_all(&line).await?;
    let mut reply = Vec::new();
    (&mut stream.reader)
        .take(MAX_REPLY_BYTES as u64)
        .read_until(b'\n', &mut reply)
        .await?;
    let reply: ReplyOf<serde_json::Value> =
        serde_json::from_slice(&reply).context("reading the server's hello")?;
    if !reply.ok {
        anyhow::bail!(
            "the oino server here refused the relay: {}",
            escaped(reply.error.as_deref().unwrap_or("refused"))
        );
    }
    Ok((stream.reader, stream.writer))
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
        .env_remove(crate::core::survivors::PROCESS_ENV)
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
