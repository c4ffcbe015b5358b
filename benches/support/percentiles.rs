//! Percentiles of measured times, shared by the benchmarks.

use std::time::Duration;

/// Times sorted once, read at any fraction.
pub struct Percentiles(Vec<Duration>);

impl Percentiles {
    pub fn new(mut times: Vec<Duration>) -> Self {
        assert!(!times.is_empty(), "nothing was measured");
        times.sort_unstable();
        Self(times)
    }

    /// The time at `fraction` (0.5 for the median), nearest rank.
    pub fn at(&self, fraction: f64) -> Duration {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((self.0.len() - 1) as f64 * fraction).round() as usize;
        self.0[index]
    }

    pub fn p50_ms(&self) -> f64 {
        self.at(0.5).as_secs_f64() * 1e3
    }

    pub fn p99_ms(&self) -> f64 {
        self.at(0.99).as_secs_f64() * 1e3
    }
}
