//! The core as a front end reaches it: in this process, or through the server.
//!
//! The interface asks a [`Link`] for owned values (entries, screens, history pages) and hands it
//! its effects (start, detach, kill, write, resize); events come back through [`Events`]. Locally
//! these are calls on the [`Core`]; remotely, requests on one connection to the server, which
//! carries quick questions, runs and waits, and the events side by side.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, broadcast, mpsc};

use crate::call::CallResult;
use crate::core::{CallRequest, Core, CoreConfig, CoreError, CoreEvent, EntryInfo, ErrorCode};
use crate::output::{Followed, Follower, LineMatcher, OutputSlice, OutputSource};
use crate::remote::address::Address;
use crate::remote::client::Client;
use crate::remote::dispatch::Handle;
use crate::remote::protocol::requests as ask;
use crate::remote::protocol::{Ask, Bounded, PROTOCOL_VERSION, Travel};

mod error;

pub use error::{LinkError, ServerGone, error_code, refusal};

/// When a run becomes a task if it still runs: after `after` (at once if zero), or the moment a
/// line of its clean text matches `on_line`; named `name` (else the name it asked for at its
/// start, else one after its command).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DetachWhen<'a> {
    pub after: Option<Duration>,
    pub on_line: Option<&'a regex::Regex>,
    pub name: Option<&'a str>,
}

impl DetachWhen<'_> {
    fn is_never(&self) -> bool {
        self.after.is_none() && self.on_line.is_none()
    }
}

/// A run's result, to come.
pub(crate) type RunResult = tokio::task::JoinHandle<Result<CallResult, LinkError>>;

/// Events buffered from a remote server.
const REMOTE_EVENTS: usize = 1024;

/// Where the core is.
#[derive(Clone)]
pub enum Link {
    /// The core in this process: its processes end with it.
    Local(Core),
    /// A server, reached through its socket.
    Remote(Arc<Remote>),
}

/// A server, as one front end uses it: one connection, made again when it closed (a server
/// restarted, a link dropped).
pub struct Remote {
    address: Address,
    client: Mutex<Option<Client>>,
}

/// What an event source yields.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkEvent {
    /// An event of the core.
    Core(CoreEvent),
    /// Events were missed: list everything again.
    Lagged,
    /// No more events will come (the server went away).
    Closed,
}

/// The core's events, from either side.
pub enum Events {
    /// A core in this process: its broadcast.
    Local(broadcast::Receiver<CoreEvent>),
    /// A server's, read from a connection subscribed to them.
    Remote(mpsc::Receiver<LinkEvent>),
}

impl Events {
    /// The next event; [`LinkEvent::Closed`] once none will come.
    pub async fn recv(&mut self) -> LinkEvent {
        match self {
            Self::Local(events) => match events.recv().await {
                Ok(event) => LinkEvent::Core(event),
                Err(broadcast::error::RecvError::Lagged(_)) => LinkEvent::Lagged,
                Err(broadcast::error::RecvError::Closed) => LinkEvent::Closed,
            },
            Self::Remote(events) => events.recv().await.unwrap_or(LinkEvent::Closed),
        }
    }

    /// The next event if one is there already.
    pub fn try_recv(&mut self) -> Option<LinkEvent> {
        match self {
            Self::Local(events) => match events.try_recv() {
                Ok(event) => Some(LinkEvent::Core(event)),
                Err(broadcast::error::TryRecvError::Lagged(_)) => Some(LinkEvent::Lagged),
                Err(broadcast::error::TryRecvError::Closed) => Some(LinkEvent::Closed),
                Err(broadcast::error::TryRecvError::Empty) => None,
            },
            Self::Remote(events) => match events.try_recv() {
                Ok(event) => Some(event),
                Err(mpsc::error::TryRecvError::Disconnected) => Some(LinkEvent::Closed),
                Err(mpsc::error::TryRecvError::Empty) => None,
            },
        }
    }
}

impl ServerGone {
    /// The output the call had written, read back from its log (and the parts of a capped
    /// one, with a line where the cap left some out), cleaned and capped at `max_bytes` as a
    /// result is.
    #[must_use]
    pub(crate) fn output_so_far(&self, max_bytes: usize) -> String {
        crate::output::log_text(&self.log_path, max_bytes)
    }
}

/// Whether an error is the end of a server's connection, not an answer of the server.
fn connection_lost(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|err| {
            matches!(
                err.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            )
        })
    })
}

impl Link {
    /// A link to the server at `address`, starting it when none answers.
    pub async fn remote(address: &Address) -> anyhow::Result<Self> {
        Ok(Self::over(Client::connect_or_start(address).await?))
    }

