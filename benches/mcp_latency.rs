//! Latency of a `bash` tool call of `true` through the agent bridge (rmcp's client over the real
//! `oino mcp`, which asks a real server), against `bash -c true` in a bare PTY (portable-pty, no
//! oino), by an in-process core and by `oino run`, all measured in one run, in alternating
//! rounds.
//! Run: `cargo bench --bench mcp_latency`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oino::core::{CallRequest, Core, CoreConfig};
use oino::remote::client::Client;
use oino::remote::protocol::requests::KillServer;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;

#[path = "support/percentiles.rs"]
mod percentiles;
use percentiles::Percentiles;

const WAYS: [&str; 4] = [
    "bash -c true in a bare PTY",
    "oino core, in process",
    "bash tool call through oino mcp",
    "oino run through the server (a process)",
];
/// Alternating rounds of each way, and calls of each way a round.
const ROUNDS: usize = 5;
const CALLS: usize = 40;

fn timed(mut run: impl FnMut()) -> Vec<Duration> {
    (0..CALLS)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect()
}

fn bare_pty() {
    let pair = portable_pty::native_pty_system()
        .openpty(portable_pty::PtySize::default())
        .expect("a PTY");
    let mut command = portable_pty::CommandBuilder::new("bash");
    command.args(["-c", "true"]);
    let mut child = pair.slave.spawn_command(command).expect("bash");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("the PTY's reader");
    // The read ends with EIO once the terminal's last user is gone.
    let _ = std::io::copy(&mut reader, &mut std::io::sink());
    assert!(child.wait().expect("wait").success());
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("oino-bench-mcp-{}", std::process::id()));
    let socket = dir.join("sock/bench.sock");
    let oino = env!("CARGO_BIN_EXE_oino");

    let core = Core::new(CoreConfig {
        log_dir: Some(dir.join("logs")),
        ..CoreConfig::default()
    })?;
    let mut bridge = Command::new(oino);
    bridge
        .args(["mcp", "--socket"])
        .arg(&socket)
        .env("XDG_STATE_HOME", dir.join("state"));
    let agent = ()
        .serve(TokioChildProcess::new(tokio::process::Command::from(
            bridge,
        ))?)
        .await?;
    let call = || {
        let mut arguments = serde_json::Map::new();
        arguments.insert("command".into(), "true".into());
        CallToolRequestParams::new("bash").with_arguments(arguments)
    };
    // The first call starts the server.
    agent.call_tool(call()).await?;

    // Per round and way: (p50, p99) in ms.
    let mut rounds: Vec<[(f64, f64); 4]> = Vec::new();
    for _ in 0..ROUNDS {
        let bare = timed(bare_pty);
        let mut in_process = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let start = Instant::now();
            let result = core.start(CallRequest::new("true"))?.result().await;
            in_process.push(start.elapsed());
            assert!(!result.is_error);
        }
        let mut through_bridge = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            let start = Instant::now();
            let result = agent.call_tool(call()).await?;
            through_bridge.push(start.elapsed());
            assert_eq!(result.is_error, Some(false));
        }
        let oino_run = timed(|| {
            let status = Command::new(oino)
                .args(["run", "--socket"])
                .arg(&socket)
                .args(["--", "true"])
                .env("XDG_STATE_HOME", dir.join("state"))
                .stdout(Stdio::null())
                .status()
                .expect("oino run");
            assert!(status.success());
        });
        let round = [bare, in_process, through_bridge, oino_run].map(|times| {
            let times = Percentiles::new(times);
            (times.p50_ms(), times.p99_ms())
        });
        rounds.push(round);
    }

    println!(
        "`true` in a PTY: {ROUNDS} alternating rounds of {CALLS} calls each way; medians of the rounds' p50 and p99, and of the rounds' p50 ratios to the bare PTY:"
    );
    for (way, label) in WAYS.iter().enumerate() {
        let p50 = median(rounds.iter().map(|round| round[way].0));
        let p99 = median(rounds.iter().map(|round| round[way].1));
        let ratio = median(rounds.iter().map(|round| round[way].0 / round[0].0));
        let ratio = if way == 0 {
            String::new()
        } else {
            format!(", p50 {ratio:.2}x the bare PTY")
        };
        println!("{label:<40} p50 {p50:>6.2} ms, p99 {p99:>6.2} ms{ratio}");
    }

    agent.cancel().await?;
    Client::connect(&oino::remote::address::Address::Socket(socket.clone()))
        .await?
        .ask(KillServer {})
        .await?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
