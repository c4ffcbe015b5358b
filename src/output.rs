//! The output of a call: its clean text, the result's cap, the log of every raw byte, and the
//! readers of that log.
//!
//! Raw PTY bytes reach an [`OutputSink`]: the [`log`] keeps every byte, the [`index`] follows
//! them with the decoder every reader uses ([`crate::screen::decode`]), so that the offsets it
//! hands out are boundaries, and the screen gets them too. A call's waiter gets [`clean`] text capped by [`cap`]; followers,
//! pages of history and searches [`read`] the log back from a boundary.

pub mod cap;
pub mod clean;
pub mod index;
pub mod log;
pub mod read;
pub mod search;
pub mod sink;

pub use cap::{CappedText, DEFAULT_MAX_RESULT_BYTES};
pub use clean::{TextCleaner, clean_text};
pub use log::{LOG_RETENTION, RawLog, log_dir, prune_logs};
pub use read::OutputSlice;
pub use search::{match_ranges, matches_query};
pub use sink::OutputSink;
