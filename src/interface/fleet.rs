//! The servers one interface shows: this machine's and, with `--host` or `--via` (or the
//! settings' `hosts`), each far one's.
//!
//! A far entry's id is its server's id after the host's name and a colon (`box:c3`; an id never
//! holds a colon), so the interface keeps one list and every key reaches the entry's own server.
//! Each far host is linked in the background, and linked again with backoff when it cannot be
//! reached or its link drops; nothing on it ends with the link.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::core::{CallRequest, EntryInfo, HistoryPage, Killed};
use crate::link::{Events, Link, LinkError, LinkEvent};
use crate::output::SearchHit;
use crate::pty::TermSize;
use crate::remote::address::Address;
use crate::screen::ScreenSnapshot;

/// How long a far host has to answer a link or a listing before it counts as unreachable.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);
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

/// A far host: where it is and how its link stands.
struct Far {
    name: String,
    address: Address,
    state: Mutex<FarState>,
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
    use crate::core::CoreEvent::{Detached, Ended, OutputChanged, Started, Waiting};
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
        other => other,
    }
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

    /// Links the host, and again whenever its link drops or fails, with backoff; its events
    /// (ids qualified) go to `events`. Ends when no one takes them.
    async fn keep_linked(self: Arc<Self>, events: mpsc::Sender<LinkEvent>) {
        let mut tries = 0;
        loop {
            let linked = tokio::time::timeout(ANSWER_WITHIN, async {
                let link = Link::remote(&self.address).await?;
                let stream = link.events().await?;
                anyhow::Ok((link, stream))
            })
            .await
            .unwrap_or_else(|_| {
                Err(anyhow::anyhow!(
                    "no answer within {} s",
                    ANSWER_WITHIN.as_secs()
                ))
            });
            let (error, whole) = match linked {
                Ok((link, mut stream)) => {
                    tries = 0;
                    self.set(FarState::Up(link));
                    if events.send(LinkEvent::Lagged).await.is_err() {
                        return;
                    }
                    loop {
                        let event = match stream.recv().await {
                            LinkEvent::Core(event) => {
                                LinkEvent::Core(qualify_event(&self.name, event))
                            }
                            LinkEvent::Lagged => LinkEvent::Lagged,
                            LinkEvent::Closed => break,
                        };
                        if events.send(event).await.is_err() {
                            return;
                        }
                    }
                    let dropped = "the link dropped (what runs there goes on)";
                    (dropped.to_owned(), dropped.to_owned())
                }
                Err(err) => (
                    one_line(&anyhow::anyhow!("{}", err.root_cause())),
                    one_line(&err),
                ),
            };
            tries += 1;
            let again = backoff(tries);
            self.set(FarState::Down {
                error,
                whole,
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
            hosts.push(Arc::new(Far {
                name,
                address,
                state: Mutex::new(FarState::Linking),
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

    /// The link an interface id's entry is reached by, and its id there.
    fn route<'a>(&self, id: &'a str) -> Result<(Link, &'a str), LinkError> {
        let Some((host, bare)) = split_id(id) else {
            return Ok((self.here.clone(), id));
        };
        let far = self.far.iter().find(|far| far.name == host);
        match far.and_then(|far| far.link()) {
            Some(link) => Ok((link, bare)),
            None => Err(LinkError::NotSent(anyhow::anyhow!(
                "{host} cannot be reached now: its entries come back with its link"
            ))),
        }
    }

    /// Every entry: this machine's, then each linked host's (ids qualified). A far host that
    /// does not answer is left out; its link's keeper marks it down.
    pub async fn entries(&self) -> Result<Vec<EntryInfo>, LinkError> {
        let mut asked = tokio::task::JoinSet::new();
        for far in &self.far {
            if let Some(link) = far.link() {
                let name = far.name.clone();
                asked.spawn(async move {
                    let listed = tokio::time::timeout(ANSWER_WITHIN, link.entries()).await;
                    (name, listed)
                });
            }
        }
        let mut entries = self.here.entries().await?;
        while let Some(Ok((name, listed))) = asked.join_next().await {
            if let Ok(Ok(listed)) = listed {
                entries.extend(listed.into_iter().map(|entry| qualify_entry(&name, entry)));
            }
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
        let link = match host {
            Some(host) => self.route(&qualified(host, ""))?.0,
            None => self.here.clone(),
        };
        let entry = link.start(link.from_here(request)?).await?;
        Ok(match host {
            Some(host) => qualify_entry(host, entry),
            None => entry,
        })
    }

    /// See [`Link::snapshot`].
    pub async fn snapshot(
        &self,
        id: &str,
        size: Option<TermSize>,
    ) -> Result<ScreenSnapshot, LinkError> {
        let (link, id) = self.route(id)?;
        link.snapshot(id, size).await
    }

    /// See [`Link::history_page`].
    pub async fn history_page(
        &self,
        id: &str,
        lines_back: u64,
        rows: usize,
    ) -> Result<HistoryPage, LinkError> {
        let (link, id) = self.route(id)?;
        link.history_page(id, lines_back, rows).await
    }

    /// See [`Link::find_line`].
    pub async fn find_line(
        &self,
        id: &str,
        from: u64,
        newer: bool,
        query: &str,
    ) -> Result<SearchHit, LinkError> {
        let (link, id) = self.route(id)?;
        link.find_line(id, from, newer, query).await
    }

    /// See [`Link::write`].
    pub async fn write(&self, id: &str, bytes: Vec<u8>) -> Result<(), LinkError> {
        let (link, id) = self.route(id)?;
        link.write(id, bytes).await
    }

    /// See [`Link::resize`].
    pub async fn resize(&self, id: &str, size: TermSize) -> Result<(), LinkError> {
        let (link, id) = self.route(id)?;
        link.resize(id, size).await
    }

    /// See [`Link::detach`].
    pub async fn detach(
        &self,
        id: &str,
        name: Option<&str>,
        reason: &str,
    ) -> Result<EntryInfo, LinkError> {
        let (link, bare) = self.route(id)?;
        link.detach(bare, name, reason).await
    }

    /// See [`Link::kill`].
    pub async fn kill(&self, id: &str) -> Result<Killed, LinkError> {
        let (link, id) = self.route(id)?;
        link.kill(id).await
    }

    /// See [`Link::restart`]; the new entry's id qualified as `id` is.
    pub async fn restart(&self, id: &str, size: Option<TermSize>) -> Result<EntryInfo, LinkError> {
        let (link, bare) = self.route(id)?;
        let entry = link.restart(bare, size).await?;
        Ok(match split_id(id) {
            Some((host, _)) => qualify_entry(host, entry),
            None => entry,
        })
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
