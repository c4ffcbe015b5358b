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
use tokio::sync::{mpsc, watch};

use crate::core::{CallRequest, CoreEvent};
use crate::interface::app::{App, DETACH_REASON, Effect, Input, Outcome, PaneRequest};
use crate::link::{Link, LinkEvent};

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
    link: &Link,
    inputs: &mut mpsc::Receiver<Input>,
    frames: Option<&watch::Sender<String>>,
) -> anyhow::Result<()> {
    let mut events = link.events().await?;
    app.processes_outlive = link.is_remote();
    let (outcome_tx, mut outcomes) = mpsc::unbounded_channel();
    let writes = spawn_writer(link.clone(), outcome_tx.clone());
    let mut dirty = true;
    let mut last_frame: Option<Instant> = None;
    let mut barriers: Vec<tokio::sync::oneshot::Sender<()>> = Vec::new();
    loop {
        let frame_due =
            !barriers.is_empty() || last_frame.is_none_or(|last| last.elapsed() >= FRAME);
        if dirty && frame_due {
            refresh(app, link).await;
            let now = now_ms();
            let frame = terminal
                .draw(|frame| crate::interface::ui::render(app, now, frame))
                .map_err(|err| anyhow::anyhow!("drawing the screen: {err}"))?;
            if let Some(frames) = frames {
                frames.send_replace(crate::interface::ui::buffer_text(frame.buffer));
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
                execute(link, app, effects, &outcome_tx, &writes);
                dirty = true;
                app.pane_stale = true;
            }
            event = events.recv() => match event {
                LinkEvent::Core(event) => {
                    let shown = match &event {
                        CoreEvent::OutputChanged { id } => {
                            app.selected.as_deref() == Some(id.as_str())
                        }
                        _ => true,
                    };
                    dirty |= shown;
                    app.pane_stale |= shown;
                    let effects = app.handle_core_event(&event);
                    execute(link, app, effects, &outcome_tx, &writes);
                }
                LinkEvent::Lagged => {
                    app.entries_stale = true;
                    app.pane_stale = true;
                    dirty = true;
                }
                LinkEvent::Closed => {
                    anyhow::bail!("the oino server went away; run `oino` again to start it anew")
                }
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

/// Fetches what the next frame shows and is stale: the entries, the pane.
async fn refresh(app: &mut App, link: &Link) {
    app.expire_notice();
    if app.entries_stale {
        match link.entries().await {
            Ok(entries) => app.set_entries(entries),
            Err(err) => app.say(format!("cannot list the calls: {err:#}"), true),
        }
    }
    match app.pane_request() {
        Some(PaneRequest::Live { id, size }) => match link.snapshot(&id, size).await {
            Ok(snapshot) => app.pane = Some(snapshot),
            // The entry went (a server restarted): the list will say so.
            Err(_) => app.pane = None,
        },
        Some(PaneRequest::History {
            id,
            lines_back,
            size,
        }) => match link
            .history_page(&id, lines_back, usize::from(size.rows))
            .await
        {
            Ok(page) => app.set_history(&page, size),
            Err(err) => app.say(format!("cannot read the history: {err:#}"), true),
        },
        None => {}
    }
}

/// Sends writes to the processes in order, off the loop.
fn spawn_writer(
    link: Link,
    outcomes: mpsc::UnboundedSender<Outcome>,
) -> mpsc::Sender<(String, Vec<u8>)> {
    let (writes, mut queue) = mpsc::channel::<(String, Vec<u8>)>(WRITE_BUFFER);
    tokio::spawn(async move {
        while let Some((id, bytes)) = queue.recv().await {
            if let Err(err) = link.write(&id, bytes).await {
                let _ = outcomes.send(Outcome::Failed(format!("{err:#}")));
            }
        }
    });
    writes
}

/// The scroll that puts the search's next match (below the view when `newer`, else above it)
/// in the middle of the pane; `None` when there is none.
async fn find_match(
    link: &Link,
    id: &str,
    query: &str,
    newer: bool,
    scroll: usize,
    rows: u16,
) -> anyhow::Result<Option<usize>> {
    let rows = u64::from(rows);
    let page = link.history_page(id, scroll as u64, 0).await?;
    let total = page.total_lines;
    // Lines in view: [bottom - rows, bottom).
    let bottom = total - page.lines_back;
    let from = match (scroll, newer) {
        (0, false) => total,
        (_, false) => bottom.saturating_sub(rows),
        (_, true) => bottom.saturating_sub(1),
    };
    let Some(found) = link.find_line(id, from, newer, query).await? else {
        return Ok(None);
    };
    let bottom = (found + rows / 2 + 1).clamp(rows.min(total), total);
    Ok(Some(
        usize::try_from(total - bottom).unwrap_or(usize::MAX).max(1),
    ))
}

/// Carries out the app's effects; slow ones report back as outcomes.
fn execute(
    link: &Link,
    app: &App,
    effects: Vec<Effect>,
    outcomes: &mpsc::UnboundedSender<Outcome>,
    writes: &mpsc::Sender<(String, Vec<u8>)>,
) {
    for effect in effects {
        let (link, outcomes) = (link.clone(), outcomes.clone());
        match effect {
            Effect::Start { command, size } => {
                // As typed in this shell: its folder, its environment.
                let request = CallRequest {
                    size: Some(size),
                    cwd: std::env::current_dir().ok(),
                    env: std::env::vars().collect(),
                    ..CallRequest::new(command.clone())
                };
                tokio::spawn(async move {
                    if let Err(err) = link.start(request).await {
                        let _ = outcomes
                            .send(Outcome::Failed(format!("cannot run `{command}`: {err:#}")));
                    }
                });
            }
            Effect::Detach { id, name } => {
                tokio::spawn(async move {
                    let outcome = match link.detach(&id, name.as_deref(), DETACH_REASON).await {
                        Ok(task) => Outcome::Done(format!(
                            "detached `{}` as task {}",
                            task.label(),
                            task.task_id.as_deref().unwrap_or("?")
                        )),
                        Err(err) => Outcome::Failed(format!("cannot detach: {err:#}")),
                    };
                    let _ = outcomes.send(outcome);
                });
            }
            Effect::Kill { id } => {
                let label = app
                    .entries
                    .iter()
                    .find(|entry| entry.id == id)
                    .map_or_else(|| id.clone(), |entry| entry.label().to_owned());
                tokio::spawn(async move {
                    let outcome = match link.kill(&id).await {
                        Ok(_) => Outcome::Done(format!("killed `{label}`")),
                        Err(err) => Outcome::Failed(format!("cannot kill `{label}`: {err:#}")),
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
            Effect::Resize { id, size } => {
                tokio::spawn(async move {
                    // An entry that has gone needs no size.
                    let _ = link.resize(&id, size).await;
                });
            }
            Effect::Search {
                id,
                query,
                newer,
                scroll,
                rows,
            } => {
                tokio::spawn(async move {
                    let outcome = match find_match(&link, &id, &query, newer, scroll, rows).await {
                        Ok(Some(scroll)) => Outcome::Scroll(scroll),
                        Ok(None) => Outcome::Failed(format!("no more matches for `{query}`")),
                        Err(err) => Outcome::Failed(format!("cannot search: {err:#}")),
                    };
                    let _ = outcomes.send(outcome);
                });
            }
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

/// The full-screen interface on this terminal, on `link`, with `commands` (title, command)
/// started as calls; with none given, the demo's when there is nothing to show yet.
pub async fn run(
    link: Link,
    commands: Vec<(Option<String>, String)>,
    demo: Vec<(Option<String>, String)>,
) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the interface needs a terminal: run oino in one, or use `oino run -- COMMAND` or \
             `oino headless`"
        );
    }
    let (cols, rows) = crossterm::terminal::size().context("reading the terminal size")?;
    let mut app = App::new((cols, rows), !no_color());
    let commands = if commands.is_empty() && link.entries().await?.is_empty() {
        demo
    } else {
        commands
    };
    let cwd = std::env::current_dir().ok();
    let env: Vec<(String, String)> = std::env::vars().collect();
    for (title, command) in commands {
        link.start(CallRequest {
            size: app.pane_size(),
            title,
            cwd: cwd.clone(),
            env: env.clone(),
            ..CallRequest::new(command)
        })
        .await?;
    }

    let guard = TerminalGuard::enter()?;
    let outcome = async {
        let mut terminal: Terminal<CrosstermBackend<Stdout>> =
            Terminal::new(CrosstermBackend::new(std::io::stdout()))
                .context("opening the terminal")?;
        let (input_tx, mut inputs) = mpsc::channel(INPUT_BUFFER);
        let stop = Arc::new(AtomicBool::new(false));
        spawn_input_thread(input_tx.clone(), Arc::clone(&stop))?;
        forward_stop_signals(input_tx)?;
        let result = run_loop(&mut terminal, &mut app, &link, &mut inputs, None).await;
        stop.store(true, Ordering::Relaxed);
        result
    }
    .await;
    drop(guard);
    // An interface of its own ends its processes; a server keeps them.
    link.close().await;
    outcome
}
