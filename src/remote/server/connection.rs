//! One client's connection. Requests are read one after another. One with an `id` is served
//! beside the others (at most [`MAX_IN_FLIGHT`] at once: past them the next is read once one is
//! answered), and its replies carry its id; one without is served before the next line is read,
//! as a script reading a line after another expects. Replies and a subscription's events are
//! written one line each as they come, through one writer. `cancel` ends a request under way;
//! the client's end (both halves of its connection closed) ends them all: a call it waited for
//! is ended, or kept as a task when the connection carries a client on another machine
//! (`relayed`).

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncWriteExt, BufReader, Interest};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Semaphore, mpsc, watch};

use crate::core::{Core, EntryKind};
use crate::remote::dispatch;
use crate::remote::protocol::requests::{Cancel, Run};
use crate::remote::protocol::{
    Bounded, ErrorCode, Line, MAX_IN_FLIGHT, MAX_REQUEST_BYTES, Reply, Request, Travel,
    decode_request, read_line,
};

/// [`MAX_IN_FLIGHT`] as the semaphore counts it.
#[allow(clippy::cast_possible_truncation)] // 64.
const IN_FLIGHT_PERMITS: u32 = MAX_IN_FLIGHT as u32;

/// Lines waiting for the writer: a client that reads nothing holds up its own requests, never
/// the server's memory.
const OUTBOX_LINES: usize = 16;

/// What a connection shares among the requests it serves.
#[derive(Clone)]
struct Serving {
    core: Core,
    stop: watch::Sender<bool>,
    outbox: mpsc::Sender<Outgoing>,
    /// Set by `hello` from `oino proxy`: the connection carries a client on another machine.
    relayed: Arc<AtomicBool>,
    /// The requests with an id under way, each with the means to cancel it.
    under_way: Arc<Mutex<HashMap<u64, watch::Sender<bool>>>>,
    /// True once the client is gone (both halves closed, or a write failed).
    gone: watch::Receiver<bool>,
}

/// A line for the writer, and who waits until it is written.
type Outgoing = (Vec<u8>, Option<tokio::sync::oneshot::Sender<()>>);

/// What serving a request without an id leaves the connection to do.
enum Then {
    /// Read the next request.
    Next,
    /// Nothing more: the server stops (`kill_server`).
    End,
    /// The connection carries events from now on, until the client goes.
    Events,
}

/// Serves one client of this user's until it goes.
pub(super) async fn serve(stream: UnixStream, core: &Core, stop: &watch::Sender<bool>) {
    // A descriptor of its own, registered apart from the stream's reads and writes: the
    // client's end is seen whatever the writer does.
    let end = match ClientEnd::watch(&stream) {
        Ok(end) => end,
        Err(refusal) => {
            let _ = super::answer_first_request(stream, &refusal).await;
            return;
        }
    };
    let (read, write) = stream.into_split();
    let (outbox, lines) = mpsc::channel(OUTBOX_LINES);
    let (went, gone) = watch::channel(false);
    let writer = tokio::spawn(write_lines(write, lines, went.clone()));
    let watcher = tokio::spawn(async move {
        end.gone().await;
        let _ = went.send(true);
    });
    let serving = Serving {
        core: core.clone(),
        stop: stop.clone(),
        outbox,
        relayed: Arc::default(),
        under_way: Arc::default(),
        gone,
    };
    let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    read_requests(read, &serving, &permits).await;
    // What was asked is answered before the connection ends (a client that only shut its
    // writing half still reads), unless the client went.
    let mut gone = serving.gone.clone();
    tokio::select! {
        _ = permits.acquire_many(IN_FLIGHT_PERMITS) => {}
        _ = gone.wait_for(|gone| *gone) => {}
    }
    drop(serving);
    let _ = writer.await;
    watcher.abort();
}

/// Reads and serves requests until the client stops sending, goes, or the connection becomes
/// a stream of events.
async fn read_requests(read: OwnedReadHalf, serving: &Serving, permits: &Arc<Semaphore>) {
    let mut reader = BufReader::new(read);
    let mut line = Vec::new();
    let mut gone = serving.gone.clone();
    loop {
        let read = tokio::select! {
            read = read_line(&mut reader, &mut line, MAX_REQUEST_BYTES) => read,
            _ = gone.wait_for(|gone| *gone) => return,
        };
        let (id, request) = match read {
            Err(_) | Ok(Line::End) => return,
            Ok(Line::TooLong) => {
                let too_long = Reply::failure(
                    ErrorCode::TooLarge,
                    format!(
                        "the request is longer than {MAX_REQUEST_BYTES} bytes: send less at a \
                         time"
                    ),
                );
                serving.send(too_long.framed(None, false)).await;
                continue;
            }
            Ok(Line::CutShort) => {
                let cut = Reply::failure(
                    ErrorCode::BadRequest,
                    "the request was cut short by the end of the connection: end each request \
                     with a newline",
                );
                serving.send(cut.framed(None, false)).await;
                return;
            }
            Ok(Line::Whole) => decode(&line),
        };
        let request = match request {
            Ok(request) => request,
            Err(refusal) => {
                serving.send(refusal.framed(id, false)).await;
                continue;
            }
        };
        let Some(id) = id else {
            match serving.serve(None, request, std::future::pending()).await {
                Then::Next => continue,
                Then::End => return,
                Then::Events => {
                    serving.stream_events().await;
                    return;
                }
            }
        };
        if !serving.begin(id, request, permits, &mut gone).await {
            return;
        }
    }
}

