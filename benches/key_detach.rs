//! Keypress to detach result, while another call floods: Ctrl-B goes into the interface's event
//! loop (on a test backend, drawing as it would on a terminal) and the clock stops when the
//! detached call's waiter holds its result. Run: `cargo bench --bench key_detach`.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use oino::core::{CallRequest, Core, CoreConfig};
use oino::interface::app::{App, Input};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::{mpsc, watch};

#[path = "support/percentiles.rs"]
mod percentiles;
use percentiles::Percentiles;

const DETACHES: usize = 40;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let log_dir = std::env::temp_dir().join(format!("oino-bench-keys-{}", std::process::id()));
    let core = Core::new(CoreConfig {
        log_dir: Some(log_dir.clone()),
        ..CoreConfig::default()
    })?;
    // The flood that keeps the machine busy the whole time.
    let flood = core.start(CallRequest::new(
        "yes 0123456789012345678901234567890123456789",
    ))?;
    let mut terminal = Terminal::new(TestBackend::new(200, 50))?;
    let mut app = App::new((200, 50), true);
    let link = oino::link::Link::Local(core.clone());
    let (inputs, mut input_rx) = mpsc::channel(16);
    let (frames_tx, mut frames) = watch::channel(ratatui::buffer::Buffer::empty(
        ratatui::layout::Rect::default(),
    ));
    let mut latencies = Vec::with_capacity(DETACHES);
    let driver = {
        let core = core.clone();
        tokio::spawn(async move {
            for _ in 0..DETACHES {
                let handle = core.start(CallRequest::new(
                    "while true; do echo waiting; sleep 0.05; done",
                ))?;
                let id = handle.id.clone();
                core.wait_output(&id, 0, Duration::from_secs(10)).await?;
                // Select it (the second running call, after the flood) and see it selected; the
                // keys may arrive before the interface has listed it, so again until it shows.
                let header = format!("· {id}");
                let mut tries = 0;
                loop {
                    inputs
                        .send(key(KeyCode::Char('g'), KeyModifiers::NONE))
                        .await?;
                    inputs
                        .send(key(KeyCode::Char('j'), KeyModifiers::NONE))
                        .await?;
                    let shown = tokio::time::timeout(
                        Duration::from_secs(1),
                        frames.wait_for(|frame| first_line(frame).contains(&header)),
                    )
                    .await;
                    tries += 1;
                    if matches!(shown, Ok(Ok(_))) {
                        break;
                    }
                    anyhow::ensure!(tries < 10, "{id} never got selected");
                }
                let start = Instant::now();
                inputs
                    .send(key(KeyCode::Char('b'), KeyModifiers::CONTROL))
                    .await?;
                let result = handle.result().await;
                let elapsed = start.elapsed();
                if result.detached.is_some() {
                    latencies.push(elapsed);
                }
                core.kill(&id).await?;
            }
            drop(inputs);
            anyhow::Ok(latencies)
        })
    };
    oino::interface::event_loop::run_loop(
        &mut terminal,
        &mut app,
        &oino::interface::fleet::Fleet::single(link),
        &mut input_rx,
        Some(&frames_tx),
    )
    .await?;
    let latencies = driver.await??;
    let count = latencies.len();
    let latencies = Percentiles::new(latencies);
    println!(
        "keypress to detach result while a call floods ({count} of {DETACHES} detached): \
         p50 {:.2} ms, p99 {:.2} ms",
        latencies.p50_ms(),
        latencies.p99_ms()
    );
    core.kill(&flood.id).await?;
    core.shutdown().await;
    let _ = std::fs::remove_dir_all(log_dir);
    Ok(())
}

fn key(code: KeyCode, modifiers: KeyModifiers) -> Input {
    Input::Key(KeyEvent::new(code, modifiers))
}

/// The top row of a drawn frame, as text.
fn first_line(frame: &ratatui::buffer::Buffer) -> String {
    (0..frame.area.width)
        .filter_map(|x| frame.cell((x, 0)).map(ratatui::buffer::Cell::symbol))
        .collect()
}
