//! What each running call costs: the CPU and memory of its whole tree (its shell's session),
//! read from /proc every two seconds (as often as `top` and `htop` look, and cheap enough for an
//! idle interface), and only by an interface that shows them.
//!
//! CPU is the share of one core over the time between two samples (200% is two cores busy);
//! memory is what the tree holds resident now.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::core::EntryInfo;
use crate::pty::proc_scan;

/// The time between two samples.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(2);
/// How early a sample may come.
const SAMPLE_SLACK: Duration = Duration::from_millis(100);
/// The most processes of one tree looked at.
const MAX_PROCESSES: usize = 512;
use crate::pty::proc_scan::TICKS_PER_SECOND;

/// One call's tree, as last sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// Percent of one core since the sample before; `None` after the first sample.
    pub cpu_percent: Option<f64>,
    /// Memory resident now, summed over the tree, in bytes.
    pub memory_bytes: u64,
}

impl Usage {
    /// `12%` (or `…` before a second sample), as the list shows it.
    #[must_use]
    pub(crate) fn cpu_text(&self) -> String {
        self.cpu_percent
            .map_or_else(|| "…".to_owned(), |percent| format!("{percent:.0}%"))
    }

    /// `34M`, `1.2G`: at most four characters.
    #[must_use]
    pub(crate) fn memory_text(&self) -> String {
        const MIB: f64 = 1024.0 * 1024.0;
        #[allow(clippy::cast_precision_loss)] // Shown to two digits.
        let mib = self.memory_bytes as f64 / MIB;
        if mib < 1000.0 {
            format!("{mib:.0}M")
        } else if mib < 10.0 * 1024.0 {
            format!("{:.1}G", mib / 1024.0)
        } else {
            format!("{:.0}G", mib / 1024.0)
        }
    }
}

/// A tree's totals at one moment.
#[derive(Clone, Copy, Debug)]
struct Sample {
    /// The shell's start, telling its pid's reuse apart.
    started: u64,
    cpu_ticks: u64,
    at: Instant,
}

/// Samples the running entries' trees, remembering the last sample of each for the CPU share.
#[derive(Debug, Default)]
pub(crate) struct UsageSampler {
    last: HashMap<String, Sample>,
    sampled_at: Option<Instant>,
}

impl UsageSampler {
    /// Whether a sample is due at `now` (a little early is as good: wakes are not exact).
    #[must_use]
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.sampled_at
            .is_none_or(|at| now.duration_since(at) + SAMPLE_SLACK >= SAMPLE_EVERY)
    }

    /// How long until the next sample is due.
    #[must_use]
    pub(crate) fn until_due(&self, now: Instant) -> Duration {
        self.sampled_at.map_or(Duration::ZERO, |at| {
            SAMPLE_EVERY.saturating_sub(now.duration_since(at))
        })
    }

    /// Samples each running entry's tree; entries that ended are forgotten.
    pub fn sample(&mut self, entries: &[EntryInfo], now: Instant) -> HashMap<String, Usage> {
        self.sampled_at = Some(now);
        let page_bytes = rustix::param::page_size() as u64;
        let mut usage = HashMap::new();
        let mut last = HashMap::new();
        for entry in entries.iter().filter(|entry| entry.state.is_running()) {
            let Ok(leader) = i32::try_from(entry.pid) else {
                continue;
            };
            let Some(shell) = proc_scan::stat(leader) else {
                continue;
            };
            let tree = proc_scan::session_tree(shell, MAX_PROCESSES);
            let sample = Sample {
                started: shell.started,
                cpu_ticks: tree.iter().map(|process| process.cpu_ticks).sum(),
                at: now,
            };
            let memory_bytes = tree
                .iter()
                .map(|process| process.resident_pages * page_bytes)
                .sum();
            let cpu_percent = self
                .last
                .get(&entry.id)
                .filter(|before| before.started == sample.started)
                .and_then(|before| cpu_percent(before, &sample));
            usage.insert(
                entry.id.clone(),
                Usage {
                    cpu_percent,
                    memory_bytes,
                },
            );
            last.insert(entry.id.clone(), sample);
        }
        self.last = last;
        usage
    }
}

/// The share of one core used between two samples (processes that left the tree take their
/// ticks with them: never below 0).
fn cpu_percent(before: &Sample, after: &Sample) -> Option<f64> {
    let seconds = after.at.checked_duration_since(before.at)?.as_secs_f64();
    if seconds <= 0.0 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)] // Tick counts of a few processes.
    let ticks = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64;
    Some(ticks / TICKS_PER_SECOND / seconds * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_the_share_of_a_core_between_two_samples() {
        let start = Instant::now();
        let at = |seconds: u64, cpu_ticks| Sample {
            started: 1,
            cpu_ticks,
            at: start + Duration::from_secs(seconds),
        };
        assert_eq!(cpu_percent(&at(0, 100), &at(2, 300)), Some(100.0));
        assert_eq!(cpu_percent(&at(0, 100), &at(1, 125)), Some(25.0));
        // A child that ended took its ticks along.
        assert_eq!(cpu_percent(&at(0, 500), &at(1, 100)), Some(0.0));
        assert_eq!(cpu_percent(&at(1, 0), &at(1, 10)), None);
    }

    #[test]
    fn usage_reads_short() {
        let usage = |bytes: u64, cpu| Usage {
            cpu_percent: cpu,
            memory_bytes: bytes,
        };
        assert_eq!(usage(0, None).cpu_text(), "…");
        assert_eq!(usage(0, Some(99.6)).cpu_text(), "100%");
        assert_eq!(usage(34 << 20, None).memory_text(), "34M");
        assert_eq!(usage(1200 << 20, None).memory_text(), "1.2G");
        assert_eq!(usage(20 << 30, None).memory_text(), "20G");
    }
}