/// The request a line holds, held within its bounds (the door), or the refusal to send.
fn decode(line: &[u8]) -> (Option<u64>, Result<Request, Reply>) {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let (id, request) = decode_request(line);
    let request = request
        .map_err(|err| {
            Reply::failure(
                ErrorCode::BadRequest,
                format!("not a request: {err}; send one JSON object a line, see docs/protocol.md"),
            )
        })
        // The door: every number the request carries is held within its bound here, once.
        .and_then(|request| request.bounded().map_err(|err| Reply::from_error(&err)));
    (id, request)
}

impl Serving {
    /// Writes a line, unless the client is gone.
    async fn send(&self, line: Vec<u8>) {
        let _ = self.outbox.send((line, None)).await;
    }

    /// Writes a line, and waits until it is written (or the client went).
    async fn send_written(&self, line: Vec<u8>) {
        let (written, wait) = tokio::sync::oneshot::channel();
        if self.outbox.send((line, Some(written))).await.is_ok() {
            let _ = wait.await;
        }
    }

    /// Starts serving the request `id` beside the others, once a place is free; false when the
    /// client went meanwhile.
    async fn begin(
        &self,
        id: u64,
        request: Request,
        permits: &Arc<Semaphore>,
        gone: &mut watch::Receiver<bool>,
    ) -> bool {
        let permit = tokio::select! {
            permit = Arc::clone(permits).acquire_owned() => permit,
            _ = gone.wait_for(|gone| *gone) => return false,
        };
        let Ok(permit) = permit else {
            return false;
        };
        let (cancel, cancelled) = watch::channel(false);
        let taken = {
            let mut under_way = self
                .under_way
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let taken = under_way.contains_key(&id);
            if !taken {
                under_way.insert(id, cancel);
            }
            taken
        };
        if taken {
            let taken = Reply::failure(
                ErrorCode::BadRequest,
                format!("request {id} is under way already: give each request its own id"),
            );
            self.send(taken.framed(Some(id), false)).await;
            return true;
        }
        let serving = self.clone();
        tokio::spawn(async move {
            let mut cancelled = cancelled;
            let cancelled = async move {
                let _ = cancelled.wait_for(|cancelled| *cancelled).await;
            };
            if let Then::End = serving.serve(Some(id), request, cancelled).await {
                // The server stops: nothing more is read or served here.
            }
            serving
                .under_way
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            drop(permit);
        });
        true
    }

