//! The full-screen interface on a real terminal, and the event loop it shares with headless mode.
//!
//! [`run_loop`] is one `select!` over input, core events, effect outcomes, the frame timer and a
//! clock that wakes when a shown elapsed time changes (each second in a call's first minute, then
//! each minute). Frames are requested by marking the state dirty
//! and drawn at most 60 times a second; with nothing happening, nothing wakes up. The loop is
//! generic over the backend and fed by a channel of [`Input`], so headless mode runs the very
//! same code on a test backend with a script as its keyboard.

use std::io::{IsTerminal, Stdout, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend, TestBackend};
use tokio::sync::{broadcast, mpsc, watch};

use crate::app::{App, DETACH_REASON, Effect, Input, Outcome};
use crate::core::{CallRequest, Core, CoreError};

/// The shortest time between two frames (60 a second).
const FRAME: Duration = Duration::from_millis(16);
/// Past the moment an elapsed time changes, so that the frame shows the new value.
const CLOCK_SLACK: Duration = Duration::from_millis(5);
/// How often the input thread looks up from the terminal to see whether to stop: seldom, as
/// every look costs an idle interface a wakeup.
const INPUT_POLL: Duration = Duration::from_secs(2);
/// Input events buffered between the input thread and the loop.
const INPUT_BUFFER: usize = 256;
/// Writes buffered for the processes.
const WRITE_BUFFER: usize = 256;

/// A backend whose size the loop can change (the real terminal changes its own).
pub trait ResizeBackend: Backend {
    fn resize_to(&mut self, cols: u16, rows: u16);
}

impl<W: Write> ResizeBackend for CrosstermBackend<W> {
    fn resize_to(&mut self, _cols: u16, _rows: u16) {}
}

impl ResizeBackend for TestBackend {
    fn resize_to(&mut self, cols: u16, rows: u16) {
        self.resize(cols, rows);
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// Runs the interface until the app quits or the inputs end. After each frame its text goes to
/// `frames`, when given (headless mode waits on it).
pub async fn run_loop<B: ResizeBackend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    inputs: &mut mpsc::Receiver<Input>,
    frames: Option<&watch::Sender<String>>,
) -> anyhow::Result<()> {
    let core = app.core().clone();
    let mut events = core.subscribe();
    let (outcome_tx, mut outcomes) = mpsc::unbounded_channel();
    let writes = spawn_writer(core.clone(), outcome_tx.clone());
    let mut dirty = true;
    let mut last_frame: Option<Instant> = None;
    let mut barriers: Vec<tokio::sync::oneshot::Sender<()>> = Vec::new();
    loop {
        let frame_due =
            !barriers.is_empty() || last_frame.is_none_or(|last| last.elapsed() >= FRAME);
        if dirty && frame_due {
            app.refresh_pane();
            let now = now_ms();
            let frame = terminal
                .draw(|frame| crate::ui::render(app, now, frame))
                .map_err(|err| anyhow::anyhow!("drawing the screen: {err}"))?;
            if let Some(frames) = frames {
                frames.send_replace(crate::ui::buffer_text(frame.buffer));
            }
            dirty = false;
            last_frame = Some(Instant::now());
            for barrier in barriers.drain(..) {
                let _ = barrier.send(());
            }
        }
        if app.quit {
            return Ok(());
        }
        let next_frame = (dirty && !frame_due)
            .then(|| last_frame.map(|last| tokio::time::Instant::from_std(last + FRAME)))
            .flatten();
        // Woken only when an elapsed time or a notice on screen changes.
        let next_tick = app
            .next_tick(now_ms())
            .map(|wait| tokio::time::Instant::now() + wait + CLOCK_SLACK);
        tokio::select! {
            input = inputs.recv() => {
                let Some(input) = input else {
                    return Ok(());
                };
                match input {
                    Input::Resize { cols, rows } => terminal.backend_mut().resize_to(cols, rows),
                    Input::Barrier(reply) => {
                        barriers.push(reply);
                        dirty = true;
                        continue;
                    }
                    _ => {}
                }
                let effects = app.handle_input(input);
                execute(&core, app, effects, &outcome_tx, &writes);
                dirty = true;
                app.pane_stale = true;
            }
            event = events.recv() => match event {
                Ok(event) => {
                    let shown = match &event {
                        crate::core::CoreEvent::OutputChanged { id } => {
                            app.selected.as_deref() == Some(id.as_str())
                        }
                        _ => true,
                    };
                    dirty |= shown;
                    app.pane_stale |= shown;
                    let effects = app.handle_core_event(&event);
                    execute(&core, app, effects, &outcome_tx, &writes);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    app.refresh_entries();
                    dirty = true;
                    app.pane_stale = true;
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
            Some(outcome) = outcomes.recv() => {
                app.handle_outcome(outcome);
                dirty = true;
                app.pane_stale = true;
            }
            () = crate::pty::sleep_until_opt(next_frame) => {}
            // Only elapsed times change: the pane stays as fetched.
            () = crate::pty::sleep_until_opt(next_tick) => dirty = true,
        }
    }
}

/// Sends writes to the processes in order, off the loop.
fn spawn_writer(
    core: Core,
    outcomes: mpsc::UnboundedSender<Outcome>,
) -> mpsc::Sender<(String, Vec<u8>)> {
    let (writes, mut queue) = mpsc::channel::<(String, Vec<u8>)>(WRITE_BUFFER);
    tokio::spawn(async move {
        while let Some((id, bytes)) = queue.recv().await {
            if let Err(err) = core.write(&id, bytes).await {
                let _ = outcomes.send(Outcome::Failed(err.to_string()));
            }
        }
    });
    writes
}

/// Carries out the app's effects on the core; slow ones report back as outcomes.
fn execute(
    core: &Core,
    app: &App,
    effects: Vec<Effect>,
    outcomes: &mpsc::UnboundedSender<Outcome>,
    writes: &mpsc::Sender<(String, Vec<u8>)>,
) {
    for effect in effects {
        match effect {
            Effect::Start { command, size } => {
                let request = CallRequest {
                    size: Some(size),
                    ..CallRequest::new(command.clone())
                };
                match core.start(request) {
                    // This interface is the call's waiter: its result is in the pane already.
                    Ok(handle) => drop(tokio::spawn(handle.result())),
                    Err(err) => {
                        let _ = outcomes
                            .send(Outcome::Failed(format!("cannot run `{command}`: {err}")));
                    }
                }
            }
            Effect::Detach { id, name } => {
                let (core, outcomes) = (core.clone(), outcomes.clone());
                tokio::spawn(async move {
                    let outcome = match core.detach(&id, name.as_deref(), DETACH_REASON).await {
                        Ok(task) => Outcome::Done(format!(
                            "detached `{}` as task {}",
                            task.label(),
                            task.task_id.as_deref().unwrap_or("?")
                        )),
                        Err(err) => Outcome::Failed(format!("cannot detach: {err}")),
                    };
                    let _ = outcomes.send(outcome);
                });
            }
            Effect::Kill { id } => {
                let (core, outcomes) = (core.clone(), outcomes.clone());
                let label = app
                    .entries
                    .iter()
                    .find(|entry| entry.id == id)
                    .map_or_else(|| id.clone(), |entry| entry.label().to_owned());
                tokio::spawn(async move {
                    let outcome = match core.kill(&id).await {
                        Ok(_) => Outcome::Done(format!("killed `{label}`")),
                        Err(err) => Outcome::Failed(format!("cannot kill `{label}`: {err}")),
                    };
                    let _ = outcomes.send(outcome);
                });
            }
            Effect::Write { id, bytes } => {
                if writes.try_send((id, bytes)).is_err() {
                    let _ = outcomes.send(Outcome::Failed(
                        "the process is not reading its input: keys dropped".into(),
                    ));
                }
            }
            Effect::Resize { id, size } => match core.resize(&id, size) {
                Ok(()) | Err(CoreError::NotFound(_)) => {}
                Err(err) => {
                    let _ = outcomes.send(Outcome::Failed(format!("cannot resize: {err}")));
                }
            },
        }
    }
}

/// Puts the terminal in raw mode on the alternate screen; puts it back on drop and on panic.
pub struct TerminalGuard {
    _private: (),
}

fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        std::io::stdout(),
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

impl TerminalGuard {
    pub fn enter() -> anyhow::Result<Self> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        enable_raw_mode().context("putting the terminal in raw mode")?;
        let guard = Self { _private: () };
        crossterm::execute!(
            std::io::stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture
        )
        .context("setting up the terminal")?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Reads terminal events on a thread of its own (reads block) into the loop's channel.
fn spawn_input_thread(inputs: mpsc::Sender<Input>, stop: Arc<AtomicBool>) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("oino-input".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match event::poll(INPUT_POLL) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(_) => break,
                }
                let input = match event::read() {
                    Ok(Event::Key(key)) => Input::Key(key),
                    Ok(Event::Paste(text)) => Input::Paste(text),
                    Ok(Event::Mouse(mouse)) => Input::Mouse(mouse),
                    Ok(Event::Resize(cols, rows)) => Input::Resize { cols, rows },
                    Ok(_) => continue,
                    Err(_) => break,
                };
                if inputs.blocking_send(input).is_err() {
                    break;
                }
            }
        })
        .context("starting the input thread")?;
    Ok(())
}

