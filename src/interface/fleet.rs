//! The servers one interface shows: this machine's and, with `--host` or `--via` (or the
//! settings' `hosts`), each far one's.
//!
//! A far entry's id is its server's id after the host's name and a colon (`box:c3`; an id never
//! holds a colon), so the interface keeps one list and every key reaches the entry's own server.
//! Each far host is linked in the background, and linked again with backoff when it cannot be
//! reached or its link drops; nothing on it ends with the link.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::core::{CallRequest, EntryInfo};
use crate::link::{Events, Link, LinkError, LinkEvent};
use crate::remote::address::Address;
use crate::remote::protocol::requests::{self as ask, Handle};

/// How long a far host has to answer a link, a listing or an action before its link counts as
/// lost (and is made again): what a command gives it too.
const ANSWER_WITHIN: Duration = crate::remote::client::FAR_ANSWER_WITHIN;
/// How long a frame waits for a far screen or history page: a host that does not answer holds
/// the interface this long once, then its link is made again.
const FRAME_WAITS: Duration = Duration::from_secs(3);
/// A link that stayed up this long starts the backoff over when it drops; one that drops sooner
/// (a far side that takes the link and lets go) keeps backing off.
const STAYED_UP: Duration = Duration::from_secs(10);
/// The longest wait between two tries to link a host.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Events buffered from the far hosts together.
const FAR_EVENTS: usize = 1024;
/// The most of an error a host's heading keeps.
const ERROR_CHARS: usize = 300;

/// This machine's server and the far ones, as one interface uses them.
#[derive(Clone)]
pub struct Fleet {
    here: Link,
    far: Vec<Arc<Far>>,
}

/// A far host: where it is, how its link stands, and its entries as last listed.
struct Far {
    name: String,
    address: Address,
    state: Mutex<FarState>,
    /// Its entries (ids qualified), listed by its keeper whenever they change: a frame never
    /// waits on a far host for its list.
    listed: Mutex<Vec<EntryInfo>>,
    /// A request went unanswered for this many seconds (0: none did): the keeper drops the
    /// link and makes it again.
    unanswered: AtomicU64,
    wake_keeper: tokio::sync::Notify,
}

enum FarState {
    Linking,
    Up(Link),
    Down {
        error: String,
        whole: String,
        again: Duration,
    },
}

/// A far host as the list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostView {
    /// The host's name (`--host`), or its `--via` command.
    pub name: String,
    /// How its link stands.
    pub state: HostState,
}

/// How a far host's link stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostState {
    /// Being linked.
    Linking,
    /// Linked: its entries are listed.
    Up,
    /// It could not be reached, or its link dropped: why, in its transport's words, and the
    /// wait before the next try.
    Down {
        /// What went wrong, on one line: the transport's own words where it said any.
        error: String,
        /// The whole of it: where the host was reached, how, and what its transport said.
        whole: String,
        /// Seconds until it is tried again.
        again_secs: u64,
    },
}