    /// The one choice between a server and this process: the server at `socket` (started when
    /// none answers), or with none, a core of this process's own.
    pub async fn open(socket: Option<&Address>) -> anyhow::Result<Self> {
        Self::open_with(socket, CoreConfig::default()).await
    }

    /// As [`Link::open`], with `config` for a core in this process.
    pub(crate) async fn open_with(
        socket: Option<&Address>,
        config: CoreConfig,
    ) -> anyhow::Result<Self> {
        match socket {
            Some(socket) => Self::remote(socket).await,
            None => Ok(Self::Local(Core::new(config)?)),
        }
    }

    /// A link to the server at `address`, which must be there already.
    pub async fn connect(address: &Address) -> anyhow::Result<Self> {
        Ok(Self::over(Client::connect(address).await?))
    }

    /// The request as the caller here would run it: its folder and environment when the
    /// server is on this machine; on another, the far side's own (a laptop's folder and PATH
    /// mean nothing there), with a folder given as it was given.
    pub fn from_here(&self, request: CallRequest) -> Result<CallRequest, CoreError> {
        match self {
            Self::Remote(remote) if remote.address.transport().is_some() => Ok(request),
            _ => request.from_here(),
        }
    }

    fn over(client: Client) -> Self {
        Self::Remote(Arc::new(Remote {
            address: client.address().clone(),
            client: Mutex::new(Some(client)),
        }))
    }

    /// Asks the core: in this process through the request's handler, or the server through its
    /// socket (a request that may take a while on a connection of its own).
    pub async fn ask<A: Handle>(&self, request: A) -> Result<A::Reply, LinkError> {
        match self {
            // The door in process, as the server's is for a connection: numbers within bounds.
            Self::Local(core) => Ok(request.bounded()?.handle(core).await?),
            Self::Remote(remote) => {
                if let (true, Some(far)) = (A::HERE, remote.address.transport()) {
                    return Err(LinkError::NotSent(anyhow::anyhow!(
                        "a project file is this machine's: its folders and environment mean \
                         nothing on {}. Start it there (`ssh HOST`, then `oino up` in its folder)",
                        far.name()
                    )));
                }
                // Held within bounds here too: what the server would refuse (a command too long
                // for `bash -c`) is refused before it is sent, whatever its size.
                let request = request.bounded()?;
                remote.ask(request).await.map_err(LinkError::from_client)
            }
        }
    }

    /// Whether the server is on another machine (reached through a transport).
    #[must_use]
    pub(crate) fn is_elsewhere(&self) -> bool {
        matches!(self, Self::Remote(remote) if remote.address.transport().is_some())
    }

    /// Where the processes live, for the interface to say.
    #[must_use]
    pub(crate) fn is_remote(&self) -> bool {
        matches!(self, Self::Remote(_))
    }

    /// Subscribes to the core's events (a server's on a connection of their own).
    pub async fn events(&self) -> anyhow::Result<Events> {
        match self {
            Self::Local(core) => Ok(Events::Local(core.subscribe())),
            Self::Remote(remote) => remote.events().await,
        }
    }

    /// Runs a call whose waiter is the caller: its id once it exists, its result when it ends
    /// or is detached.
    pub async fn run(&self, request: CallRequest) -> Result<(String, RunResult), LinkError> {
        match self {
            Self::Local(core) => {
                let handle = core.start(ask::Run::bound_call(request)?)?;
                let id = handle.id.clone();
                Ok((id, tokio::spawn(async move { Ok(handle.result().await) })))
            }
            Self::Remote(remote) => {
                let client = remote.client().await.map_err(LinkError::NotSent)?;
                // The first reply says the call exists; the second comes at its end.
                let (entry, wait) = client
                    .run(ask::Run::from_call(request, true).bounded()?)
                    .await
                    .map_err(LinkError::from_client)?;
                let entry = EntryInfo::from_wire(entry);
                let gone = ServerGone {
                    id: entry.id.clone(),
                    log_path: entry.log_path,
                };
                let elsewhere = remote.address.transport().cloned();
                let result = tokio::spawn(async move {
                    wait.result()
                        .await
                        .map(CallResult::from_wire)
                        .map_err(|err| match elsewhere {
                            // The log is on the far side, and the call goes on there.
                            Some(far) if connection_lost(&err) => {
                                LinkError::Lost(err.context(format!(
                                    "the link to {} dropped before `{}` finished: it goes on \
                                     there, and `oino {} logs -f {1}` follows it",
                                    far.name(),
                                    gone.id,
                                    far.flag()
                                )))
                            }
                            None if connection_lost(&err) => LinkError::ServerGone(gone),
                            _ => LinkError::from_client(err),
                        })
                });
                Ok((entry.id, result))
            }
        }
    }