/// Sends `Input::Stop` on SIGTERM or SIGHUP.
fn forward_stop_signals(inputs: mpsc::Sender<Input>) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
        let _ = inputs.send(Input::Stop).await;
    });
    Ok(())
}

/// Whether oino's own colors are off (<https://no-color.org>).
#[must_use]
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty())
}

/// The full-screen interface on this terminal, with `commands` (title, command) started as calls.
pub async fn run(commands: Vec<(Option<String>, String)>) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the interface needs a terminal: run oino in one, or use `oino run -- COMMAND` or \
             `oino headless`"
        );
    }
    let core = Core::new(crate::core::CoreConfig::default())?;
    let (cols, rows) = crossterm::terminal::size().context("reading the terminal size")?;
    let mut app = App::new(core.clone(), (cols, rows), !no_color());
    for (title, command) in commands {
        let request = CallRequest {
            size: app.pane_size(),
            title,
            ..CallRequest::new(command)
        };
        let handle = core.start(request)?;
        // The interface is the waiter of these calls.
        tokio::spawn(handle.result());
    }
    app.refresh_entries();

    let guard = TerminalGuard::enter()?;
    let outcome = async {
        let mut terminal: Terminal<CrosstermBackend<Stdout>> =
            Terminal::new(CrosstermBackend::new(std::io::stdout()))
                .context("opening the terminal")?;
        let (input_tx, mut inputs) = mpsc::channel(INPUT_BUFFER);
        let stop = Arc::new(AtomicBool::new(false));
        spawn_input_thread(input_tx.clone(), Arc::clone(&stop))?;
        forward_stop_signals(input_tx)?;
        let result = run_loop(&mut terminal, &mut app, &mut inputs, None).await;
        stop.store(true, Ordering::Relaxed);
        result
    }
    .await;
    drop(guard);
    // Until the server keeps them, the processes end with the interface.
    core.shutdown().await;
    outcome
}
