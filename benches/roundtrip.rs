//! Round trip of a small request (`list`) to a server on a Unix socket, and the same question
//! asked of an in-process core, measured in one run. Run: `cargo bench --bench roundtrip`.

use std::time::{Duration, Instant};

use oino::core::{Core, CoreConfig, EntryInfo};
use oino::link::Link;
use oino::remote::client::Client;
use oino::remote::protocol::requests::{KillServer, List};

#[path = "support/percentiles.rs"]
mod percentiles;
use percentiles::Percentiles;

const ROUNDS: usize = 2000;

fn report(label: &str, times: Vec<Duration>) {
    let times = Percentiles::new(times);
    println!(
        "{label:<32} p50 {:>7.1} µs, p99 {:>7.1} µs",
        times.p50_ms() * 1e3,
        times.p99_ms() * 1e3
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("oino-bench-rtt-{}", std::process::id()));
    let socket = dir.join("sock/bench.sock");
    let serving = {
        let socket = socket.clone();
        tokio::spawn(async move {
            oino::remote::server::serve(
                &socket,
                Duration::from_secs(600),
                oino::core::CoreConfig::default(),
            )
            .await
        })
    };
    let client = loop {
        if let Ok(client) =
            Client::connect(&oino::remote::address::Address::Socket(socket.clone())).await
        {
            break client;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let mut remote = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let entries: Vec<EntryInfo> = client.ask(List {}).await?;
        remote.push(start.elapsed());
        assert!(entries.is_empty());
    }
    let core = Core::new(CoreConfig {
        log_dir: Some(dir.join("logs")),
        ..CoreConfig::default()
    })?;
    let local: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            let entries = core.entries();
            let elapsed = start.elapsed();
            assert!(entries.is_empty());
            elapsed
        })
        .collect();
    // The same question through the request path a front end takes in process.
    let link = Link::Local(core);
    let mut linked = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let entries = link.ask(oino::remote::protocol::requests::List {}).await?;
        linked.push(start.elapsed());
        assert!(entries.is_empty());
    }
    report("list through the socket", remote);
    report("list in process", local);
    report("list through a link in process", linked);
    client.ask(KillServer {}).await?;
    serving.await??;
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
