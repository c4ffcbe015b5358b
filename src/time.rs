//! Time helpers every layer shares: wall-clock milliseconds, elapsed times as people read them,
//! and an optional deadline for `select!`.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch at `time` (0 before it).
#[must_use]
pub(crate) fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

/// Milliseconds since the Unix epoch, now.
#[must_use]
pub(crate) fn now_ms() -> u64 {
    unix_ms(SystemTime::now())
}

/// Sleeps until `deadline`, or forever without one (a disabled timer in a `select!`).
pub(crate) async fn sleep_until_opt(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// `12s`, `3m`, `2h05m`: seconds only in the first minute, so that an idle screen changes
/// once a minute.
#[must_use]
pub(crate) fn format_elapsed(ms: u64) -> String {
    let seconds = ms / 1000;
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        _ => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

/// A wait in words, to the tenth of a second under a minute: `0.2 s`, `1 s`, `30 s`, `2m`.
#[must_use]
pub(crate) fn format_wait(ms: u64) -> String {
    match ms {
        0..60_000 if ms % 1000 == 0 => format!("{} s", ms / 1000),
        0..60_000 => format!("{}.{} s", ms / 1000, ms % 1000 / 100),
        _ => format_elapsed(ms),
    }
}

/// The elapsed time shown for something that started at `started_ms`: whole seconds counted on
/// the wall clock, so that every elapsed time on screen changes at the same moment.
#[must_use]
pub(crate) fn shown_elapsed_ms(started_ms: u64, now_ms: u64) -> u64 {
    (now_ms / 1000).saturating_sub(started_ms / 1000) * 1000
}

/// Milliseconds until the elapsed time shown for `started_ms` changes.
#[must_use]
pub(crate) fn until_elapsed_changes(started_ms: u64, now_ms: u64) -> u64 {
    let to_next_second = 1000 - now_ms % 1000;
    let seconds = shown_elapsed_ms(started_ms, now_ms) / 1000;
    if seconds < 59 {
        to_next_second
    } else {
        // Minutes only from here: the next change is at a whole minute of age.
        (59 - seconds % 60) * 1000 + to_next_second
    }
}

/// A duration in whole milliseconds, as the protocol carries it (the longest as `u64::MAX`).
#[must_use]
pub fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_times_change_together_once_a_second_then_once_a_minute() {
        let started = 1_000_500;
        assert_eq!(shown_elapsed_ms(started, 1_012_400), 12_000);
        assert_eq!(until_elapsed_changes(started, 1_012_400), 600);
        assert_eq!(format_elapsed(shown_elapsed_ms(started, 1_075_000)), "1m");
        // At 75 s of age, "1m" lasts until 120 s.
        assert_eq!(until_elapsed_changes(started, 1_075_000), 45_000);
        assert_eq!(
            format_elapsed(shown_elapsed_ms(started, 1_075_000 + 45_000)),
            "2m"
        );
        assert_eq!(
            format_elapsed(shown_elapsed_ms(started, 1_075_000 + 44_999)),
            "1m"
        );
    }

    #[test]
    fn waits_read_to_the_tenth_of_a_second_under_a_minute() {
        let waits: Vec<String> = [200, 1000, 1500, 30_000, 120_000]
            .into_iter()
            .map(format_wait)
            .collect();
        assert_eq!(waits, ["0.2 s", "1 s", "1.5 s", "30 s", "2m"]);
    }
}