    /// Serves one request to its end; `cancelled` resolves when a `cancel` names it.
    async fn serve(
        &self,
        id: Option<u64>,
        request: Request,
        cancelled: impl Future<Output = ()> + Send,
    ) -> Then {
        let mut gone = self.gone.clone();
        // A cancel, or the client gone: the same for what it waits for.
        let ended = async move {
            tokio::select! {
                () = cancelled => {}
                _ = gone.wait_for(|gone| *gone) => {}
            }
        };
        let reply = match request {
            Request::Hello(hello) => {
                if hello.relayed {
                    self.relayed.store(true, Ordering::Relaxed);
                }
                dispatch::hello(&hello)
            }
            Request::KillServer(_) => {
                // Written before the server stops: the client learns it was heard.
                self.send_written(Reply::success("stopping").framed(id, false))
                    .await;
                self.stop.send_replace(true);
                return Then::End;
            }
            Request::Cancel(Cancel { of }) => {
                let cancel = self
                    .under_way
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&of)
                    .map(|cancel| cancel.send(true));
                Reply::success(if cancel.is_some() {
                    "cancelled"
                } else {
                    "not under way"
                })
            }
            Request::Subscribe(_) => {
                self.send(Reply::success("subscribed").framed(id, false))
                    .await;
                if id.is_none() {
                    return Then::Events;
                }
                // Beside the other requests, until it is cancelled or the client goes.
                tokio::select! {
                    () = self.stream_events() => {}
                    () = ended => {}
                }
                return Then::Next;
            }
            Request::Run(run) => match self.run(id, run, ended).await {
                Some(reply) => reply,
                None => return Then::Next,
            },
            request @ (Request::Wait(_) | Request::WaitOutput(_)) => {
                // A wait nobody reads any more ends with it.
                tokio::select! {
                    reply = answer(&self.core, request) => reply,
                    () = ended => return Then::Next,
                }
            }
            // What changes something runs to its end: a kill cut short could leave half a tree.
            request => answer(&self.core, request).await,
        };
        self.send(reply.framed(id, false)).await;
        Then::Next
    }

    /// Runs a call to its result for a client that waits; with `started`, says first that it
    /// exists. `None` when the request was cancelled or its client went before the result: the
    /// call is ended, since nobody would read what it did (a call detached before that lives
    /// on as a task); a client on another machine whose link dropped (`relayed`) may still
    /// want it: its call is detached, and lives on as a task.
    async fn run(
        &self,
        id: Option<u64>,
        request: Run,
        ended: impl Future<Output = ()>,
    ) -> Option<Reply> {
        let failed = |err: crate::core::CoreError| Reply::from_error(&err);
        let started = request.started;
        let handle = match self.core.start(request.into_call()) {
            Ok(handle) => handle,
            Err(err) => return Some(failed(err)),
        };
        let call = handle.id.clone();
        let result = handle.result();
        tokio::pin!(result);
        if started {
            let entry = self
                .core
                .entry(&call)
                .map_or_else(failed, |entry| Reply::success(entry.to_wire()));
            self.send(entry.framed(id, true)).await;
        }
        tokio::select! {
            biased;
            result = &mut result => return Some(Reply::success(result.to_wire())),
            () = ended => {}
        }
        // Unless it became a task just now: that one lives on.
        let core = &self.core;
        if core
            .entry(&call)
            .is_ok_and(|entry| entry.kind == EntryKind::Call)
        {
            if self.relayed.load(Ordering::Relaxed) {
                let _ = core
                    .detach_for(
                        &call,
                        None,
                        "the link to its waiter dropped",
                        crate::call::DetachCause::LinkDropped,
                    )
                    .await;
            } else {
                let _ = core.kill(&call).await;
            }
        }
        result.await;
        None
    }

    /// Writes the core's events until the client goes. One that falls behind is told so
    /// (`{"event": "lagged"}`) and should list the entries again.
    async fn stream_events(&self) {
        let mut events = self.core.subscribe();
        let mut gone = self.gone.clone();
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                _ = gone.wait_for(|gone| *gone) => return,
            };
            let line = match event {
                Ok(event) => match serde_json::to_vec(&event.to_wire()) {
                    Ok(mut line) => {
                        line.push(b'\n');
                        line
                    }
                    Err(_) => continue,
                },
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    b"{\"event\":\"lagged\"}\n".to_vec()
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if self.outbox.send((line, None)).await.is_err() {
                return;
            }
        }
    }
}

/// The core's reply to a request it answers.
async fn answer(core: &Core, request: Request) -> Reply {
    match dispatch::answer(core, request).await {
        Some(reply) => reply,
        None => Reply::failure(ErrorCode::BadRequest, "not a request of the core"),
    }
}

/// Writes the lines as they come, until every sender is gone; a write that fails means the
/// client went.
async fn write_lines(
    mut write: OwnedWriteHalf,
    mut lines: mpsc::Receiver<Outgoing>,
    went: watch::Sender<bool>,
) {
    while let Some((line, written)) = lines.recv().await {
        if write.write_all(&line).await.is_err() {
            let _ = went.send(true);
            // What is still sent is dropped: nobody reads it.
            while lines.recv().await.is_some() {}
            return;
        }
        if let Some(written) = written {
            let _ = written.send(());
        }
    }
}

/// The far end of a connection, watched for its closing: the kernel reports a hang-up only once
/// both halves are closed, so a client that shut its writing half (and any bytes it sent ahead,
/// unread) does not count as gone.
pub(super) struct ClientEnd(UnixStream);

impl ClientEnd {
    /// The watch, or the refusal to answer when there is no descriptor left for it.
    pub(super) fn watch(stream: &UnixStream) -> Result<Self, Reply> {
        // A descriptor of its own, registered apart from the stream's reads and writes; nothing
        // is ever read or written through it.
        stream
            .as_fd()
            .try_clone_to_owned()
            .and_then(|fd| UnixStream::from_std(fd.into()))
            .map(Self)
            .map_err(|err| {
                Reply::failure(
                    ErrorCode::Busy,
                    format!("the server has no file descriptor to spare ({err}): try again"),
                )
            })
    }

    async fn gone(&self) {
        loop {
            match self.0.ready(Interest::WRITABLE).await {
                Ok(ready) if !ready.is_write_closed() => {
                    // Wait for the next change, not this state again.
                    let _ = self.0.try_io(Interest::WRITABLE, || {
                        Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
                    });
                }
                _ => return,
            }
        }
    }
}
