//! Detach latency under a flood: from the detach request to the waiter holding its result,
//! while the call prints as fast as it can. Run: `cargo bench --bench detach_latency`.

use std::time::{Duration, Instant};

use oino::core::{CallRequest, Core, CoreConfig};

const DETACHES: usize = 60;
const FLOOD: &str = "yes 0123456789012345678901234567890123456789012345678901234567890123456789";

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
    sorted[index]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let log_dir = std::env::temp_dir().join(format!("oino-bench-{}", std::process::id()));
    let core = Core::new(CoreConfig {
        log_dir: Some(log_dir.clone()),
        ..CoreConfig::default()
    })?;
    let mut latencies = Vec::with_capacity(DETACHES);
    for _ in 0..DETACHES {
        let handle = core.start(CallRequest::new(FLOOD))?;
        let id = handle.id.clone();
        // Detach in the thick of it: a few MiB in.
        core.wait_output(&id, 4 << 20, Duration::from_secs(30))
            .await?;
        let start = Instant::now();
        let (detached, result) = tokio::join!(core.detach(&id, None, "bench"), handle.result());
        let elapsed = start.elapsed();
        detached?;
        assert!(result.detached.is_some(), "the call was not detached");
        latencies.push(elapsed);
        core.kill(&id).await?;
    }
    latencies.sort_unstable();
    println!(
        "detach latency under a flood over {DETACHES} detaches: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies[latencies.len() - 1].as_secs_f64() * 1e3,
    );
    core.shutdown().await;
    let _ = std::fs::remove_dir_all(log_dir);
    Ok(())
}