/// The core's events from every server; a far one's ids qualified. `Closed` once this machine's
/// server went away (a far one's end is a `Lagged`: the list shows its host down).
pub struct FleetEvents {
    here: Events,
    far: mpsc::Receiver<LinkEvent>,
    linkers: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for FleetEvents {
    fn drop(&mut self) {
        for linker in &self.linkers {
            linker.abort();
        }
    }
}

impl FleetEvents {
    /// The next event of any server.
    pub async fn recv(&mut self) -> LinkEvent {
        tokio::select! {
            event = self.here.recv() => event,
            Some(event) = self.far.recv() => event,
        }
    }
}

/// `host:id`, the id of a far host's entry in the interface.
fn qualified(host: &str, id: &str) -> String {
    format!("{host}:{id}")
}

/// The far host an interface id names, and the id on its server; `None` for this machine's.
#[must_use]
pub fn split_id(id: &str) -> Option<(&str, &str)> {
    id.rsplit_once(':')
}

fn qualify_entry(host: &str, mut entry: EntryInfo) -> EntryInfo {
    entry.id = qualified(host, &entry.id);
    entry
}

fn qualify_event(host: &str, event: crate::core::CoreEvent) -> crate::core::CoreEvent {
    use crate::core::CoreEvent::{
        Detached, Ended, OutputChanged, Project, Ready, Started, Waiting,
    };
    match event {
        Started { id } => Started {
            id: qualified(host, &id),
        },
        OutputChanged { id } => OutputChanged {
            id: qualified(host, &id),
        },
        Detached { id, task_id, name } => Detached {
            id: qualified(host, &id),
            task_id,
            name,
        },
        Ended { id, state } => Ended {
            id: qualified(host, &id),
            state,
        },
        Waiting { id, prompt } => Waiting {
            id: qualified(host, &id),
            prompt,
        },
        Ready { id, ready } => Ready {
            id: qualified(host, &id),
            ready,
        },
        Project { file, notice } => Project {
            file,
            notice: notice.map(|notice| format!("{host}: {notice}")),
        },
    }
}

/// Whether an event may change what the list shows (output alone does not).
fn changes_the_list(event: &LinkEvent) -> bool {
    !matches!(
        event,
        LinkEvent::Core(crate::core::CoreEvent::OutputChanged { .. })
    )
}

/// `answer`, unless it takes longer than `limit`.
async fn within<T>(
    limit: Duration,
    answer: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::time::timeout(limit, answer)
        .await
        .unwrap_or_else(|_| Err(no_answer(limit)))
}

fn no_answer(waited: Duration) -> anyhow::Error {
    anyhow::anyhow!("no answer within {} s", waited.as_secs())
}

/// The wait before try `tries + 1`: 1 s, doubled each time, at most [`MAX_BACKOFF`].
fn backoff(tries: u32) -> Duration {
    Duration::from_secs(1 << tries.saturating_sub(1).min(5)).min(MAX_BACKOFF)
}

/// An error on one line, as a heading shows it.
fn one_line(err: &anyhow::Error) -> String {
    let text = format!("{err:#}");
    let line = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" · ");
    crate::interface::fit::cut(&line, ERROR_CHARS)
}

impl Far {
    fn set(&self, state: FarState) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }

    fn link(&self) -> Option<Link> {
        match &*self.state.lock().unwrap_or_else(PoisonError::into_inner) {
            FarState::Up(link) => Some(link.clone()),
            FarState::Linking | FarState::Down { .. } => None,
        }
    }

    fn view(&self) -> HostView {
        let state = match &*self.state.lock().unwrap_or_else(PoisonError::into_inner) {
            FarState::Linking => HostState::Linking,
            FarState::Up(_) => HostState::Up,
            FarState::Down {
                error,
                whole,
                again,
            } => HostState::Down {
                error: error.clone(),
                whole: whole.clone(),
                again_secs: again.as_secs(),
            },
        };
        HostView {
            name: self.name.clone(),
            state,
        }
    }

    /// Lists the host's entries into `listed`; why it could not.
    async fn list(&self, link: &Link) -> anyhow::Result<()> {
        let listed = within(ANSWER_WITHIN, async { Ok(link.ask(ask::List {}).await?) }).await?;
        let listed = listed
            .into_iter()
            .map(|entry| qualify_entry(&self.name, entry))
            .collect();
        *self.listed.lock().unwrap_or_else(PoisonError::into_inner) = listed;
        Ok(())
    }

    /// A request to it went unanswered: it is down until its keeper links it again.
    fn unanswered(&self, waited: Duration) {
        self.set(FarState::Down {
            error: no_answer(waited).to_string(),
            whole: format!(
                "{} gave no answer within {} s: linking again",
                self.name,
                waited.as_secs()
            ),
            again: Duration::ZERO,
        });
        self.unanswered
            .store(waited.as_secs().max(1), Ordering::SeqCst);
        self.wake_keeper.notify_waiters();
    }

    /// Links the host and lists its entries: the link and its events.
    async fn make_link(&self) -> anyhow::Result<(Link, crate::link::Events)> {
        let linked = within(ANSWER_WITHIN, async {
            let link = Link::remote(&self.address).await?;
            let stream = link.events().await?;
            Ok((link, stream))
        })
        .await?;
        self.list(&linked.0).await?;
        Ok(linked)
    }

    /// Passes the host's events on (ids qualified), listing its entries again before those
    /// that change them, until its link drops or a request goes unanswered: why it ended.
    async fn carry_events(
        &self,
        link: &Link,
        stream: &mut crate::link::Events,
        events: &mpsc::Sender<LinkEvent>,
    ) -> Option<anyhow::Error> {
        loop {
            let woken = self.wake_keeper.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let waited = self.unanswered.load(Ordering::SeqCst);
            if waited > 0 {
                return Some(no_answer(Duration::from_secs(waited)));
            }
            let first = tokio::select! {
                event = stream.recv() => event,
                () = woken => continue,
            };
            // What came together is listed once (a closed stream says so for ever: it ends the
            // batch).
            let mut batch = vec![first];
            while batch.last() != Some(&LinkEvent::Closed)
                && let Some(event) = stream.try_recv()
            {
                batch.push(event);
            }
            if batch.last() == Some(&LinkEvent::Closed) {
                return Some(anyhow::anyhow!(
                    "the link dropped (what runs there goes on)"
                ));
            }
            if batch.iter().any(changes_the_list)
                && let Err(err) = self.list(link).await
            {
                return Some(err);
            }
            for event in batch {
                let event = match event {
                    LinkEvent::Core(event) => LinkEvent::Core(qualify_event(&self.name, event)),
                    other => other,
                };
                if events.send(event).await.is_err() {
                    return None;
                }
            }
        }
    }

    /// Links the host, and again whenever its link drops, fails or stops answering, with
    /// backoff; its events go to `events`. Ends when no one takes them.
    async fn keep_linked(self: Arc<Self>, events: mpsc::Sender<LinkEvent>) {
        let mut tries = 0;
        loop {
            let ended = match self.make_link().await {
                Ok((link, mut stream)) => {
                    let up = std::time::Instant::now();
                    self.unanswered.store(0, Ordering::SeqCst);
                    self.set(FarState::Up(link.clone()));
                    if events.send(LinkEvent::Lagged).await.is_err() {
                        return;
                    }
                    let Some(why) = self.carry_events(&link, &mut stream, &events).await else {
                        return;
                    };
                    if up.elapsed() >= STAYED_UP {
                        tries = 0;
                    }
                    why
                }
                Err(err) => err,
            };
            self.listed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
            tries += 1;
            let again = backoff(tries);
            self.set(FarState::Down {
                error: one_line(&anyhow::anyhow!("{}", ended.root_cause())),
                whole: one_line(&ended),
                again,
            });
            if events.send(LinkEvent::Lagged).await.is_err() {
                return;
            }
            tokio::time::sleep(again).await;
        }
    }
}