    /// Like [`Link::run`], with the request's id made unique if another call has it: `ID`, then
    /// `ID-2`, `ID-3`… (ids named by a client's pid meet again across pid namespaces and
    /// sessions).
    pub(crate) async fn run_unique(
        &self,
        request: CallRequest,
    ) -> Result<(String, RunResult), LinkError> {
        const ATTEMPTS: u32 = 100;
        let mut attempt = 1;
        loop {
            let mut this = request.clone();
            if attempt > 1 {
                this.id = request.id.as_ref().map(|id| format!("{id}-{attempt}"));
            }
            match self.run(this).await {
                Err(err)
                    if attempt < ATTEMPTS
                        && request.id.is_some()
                        && err.code() == Some(ErrorCode::DuplicateId) =>
                {
                    attempt += 1;
                }
                started => return started,
            }
        }
    }

    /// Waits for the result of the run `id`; if it still runs when `detach` says, detaches it
    /// first. A detach refused while the call runs on goes to `refused`, and the result comes
    /// at the call's end.
    pub(crate) async fn finish_run(
        &self,
        id: &str,
        result: RunResult,
        detach: DetachWhen<'_>,
        refused: impl FnOnce(LinkError),
    ) -> Result<CallResult, LinkError> {
        tokio::pin!(result);
        if detach.is_never() {
            return result.await.map_err(waiter_stopped)?;
        }
        let timer = async {
            let Some(after) = detach.after else {
                return std::future::pending().await;
            };
            tokio::time::sleep(after).await;
            if after.is_zero() {
                "started in the background".to_owned()
            } else {
                format!("still running after {} s", after.as_secs_f64())
            }
        };
        let ready_line = async {
            let Some(pattern) = detach.on_line else {
                return std::future::pending().await;
            };
            match self.first_line_matching(id, pattern).await {
                Ok(Some(line)) => format!("matched /{pattern}/: {line}"),
                // It ended first, or its output cannot be read: its result says.
                _ => std::future::pending().await,
            }
        };
        let finished = tokio::select! {
            finished = &mut result => finished,
            reason = timer => self.detach_for(id, detach.name, &reason, refused, result).await,
            reason = ready_line => self.detach_for(id, detach.name, &reason, refused, result).await,
        };
        finished.map_err(waiter_stopped)?
    }

    async fn detach_for(
        &self,
        id: &str,
        name: Option<&str>,
        reason: &str,
        refused: impl FnOnce(LinkError),
        result: std::pin::Pin<&mut RunResult>,
    ) -> Result<Result<CallResult, LinkError>, tokio::task::JoinError> {
        // A call that ended meanwhile gives its normal result.
        if let Err(err) = self
            .ask(ask::Detach {
                key: String::from(id),
                name: (name).map(str::to_owned),
                reason: Some(String::from(reason)),
            })
            .await
        {
            if self
                .ask(ask::Entry {
                    key: String::from(id),
                })
                .await
                .is_ok_and(|entry| entry.state.is_running())
            {
                refused(err);
            }
        }
        result.await
    }

    /// The first line of the entry's clean text, from its start, that matches `pattern`, as it
    /// comes; `None` when it ends first.
    async fn first_line_matching(
        &self,
        id: &str,
        pattern: &regex::Regex,
    ) -> Result<Option<String>, LinkError> {
        const PIECE: usize = 64 * 1024;
        let mut lines = LineMatcher::new(pattern.clone());
        let mut follower = self.follow(id, 0);
        loop {
            match follower.next(PIECE, None).await? {
                Followed::Output(slice) => {
                    if let Some(line) = lines.feed(&slice.text) {
                        return Ok(Some(line));
                    }
                }
                Followed::Ended | Followed::TimedOut => return Ok(None),
            }
        }
    }

    /// Follows the output of entry `key` from raw offset `from`.
    #[must_use]
    pub fn follow<'a>(&'a self, key: &'a str, from: u64) -> Follower<LinkOutput<'a>> {
        Follower::new(LinkOutput { link: self, key }, from)
    }

