//! Limits at the door. Every size, count, byte limit and duration a request carries is held
//! within a bound where the request enters, once for every handler: the server bounds each
//! request it decodes, and a link to a core in its own process bounds each request it asks.
//! The table of requests (`requests!` in `requests.rs`) names each field's bound beside the
//! kind, so that no handler needs a limit of its own.
//!
//! Numbers are clamped: a size to what a running entry gets, a read to a page, a wait to a
//! month, a project's intervals to a floor. Counts that would start work (a project's
//! processes) are refused in words, since cutting them would run something else than asked.

use super::wire::{self, Size};
use crate::core::CoreError;
use crate::core::project::{MAX_PROCESSES, MAX_WAIT_MS as MAX_PROJECT_WAIT_MS, MIN_INTERVAL_MS};
use crate::pty::TermSize;

/// A request kind held within its bounds.
pub trait Bounded: Sized {
    /// The request with every number within its bound, or why it cannot be served.
    fn bounded(self) -> Result<Self, CoreError>;
}

/// A value held within a bound of kind `B`.
pub trait Held<B>: Sized {
    /// The value within `bound`, or why it cannot be.
    fn held(self, bound: &B) -> Result<Self, CoreError>;
}

/// A number clamped to at most this.
#[derive(Clone, Copy, Debug)]
pub struct AtMost<T>(pub T);

macro_rules! at_most {
    ($($number:ty),*) => {$(
        impl Held<AtMost<$number>> for $number {
            fn held(self, bound: &AtMost<$number>) -> Result<Self, CoreError> {
                Ok(self.min(bound.0))
            }
        }
    )*};
}
at_most!(u64, usize);

/// A field left out stays out; one given is held.
impl<B, T: Held<B>> Held<B> for Option<T> {
    fn held(self, bound: &B) -> Result<Self, CoreError> {
        self.map(|value| value.held(bound)).transpose()
    }
}

/// A terminal size clamped to what a running entry gets: from 2x2 to [`TermSize::MAX`].
#[derive(Clone, Copy, Debug)]
pub struct Sizes;

impl Held<Sizes> for Size {
    fn held(self, _: &Sizes) -> Result<Self, CoreError> {
        let held = TermSize::new(self.cols, self.rows);
        Ok(Self {
            cols: held.cols,
            rows: held.rows,
        })
    }
}

/// A project as a client sends it: at most [`MAX_PROCESSES`] processes, each interval at least
/// [`MIN_INTERVAL_MS`], each wait at most [`MAX_PROJECT_WAIT_MS`], liveness failures at least 1.
#[derive(Clone, Copy, Debug)]
pub struct Projects;

impl Held<Projects> for wire::Project {
    fn held(mut self, _: &Projects) -> Result<Self, CoreError> {
        let project = &mut self;
        if project.processes.len() > MAX_PROCESSES {
            return Err(CoreError::PastLimit {
                what: format!("a project of {} processes", project.processes.len()),
                limit: format!("{MAX_PROCESSES} processes"),
            });
        }
        let interval = |ms: u64| ms.clamp(MIN_INTERVAL_MS, MAX_PROJECT_WAIT_MS);
        let wait = |ms: u64| ms.min(MAX_PROJECT_WAIT_MS);
        for process in &mut project.processes {
            process.backoff_ms = wait(process.backoff_ms);
            let probes = &mut process.probes;
            probes.ready_interval_ms = interval(probes.ready_interval_ms);
            probes.alive_interval_ms = interval(probes.alive_interval_ms);
            probes.ready_timeout_ms = probes.ready_timeout_ms.map(wait);
            probes.alive_failures = probes.alive_failures.max(1);
        }
        Ok(self)
    }
}

/// A command, refused past what `bash -c` takes.
#[derive(Clone, Copy, Debug)]
pub struct Commands;

impl Held<Commands> for String {
    fn held(self, _: &Commands) -> Result<Self, CoreError> {
        if self.len() > crate::core::MAX_COMMAND_BYTES {
            return Err(CoreError::CommandTooLong(self.len()));
        }
        Ok(self)
    }
}

/// A command: at most 131,071 bytes.
pub const COMMAND: Commands = Commands;
/// The size of a terminal: from 2x2 to 1000x500.
pub const SIZE: Sizes = Sizes;
/// Raw bytes of output one `output` request reads: a page (a reader asks again from where it
/// ended).
pub const PAGE_BYTES: AtMost<usize> = AtMost(1 << 20);
/// Lines one history page holds: the rows of the tallest screen.
pub const PAGE_ROWS: AtMost<usize> = AtMost(TermSize::MAX.rows as usize);
/// The cap of a call's result text: room in a reply line even when JSON escapes some of it.
pub const RESULT_BYTES: AtMost<usize> = AtMost(4 << 20);
/// The longest a request waits: 30 days.
pub const WAIT_MS: AtMost<u64> = AtMost(30 * 24 * 3600 * 1000);
/// A project's processes and their intervals.
pub const PROJECT: Projects = Projects;