impl Fleet {
    /// This machine's server (or core) alone.
    #[must_use]
    pub fn single(here: Link) -> Self {
        Self {
            here,
            far: Vec::new(),
        }
    }

    /// This machine's server and the far ones at `far`, named as their transports are; linked
    /// once [`Fleet::events`] is asked for. A name given twice is refused.
    pub fn new(here: Link, far: Vec<Address>) -> anyhow::Result<Self> {
        let mut hosts: Vec<Arc<Far>> = Vec::new();
        for address in far {
            let Some(transport) = address.transport() else {
                anyhow::bail!("a far host is reached through a command, not a socket here");
            };
            let taken = |name: &str| hosts.iter().any(|host| host.name == name);
            let mut name = transport.short_name();
            if taken(&name) && transport.is_host {
                anyhow::bail!("`{name}` is named twice: give each host once");
            }
            // Two commands named alike (`env …`) are told apart by number.
            let first = name.clone();
            let mut number = 1;
            while taken(&name) {
                number += 1;
                name = format!("{first}-{number}");
            }
            // The interface owns the terminal: ssh may not prompt on it.
            hosts.push(Arc::new(Far {
                name,
                address: address.without_terminal(),
                state: Mutex::new(FarState::Linking),
                listed: Mutex::new(Vec::new()),
                unanswered: AtomicU64::new(0),
                wake_keeper: tokio::sync::Notify::new(),
            }));
        }
        Ok(Self { here, far: hosts })
    }

    /// This machine's server (or core).
    #[must_use]
    pub fn here(&self) -> &Link {
        &self.here
    }

    /// The far hosts, in order, as they stand.
    #[must_use]
    pub fn hosts(&self) -> Vec<HostView> {
        self.far.iter().map(|far| far.view()).collect()
    }

    /// Every server's events; far hosts are linked (and linked again) while these are taken.
    pub async fn events(&self) -> anyhow::Result<FleetEvents> {
        let here = self.here.events().await?;
        let (sender, far) = mpsc::channel(FAR_EVENTS);
        let linkers = self
            .far
            .iter()
            .map(|host| tokio::spawn(Arc::clone(host).keep_linked(sender.clone())))
            .collect();
        Ok(FleetEvents { here, far, linkers })
    }

    /// Asks the server of the interface id `id`'s entry the request `request` makes of its id
    /// there: this machine's as it is; a far one within [`ANSWER_WITHIN`], past which its link
    /// is made again.
    pub async fn ask<A: Handle>(
        &self,
        id: &str,
        request: impl FnOnce(String) -> A,
    ) -> Result<A::Reply, LinkError> {
        self.ask_within(id, ANSWER_WITHIN, request).await
    }