    /// Whether the core still answers (a server may have been stopped or restarted).
    pub(crate) async fn ping(&self) -> Result<(), LinkError> {
        match self {
            Self::Local(_) => Ok(()),
            Self::Remote(remote) => {
                remote
                    .ask(ask::Hello {
                        version: PROTOCOL_VERSION,
                        relayed: false,
                    })
                    .await
                    .map_err(LinkError::from_client)?;
                Ok(())
            }
        }
    }

    /// When the interface quits: a local core ends its processes; a server keeps them.
    pub async fn close(&self) {
        if let Self::Local(core) = self {
            core.shutdown().await;
        }
    }
}

/// The task that waited for a call's result ended without it (it panicked, or was cancelled).
fn waiter_stopped(err: tokio::task::JoinError) -> LinkError {
    LinkError::Lost(anyhow::Error::new(err).context("the call's waiter stopped"))
}

/// One entry's output as a follower reads it through a link.
pub struct LinkOutput<'a> {
    link: &'a Link,
    key: &'a str,
}

impl LinkOutput<'_> {
    /// The prompt the entry waits at, while it waits for someone to type.
    pub(crate) async fn prompt(&self) -> Result<Option<String>, LinkError> {
        let entry = self
            .link
            .ask(ask::Entry {
                key: String::from(self.key),
            })
            .await?;
        Ok(entry.waiting_for_input.filter(|_| entry.state.is_running()))
    }
}

impl OutputSource for LinkOutput<'_> {
    type Error = LinkError;

    async fn read(&self, from: u64, max_bytes: usize) -> Result<OutputSlice, LinkError> {
        self.link
            .ask(ask::Output {
                key: String::from(self.key),
                since: Some(from),
                max_bytes: Some(max_bytes),
            })
            .await
    }

    async fn wait(&self, offset: u64, timeout: Duration) -> Result<bool, LinkError> {
        self.link
            .ask(ask::WaitOutput {
                key: String::from(self.key),
                offset,
                timeout_ms: crate::time::millis(timeout),
            })
            .await
    }

    async fn running(&self) -> Result<bool, LinkError> {
        Ok(self
            .link
            .ask(ask::Entry {
                key: String::from(self.key),
            })
            .await?
            .state
            .is_running())
    }
}

impl Remote {
    /// The connection, made again when it closed.
    async fn client(&self) -> anyhow::Result<Client> {
        let mut client = self.client.lock().await;
        if let Some(kept) = client.as_ref().filter(|kept| !kept.is_closed()) {
            return Ok(kept.clone());
        }
        let fresh = Client::connect(&self.address).await?;
        *client = Some(fresh.clone());
        Ok(fresh)
    }

    /// A request of any kind, on the connection.
    async fn ask<A: Ask>(&self, request: A) -> anyhow::Result<A::Reply> {
        self.client().await?.ask(request).await
    }

    async fn events(&self) -> anyhow::Result<Events> {
        let mut lines = self.client().await?.subscribe().await?;
        let (events, receiver) = mpsc::channel(REMOTE_EVENTS);
        tokio::spawn(async move {
            loop {
                // Nobody takes them any more: the subscription goes now, not at the next
                // event.
                let line = tokio::select! {
                    line = lines.next() => line,
                    () = events.closed() => return,
                };
                let event = match line {
                    None => LinkEvent::Closed,
                    Some(line) => serde_json::from_slice(&line)
                        .map_or(LinkEvent::Lagged, |event| {
                            LinkEvent::Core(CoreEvent::from_wire(event))
                        }),
                };
                let closed = event == LinkEvent::Closed;
                if events.send(event).await.is_err() || closed {
                    return;
                }
            }
        });
        Ok(Events::Remote(receiver))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_whose_server_died_reads_the_head_a_gap_and_the_newest_part() {
        let dir = std::env::temp_dir().join(format!("oino-gone-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("folder");
        let head = dir.join("c1-1-0.log");
        std::fs::write(&head, "one\r\ntwo\r\npar").expect("head");
        std::fs::write(dir.join("c1-1-0.5.log"), "tial\r\n\x1b[1mnewest\x1b[0m\r\n").expect("part");
        std::fs::write(dir.join("c1-1-0.6.log"), "last\r\n").expect("part");
        std::fs::write(dir.join("c1-2-0.3.log"), "another call's\r\n").expect("other");
        let gone = ServerGone {
            id: "c1".into(),
            log_path: head,
        };
        assert_eq!(
            gone.output_so_far(30_000),
            "one\ntwo\npar\n[... output left out: the log reached its cap (log_cap) and keeps its \
             first part and its newest ...]\nnewest\nlast\n"
        );
        std::fs::remove_dir_all(dir).expect("clean");
    }
}
