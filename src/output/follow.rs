//! Following a call's output from an offset until it ends, with one rule for the end whoever
//! follows (`oino logs -f`, a detach at a ready line, a project's ready pattern, an agent's
//! `task_output`): the entry no longer runs, and a read after that found nothing more. What the
//! log's cap left out comes as a notice in the slices' text, as every reader of a log gives it.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::OutputSlice;

/// The longest single wait for output: a follower that waits longer asks again.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// Where a follower reads: one entry's output, and whether it still runs.
pub trait OutputSource {
    /// What a failed read or wait gives.
    type Error;
    /// Clean text of raw bytes from `from` (a boundary; one that is not is moved to the next), at
    /// most about `max_bytes` of them.
    fn read(
        &self,
        from: u64,
        max_bytes: usize,
    ) -> impl Future<Output = Result<OutputSlice, Self::Error>> + Send;
    /// [`OutputSource::read`] from `from`, known to be a boundary (an earlier slice's
    /// `next_offset`): a source may skip finding one.
    fn read_on_boundary(
        &self,
        from: u64,
        max_bytes: usize,
    ) -> impl Future<Output = Result<OutputSlice, Self::Error>> + Send {
        self.read(from, max_bytes)
    }
    /// Waits until there is output past `offset` (`true`), or the entry ended or `timeout` passed
    /// (`false`).
    fn wait(
        &self,
        offset: u64,
        timeout: Duration,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;
    /// Whether the entry still runs.
    fn running(&self) -> impl Future<Output = Result<bool, Self::Error>> + Send;
}

/// What following found next.
#[derive(Debug, PartialEq, Eq)]
pub enum Followed {
    /// Output, in order (never empty).
    Output(OutputSlice),
    /// None came before the deadline.
    TimedOut,
    /// The entry ended and everything it wrote was read.
    Ended,
}

/// Reads an entry's output in order from an offset, waiting for more until it ends.
pub struct Follower<S> {
    source: S,
    offset: u64,
    ended: bool,
    /// Whether `offset` came from a slice (so is a boundary), not from whoever began it.
    on_boundary: bool,
}

impl<S: OutputSource + Sync> Follower<S> {
    /// Follows `source` from raw offset `from` (a boundary).
    #[must_use]
    pub fn new(source: S, from: u64) -> Self {
        Self {
            source,
            offset: from,
            ended: false,
            on_boundary: false,
        }
    }

    /// Where the next read starts.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Where it reads.
    #[must_use]
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The next piece of output, at most about `max_bytes` raw bytes: at once when there is
    /// some, else once some comes, the entry ends, or `until` passes (`None`: no deadline; one
    /// passed already: no wait).
    pub async fn next(
        &mut self,
        max_bytes: usize,
        until: Option<Instant>,
    ) -> Result<Followed, S::Error> {
        loop {
            let slice = if self.on_boundary {
                self.source
                    .read_on_boundary(self.offset, max_bytes.max(1))
                    .await?
            } else {
                self.source.read(self.offset, max_bytes.max(1)).await?
            };
            // Where a slice ends is a boundary: the next read starts on one.
            self.on_boundary = true;
            self.offset = slice.next_offset;
            if slice.next_offset > slice.from {
                return Ok(Followed::Output(slice));
            }
            if self.ended {
                return Ok(Followed::Ended);
            }
            let wait = match until {
                None => MAX_WAIT,
                Some(until) => {
                    let now = Instant::now();
                    if until <= now {
                        return Ok(Followed::TimedOut);
                    }
                    (until - now).min(MAX_WAIT)
                }
            };
            // A wait that ends with no output: the entry ended (read once more, for what it
            // wrote last), or the time is up (the loop says so).
            if !self.source.wait(self.offset, wait).await? && !self.source.running().await? {
                self.ended = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Output that comes in pieces, one a wait, then an end.
    struct Script {
        pieces: Mutex<Vec<&'static str>>,
        written: Mutex<String>,
        running: Mutex<bool>,
    }

    impl Script {
        fn new(pieces: &[&'static str]) -> Self {
            let mut pieces = pieces.to_vec();
            pieces.reverse();
            Self {
                pieces: Mutex::new(pieces),
                written: Mutex::new(String::new()),
                running: Mutex::new(true),
            }
        }
    }

    impl OutputSource for Script {
        type Error = std::convert::Infallible;

        async fn read(&self, from: u64, max_bytes: usize) -> Result<OutputSlice, Self::Error> {
            let written = self.written.lock().expect("lock");
            let start = usize::try_from(from).expect("an offset").min(written.len());
            let end = (start + max_bytes).min(written.len());
            Ok(OutputSlice {
                text: written[start..end].to_owned(),
                from,
                next_offset: end as u64,
            })
        }

        async fn wait(&self, offset: u64, _: Duration) -> Result<bool, Self::Error> {
            let next = self.pieces.lock().expect("lock").pop();
            let mut written = self.written.lock().expect("lock");
            match next {
                Some(piece) => written.push_str(piece),
                None => *self.running.lock().expect("lock") = false,
            }
            Ok(written.len() as u64 > offset)
        }

        async fn running(&self) -> Result<bool, Self::Error> {
            Ok(*self.running.lock().expect("lock"))
        }
    }

    async fn all(follower: &mut Follower<Script>, max_bytes: usize) -> (Vec<String>, Followed) {
        let mut texts = Vec::new();
        loop {
            match follower.next(max_bytes, None).await {
                Ok(Followed::Output(slice)) => texts.push(slice.text),
                Ok(end) => return (texts, end),
            }
        }
    }

    #[tokio::test]
    async fn it_reads_everything_in_order_then_says_the_end() {
        let mut follower = Follower::new(Script::new(&["one\n", "two\nthr", "ee\n"]), 0);
        let (texts, end) = all(&mut follower, 4).await;
        assert_eq!(texts.concat(), "one\ntwo\nthree\n");
        assert!(texts.iter().all(|text| text.len() <= 4), "{texts:?}");
        assert_eq!(end, Followed::Ended);
        assert_eq!(follower.offset(), 14);
        // Ended stays ended.
        assert_eq!(follower.next(4, None).await, Ok(Followed::Ended));
    }

    #[tokio::test]
    async fn a_deadline_passed_reads_what_is_there_and_does_not_wait() {
        let script = Script::new(&["later\n"]);
        script.written.lock().expect("lock").push_str("now\n");
        let mut follower = Follower::new(script, 0);
        let past = Some(Instant::now());
        assert_eq!(
            follower.next(100, past).await,
            Ok(Followed::Output(OutputSlice {
                text: "now\n".into(),
                from: 0,
                next_offset: 4
            }))
        );
        assert_eq!(follower.next(100, past).await, Ok(Followed::TimedOut));
        // Nothing was waited for: what comes later is still to come.
        assert_eq!(follower.source().pieces.lock().expect("lock").len(), 1);
    }
}