    /// [`Fleet::ask`] for a frame (a screen, a page of history): a far host that does not
    /// answer within [`FRAME_WAITS`] holds the interface that long once, then its link is made
    /// again.
    pub async fn ask_for_frame<A: Handle>(
        &self,
        id: &str,
        request: impl FnOnce(String) -> A,
    ) -> Result<A::Reply, LinkError> {
        self.ask_within(id, FRAME_WAITS, request).await
    }

    async fn ask_within<A: Handle>(
        &self,
        id: &str,
        within: Duration,
        request: impl FnOnce(String) -> A,
    ) -> Result<A::Reply, LinkError> {
        let Some((host, bare)) = split_id(id) else {
            return self.here.ask(request(id.to_owned())).await;
        };
        let far = self.far.iter().find(|far| far.name == host);
        let Some((far, link)) = far.and_then(|far| Some((far, far.link()?))) else {
            return Err(LinkError::NotSent(anyhow::anyhow!(
                "{host} cannot be reached now: its entries come back with its link"
            )));
        };
        let answer = tokio::time::timeout(within, link.ask(request(bare.to_owned()))).await;
        answer.unwrap_or_else(|_| {
            far.unanswered(within);
            Err(LinkError::Lost(anyhow::anyhow!(
                "{host} gave no answer within {} s: its link is made again",
                within.as_secs()
            )))
        })
    }

    /// The link of `host` (this machine's when `None`), if it is linked.
    pub fn link_of(&self, host: Option<&str>) -> Result<Link, LinkError> {
        let Some(host) = host else {
            return Ok(self.here.clone());
        };
        self.far
            .iter()
            .find(|far| far.name == host)
            .and_then(|far| far.link())
            .ok_or_else(|| {
                LinkError::NotSent(anyhow::anyhow!(
                    "{host} cannot be reached now: its entries come back with its link"
                ))
            })
    }

    /// Every entry: this machine's, then each linked host's as last listed (ids qualified).
    pub async fn entries(&self) -> Result<Vec<EntryInfo>, LinkError> {
        let mut entries = self.here.ask(ask::List {}).await?;
        for far in self.far.iter().filter(|far| far.link().is_some()) {
            entries.extend(
                far.listed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .cloned(),
            );
        }
        Ok(entries)
    }

    /// Starts a person's call on `host` (this machine when `None`): as typed in this shell
    /// here, as the far side's own there.
    pub async fn start(
        &self,
        host: Option<&str>,
        request: CallRequest,
    ) -> Result<EntryInfo, LinkError> {
        let link = self.link_of(host)?;
        let request = ask::Start::from_call(link.from_here(request)?);
        let key = host.map_or_else(String::new, |host| qualified(host, ""));
        let entry = self.ask(&key, |_| request).await?;
        Ok(match host {
            Some(host) => qualify_entry(host, entry),
            None => entry,
        })
    }

    /// The entry of the interface id `id` as the list names it (a far one's id qualified by
    /// its host).
    #[must_use]
    pub fn qualified_as(id: &str, entry: EntryInfo) -> EntryInfo {
        match split_id(id) {
            Some((host, _)) => qualify_entry(host, entry),
            None => entry,
        }
    }

    /// When the interface quits: a local core ends its processes; servers keep theirs.
    pub async fn close(&self) {
        self.here.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_far_id_names_its_host_and_the_id_there_and_this_machines_names_none() {
        let id = qualified("me@box", "c3");
        assert_eq!(split_id(&id), Some(("me@box", "c3")));
        // A name that holds a colon (an IPv6 address) keeps it: ids never do.
        assert_eq!(split_id("::1:t2"), Some(("::1", "t2")));
        assert_eq!(split_id("c3"), None);
    }

    #[test]
    fn backoff_doubles_from_a_second_to_half_a_minute() {
        let waits: Vec<u64> = (1..=8).map(|tries| backoff(tries).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    }

    #[test]
    fn an_error_shown_in_a_heading_is_one_line() {
        let err = anyhow::anyhow!("ssh: connect to host box port 22: Connection refused\n\n")
            .context("cannot reach box\nits standard error said:");
        assert_eq!(
            one_line(&err),
            "cannot reach box · its standard error said:: ssh: connect to host box port 22: \
             Connection refused"
        );
    }
}
