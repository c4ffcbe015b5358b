//! The output of a call: its clean text, the result's cap, the log of every raw byte, and the
//! readers of that log.
//!
//! Raw PTY bytes reach an [`OutputSink`]: the [`log`] keeps every byte, the [`index`] follows
//! them with the decoder every reader uses ([`crate::screen::decode`]), so that the offsets it
//! hands out are boundaries, and the screen gets them too. A call's waiter gets [`clean`] text capped by [`cap`]; pages of
//! history and searches [`read`] the log back from a boundary, and whoever follows a call's output
//! until it ends does it with a [`follow::Follower`] (matching [`lines`] as they come).

pub mod cap;
pub mod clean;
pub mod follow;
pub mod index;
pub mod lines;
pub mod log;
pub mod read;
pub mod search;
pub mod sink;

pub use cap::{CappedText, DEFAULT_MAX_RESULT_BYTES};
pub use clean::{TextCleaner, clean_text, made_clean};
pub(crate) use follow::{Followed, Follower, OutputSource};
pub(crate) use lines::LineMatcher;
pub use log::{
    DEFAULT_LOG_CAP, LOG_RETENTION, LogCut, MIN_LOG_CAP, RawLog, log_dir, log_text, prune_logs,
};
pub(crate) use read::OutputSlice;
pub use search::{Matcher, SearchHit};
pub(crate) use sink::OutputSink;

/// A size as people read it: `512 bytes`, `3.4 KiB`, `12.0 MiB`, `4.0 GiB`.
#[must_use]
pub(crate) fn byte_size(bytes: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let value = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1 << 20 {
        format!("{:.1} KiB", value / 1024.0)
    } else if bytes < 1 << 30 {
        format!("{:.1} MiB", value / f64::from(1 << 20))
    } else {
        format!("{:.1} GiB", value / f64::from(1 << 30))
    }
}
