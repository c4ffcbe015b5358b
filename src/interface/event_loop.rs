//! The event loop the interface runs on a real terminal and in headless mode alike.
//!
//! [`run_loop`] is one `select!` over input, core events, effect outcomes, the frame timer and a
//! clock that wakes when a shown elapsed time changes (each second in a call's first minute, then
//! each minute). Anything may ask for a frame; the [`FrameScheduler`] draws them at most 60 times
//! a second, and with nothing happening nothing wakes up. The loop is generic over the backend
//! and fed by a channel of [`Input`], so headless mode runs the very same code on a test backend
//! with a script as its keyboard. `execute` carries out the app's effects on the link.

use std::io::Write;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend, TestBackend};
use tokio::sync::{mpsc, watch};

use crate::core::CallRequest;
use crate::interface::app::usage::{SAMPLE_EVERY, UsageSampler};
use crate::interface::app::{
    App, DETACH_REASON, Effect, Input, Outcome, PaneRequest, not_found_text,
};
use crate::interface::fleet::Fleet;
use crate::interface::fleet::split_id;
use crate::link::LinkEvent;
use crate::output::SearchHit;
use crate::remote::protocol::Travel as _;
use crate::remote::protocol::requests as ask;
use crate::screen::MouseEvents;
use crate::time::now_ms;

/// The shortest time between two frames (60 a second).
const FRAME: Duration = Duration::from_millis(16);
/// Past the moment an elapsed time changes, so that the frame shows the new value.
const CLOCK_SLACK: Duration = Duration::from_millis(5);
/// Writes buffered for the processes.
const WRITE_BUFFER: usize = 256;

/// A backend whose size the loop can change (the real terminal changes its own).
pub trait ResizeBackend: Backend {
    /// Takes the terminal's new size (the real terminal has it already).
    fn resize_to(&mut self, cols: u16, rows: u16);

    /// Asks the terminal for these mouse reports (none: stops asking).
    fn capture_mouse(&mut self, _events: MouseEvents) {}
}

impl<W: Write> ResizeBackend for CrosstermBackend<W> {
    fn resize_to(&mut self, _cols: u16, _rows: u16) {}

    fn capture_mouse(&mut self, events: MouseEvents) {
        // Off first; then the one mode asked for, in the SGR form the input reader parses.
        let mode = match events {
            MouseEvents::None => None,
            MouseEvents::Press | MouseEvents::PressRelease => Some(1000),
            MouseEvents::ButtonMotion => Some(1002),
            MouseEvents::AnyMotion => Some(1003),
        };
        let mut sequence = b"\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\x1b[?1000l".to_vec();
        if let Some(mode) = mode {
            sequence.extend_from_slice(format!("\x1b[?{mode}h\x1b[?1006h").as_bytes());
        }
        // A terminal that cannot be written to is met by the next draw.
        let _ = self.write_all(&sequence).and_then(|()| Write::flush(self));
    }
}

impl ResizeBackend for TestBackend {
    fn resize_to(&mut self, cols: u16, rows: u16) {
        self.resize(cols, rows);
    }
}

/// When to draw. Frames are asked for, not drawn at once: asks are coalesced into at most one
/// frame per `interval`, and a forced frame (a headless script's barrier) is drawn at once.
#[derive(Debug)]
pub(crate) struct FrameScheduler {
    interval: Duration,
    wanted: bool,
    forced: bool,
    last: Option<Instant>,
}

impl FrameScheduler {
    /// A scheduler whose first frame is wanted.
    #[must_use]
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            wanted: true,
            forced: false,
            last: None,
        }
    }

    /// Asks for a frame, drawn when the interval since the last one has passed.
    pub(crate) fn schedule(&mut self) {
        self.wanted = true;
    }

    /// Asks for a frame drawn at once.
    pub(crate) fn force(&mut self) {
        self.wanted = true;
        self.forced = true;
    }

    /// Whether a frame is to be drawn at `now`.
    #[must_use]
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.wanted && (self.forced || self.last.is_none_or(|last| now >= last + self.interval))
    }

    /// A frame was drawn at `now`.
    pub fn drawn(&mut self, now: Instant) {
        self.wanted = false;
        self.forced = false;
        self.last = Some(now);
    }

    /// When to wake for a frame asked for but not yet due; `None` when none waits.
    #[must_use]
    pub(crate) fn wake_at(&self, now: Instant) -> Option<Instant> {
        (self.wanted && !self.due(now))
            .then(|| self.last.map(|last| last + self.interval))
            .flatten()
    }
}

/// Fetches what the frame shows and draws it (and hands it to `frames`); asks the terminal
/// for the mouse as the program now does.
async fn draw<B: ResizeBackend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    fleet: &Fleet,
    frames: Option<&watch::Sender<ratatui::buffer::Buffer>>,
    mouse_captured: &mut crate::screen::MouseEvents,
) -> anyhow::Result<()> {
    refresh(app, fleet).await;
    let now = app.frozen_ms.unwrap_or_else(now_ms);
    let frame = terminal
        .draw(|frame| crate::interface::ui::render(app, now, frame))
        .map_err(|err| anyhow::anyhow!("drawing the screen: {err}"))?;
    if let Some(frames) = frames {
        frames.send_replace(frame.buffer.clone());
    }
    // Attached, the mouse is asked for only while the program asks for it.
    if app.wants_mouse() != *mouse_captured {
        *mouse_captured = app.wants_mouse();
        terminal.backend_mut().capture_mouse(*mouse_captured);
    }
    Ok(())
}

/// Runs the interface until the app quits or the inputs end. After each frame its cells go to
/// `frames`, when given (headless mode waits on it).
pub async fn run_loop<B: ResizeBackend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    fleet: &Fleet,
    inputs: &mut mpsc::Receiver<Input>,
    frames: Option<&watch::Sender<ratatui::buffer::Buffer>>,
) -> anyhow::Result<()> {
    let mut events = fleet.events().await?;
    app.set_processes_outlive(fleet.here().is_remote());
    app.hosts = fleet.hosts();
    let (outcome_tx, mut outcomes) = mpsc::unbounded_channel();
    let writes = spawn_writer(fleet.clone(), outcome_tx.clone());
    let mut scheduler = FrameScheduler::new(FRAME);
    let mut barriers: Vec<tokio::sync::oneshot::Sender<()>> = Vec::new();
    let mut usage = UsageSampler::default();
    // As the terminal was set up (see `TerminalGuard::enter`).
    let mut mouse_captured = app.wants_mouse();

    loop {
        if app.frozen_ms.is_none() && app.any_running() && usage.due(Instant::now()) {
            // A far entry's pid is its machine's: what it costs is not read here.
            let mut in_view = app.entries_in_view();
            in_view.retain(|entry| split_id(&entry.id).is_none());
            app.set_usage(usage.sample(&in_view, Instant::now()));
        }
        if app.take_frame_request() {
            scheduler.schedule();
        }
        if scheduler.due(Instant::now()) {
            draw(terminal, app, fleet, frames, &mut mouse_captured).await?;
            // What the refresh itself asked for is on this frame.
            app.take_frame_request();
            scheduler.drawn(Instant::now());
            for barrier in barriers.drain(..) {
                let _ = barrier.send(());
            }
        }
        if app.quit {
            return Ok(());
        }
        let wakes = Wakes::of(app, &scheduler, &usage);
        tokio::select! {
            input = inputs.recv() => {
                let Some(input) = input else {
                    return Ok(());
                };
                match input {
                    Input::Resize { cols, rows } => terminal.backend_mut().resize_to(cols, rows),
                    Input::Barrier(reply) => {
                        barriers.push(reply);
                        scheduler.force();
                        continue;
                    }
                    _ => {}
                }
                let effects = app.handle_input(input);
                execute(fleet, app, effects, &outcome_tx, &writes);
            }
            event = events.recv() => match event {
                LinkEvent::Core(event) => {
                    let effects = app.handle_core_event(&event);
                    execute(fleet, app, effects, &outcome_tx, &writes);
                }
                LinkEvent::Lagged => app.mark_stale(),
                LinkEvent::Closed => {
                    anyhow::bail!("the oino server went away; run `oino` again to start it anew")
                }
            },
            Some(outcome) = outcomes.recv() => app.handle_outcome(outcome),
            () = crate::time::sleep_until_opt(wakes.frame) => {}
            // Only elapsed times change: the pane stays as fetched.
            () = crate::time::sleep_until_opt(wakes.tick) => scheduler.schedule(),
            () = crate::time::sleep_until_opt(wakes.sample) => {}
        }
        // Panes that changed (a split, a close, another entry in one) resize their PTYs.
        let resizes = app.take_resizes();
        if !resizes.is_empty() {
            execute(fleet, app, resizes, &outcome_tx, &writes);
        }
    }
}

/// When the loop wakes up by itself.
struct Wakes {
    /// A frame is due.
    frame: Option<tokio::time::Instant>,
    /// An elapsed time or a notice on screen changes.
    tick: Option<tokio::time::Instant>,
    /// What running entries cost is to be sampled.
    sample: Option<tokio::time::Instant>,
}

impl Wakes {
    fn of(app: &App, scheduler: &FrameScheduler, usage: &UsageSampler) -> Self {
        let next_frame = scheduler
            .wake_at(Instant::now())
            .map(tokio::time::Instant::from_std);
        // Woken only when an elapsed time or a notice on screen changes.
        let next_tick = app
            .next_tick(now_ms())
            .map(|wait| tokio::time::Instant::now() + wait + CLOCK_SLACK);
        // While something runs, what it costs is sampled: at a clock tick when one comes soon
        // enough (the first minute of a call ticks each second), else on its own.
        let next_sample = app
            .any_running()
            .then(|| tokio::time::Instant::now() + usage.until_due(Instant::now()))
            .filter(|at| next_tick.is_none_or(|tick| tick > *at + SAMPLE_EVERY / 2));
        Self {
            frame: next_frame,
            tick: next_tick,
            sample: next_sample,
        }
    }
}

/// Fetches what the next frame shows and is stale: the entries, the pane.
async fn refresh(app: &mut App, fleet: &Fleet) {
    app.expire_notice();
    if app.entries_stale() {
        app.set_hosts(fleet.hosts());
        match fleet.entries().await {
            Ok(entries) => app.set_entries(entries),
            Err(err) => app.say(format!("cannot list the calls: {err:#}"), true),
        }
    }
    match app.pane_request() {
        Some(PaneRequest::Live { id, size }) => match fleet
            .ask_for_frame(&id, |key| ask::Snapshot {
                key,
                size: size.to_wire(),
            })
            .await
        {
            Ok(snapshot) => app.set_pane(Some((id, snapshot))),
            // The entry went (a server restarted): the list will say so.
            Err(_) => app.set_pane(None),
        },
        Some(PaneRequest::History {
            id,
            lines_back,
            size,
        }) => match fleet
            .ask_for_frame(&id, |key| ask::HistoryPage {
                key,
                lines_back,
                rows: usize::from(size.rows),
            })
            .await
        {
            Ok(page) => app.set_history(&page, size),
            Err(err) => app.say(format!("cannot read the history: {err:#}"), true),
        },
        None => {}
    }
    for (id, size) in app.split_requests() {
        // An entry that went is dropped from the split with the next list.
        let snapshot = fleet.ask_for_frame(&id, |key| ask::Snapshot {
            key,
            size: Some(size).to_wire(),
        });
        if let Ok(snapshot) = snapshot.await {
            app.set_split_pane(id, snapshot);
        }
    }
}

/// Sends writes to the processes in order, off the loop.
fn spawn_writer(
    fleet: Fleet,
    outcomes: mpsc::UnboundedSender<Outcome>,
) -> mpsc::Sender<(String, Vec<u8>)> {
    let (writes, mut queue) = mpsc::channel::<(String, Vec<u8>)>(WRITE_BUFFER);
    tokio::spawn(async move {
        while let Some((id, bytes)) = queue.recv().await {
            if let Err(err) = fleet.ask(&id, |key| ask::Send::bytes(&key, bytes)).await {
                let _ = outcomes.send(Outcome::Failed(format!("{err:#}")));
            }
        }
    });
    writes
}

/// The search's next match, from the current one when it is in view (else from the rows in
/// view), after it when `newer`, and the scroll that puts it in the middle of the pane (none
/// when no match was found that way).
async fn find_match(
    fleet: &Fleet,
    id: &str,
    query: &str,
    newer: bool,
    (scroll, rows): (usize, u16),
    current: Option<u64>,
) -> anyhow::Result<(Option<usize>, SearchHit)> {
    let rows = u64::from(rows);
    let page = fleet
        .ask_for_frame(id, |key| ask::HistoryPage {
            key,
            lines_back: scroll as u64,
            rows: 0,
        })
        .await?;
    let total = page.total_lines;
    // Lines in view: [bottom - rows, bottom).
    let bottom = total - page.lines_back;
    let top = bottom.saturating_sub(rows);
    let from = match (current, scroll, newer) {
        (Some(current), 1.., _) if (top..bottom).contains(&current) => current,
        (_, 0, false) => total,
        (_, _, false) => top,
        (_, _, true) => bottom.saturating_sub(1),
    };
    let hit = fleet
        .ask(id, |key| ask::FindLine {
            key,
            from,
            newer,
            query: query.to_owned(),
        })
        .await?;
    let Some(found) = hit.line else {
        return Ok((None, hit));
    };
    let bottom = (found + rows / 2 + 1).clamp(rows.min(total), total);
    let scroll = usize::try_from(total - bottom).unwrap_or(usize::MAX).max(1);
    Ok((Some(scroll), hit))
}

/// Tells the person that a task ended: the terminal's bell (when oino draws on a terminal), or
/// a desktop notice through `notify-send` (when it is there; nothing otherwise).
fn notify(how: crate::interface::app::settings::Notify, text: &str) {
    use std::io::IsTerminal;
    match how {
        crate::interface::app::settings::Notify::None => {}
        crate::interface::app::settings::Notify::Bell => {
            let mut stdout = std::io::stdout();
            if stdout.is_terminal() {
                let _ = stdout.write_all(b"\x07").and_then(|()| stdout.flush());
            }
        }
        crate::interface::app::settings::Notify::Desktop => {
            // Reaped by a thread of its own: a notifier that hangs holds nothing of oino's.
            if let Ok(mut child) = std::process::Command::new("notify-send")
                .args(["--app-name=oino", "oino", text])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
            {
                std::thread::spawn(move || child.wait());
            }
        }
    }
}

/// Carries out the app's effects; slow ones report back as outcomes.
fn execute(
    fleet: &Fleet,
    app: &App,
    effects: Vec<Effect>,
    outcomes: &mpsc::UnboundedSender<Outcome>,
    writes: &mpsc::Sender<(String, Vec<u8>)>,
) {
    for effect in effects {
        match effect {
            Effect::Notify { text } => notify(app.settings.notify, &text),
            Effect::Clipboard { text } => crate::interface::clipboard::copy(text, outcomes),
            Effect::Write { id, bytes } => {
                if writes.try_send((id, bytes)).is_err() {
                    let _ = outcomes.send(Outcome::Failed(
                        "the process is not reading its input: keys dropped".into(),
                    ));
                }
            }
            effect => {
                // Named as the list shows it, while the list still has it.
                let label = match &effect {
                    Effect::Kill { id } => app
                        .entries
                        .iter()
                        .find(|entry| entry.id == *id)
                        .map_or_else(|| id.clone(), |entry| entry.label().to_owned()),
                    _ => String::new(),
                };
                let (fleet, outcomes) = (fleet.clone(), outcomes.clone());
                tokio::spawn(async move {
                    if let Some(outcome) = carry_out(&fleet, effect, label).await {
                        let _ = outcomes.send(outcome);
                    }
                });
            }
        }
    }
}

/// Stops the project of `file` as its file says now: what was stopped.
async fn project_down(link: &crate::link::Link, file: &std::path::Path, name: &str) -> Outcome {
    let stopped = async {
        let project = crate::core::project::Project::load(file)?;
        anyhow::Ok(
            link.ask(ask::Down {
                project: project.clone().to_wire(),
                only: Vec::new(),
            })
            .await?,
        )
    };
    match stopped.await {
        Ok(stopped) if stopped.stopped.is_empty() => {
            Outcome::Done(format!("nothing of `{name}` was running"))
        }
        Ok(stopped) => Outcome::Done(format!("stopped `{name}`: {}", stopped.stopped.join(", "))),
        Err(err) => Outcome::Failed(format!("cannot stop `{name}`: {err:#}")),
    }
}

/// Starts the project of `file` again, or applies its changed file: what was done.
async fn project_up(link: &crate::link::Link, file: &std::path::Path, name: &str) -> Outcome {
    let applied = async {
        let project = crate::core::project::Project::load(file)?;
        let env = link.from_here(CallRequest::default())?.env;
        anyhow::Ok(
            link.ask(ask::Up {
                project: project.clone().to_wire(),
                env,
                only: Vec::new(),
            })
            .await?,
        )
    };
    match applied.await {
        Ok(applied) => {
            use crate::core::project::Did;
            let done: Vec<String> = applied
                .processes
                .iter()
                .filter(|process| !matches!(process.did, Did::Unchanged | Did::NotStarted))
                .map(|process| format!("{} {}", process.name, process.did.word()))
                .collect();
            if done.is_empty() {
                Outcome::Done(format!("`{name}` runs as its file says"))
            } else {
                Outcome::Done(format!("applied `{name}`: {}", done.join(", ")))
            }
        }
        Err(err) => Outcome::Failed(format!("cannot apply `{name}`: {err:#}")),
    }
}

/// Carries out an effect the core must act on; what it came to, when that is worth telling.
/// `label` names a killed entry.
async fn carry_out(fleet: &Fleet, effect: Effect, label: String) -> Option<Outcome> {
    let link = fleet.here();
    match effect {
        Effect::Start {
            command,
            size,
            host,
        } => {
            // Here, as typed in this shell: its folder, its environment.
            let request = CallRequest {
                size: Some(size),
                ..CallRequest::new(command.clone())
            };
            let started = fleet.start(host.as_deref(), request).await;
            // The call started is the one the person wants to see.
            Some(match started {
                Ok(entry) => Outcome::Select {
                    id: entry.id,
                    text: None,
                },
                Err(err) => Outcome::Failed(format!("cannot run `{command}`: {err:#}")),
            })
        }
        Effect::Detach { id, name } => Some(
            match fleet
                .ask(&id, |key| ask::Detach {
                    key,
                    name,
                    reason: Some(DETACH_REASON.to_owned()),
                })
                .await
            {
                Ok(task) => Outcome::Done(format!(
                    "detached `{}` as task {}",
                    task.label(),
                    task.task_id.as_deref().unwrap_or("?")
                )),
                Err(err) => Outcome::Failed(format!("cannot detach: {err:#}")),
            },
        ),
        Effect::ProjectDown { file, name } => Some(project_down(link, &file, &name).await),
        Effect::ProjectUp { file, name } => Some(project_up(link, &file, &name).await),
        Effect::Kill { id } => Some(match fleet.ask(&id, |key| ask::Kill { key }).await {
            Ok(killed) => Outcome::Done(format!("killed `{label}`{}", killed.and_the_rest())),
            Err(err) => Outcome::Failed(format!("cannot kill `{label}`: {err:#}")),
        }),
        Effect::Restart { id, label, size } => Some(
            match fleet
                .ask(&id, |key| ask::Restart {
                    key,
                    size: size.to_wire(),
                })
                .await
                .map(|entry| Fleet::qualified_as(&id, entry))
            {
                Ok(entry) => Outcome::Select {
                    text: Some(format!(
                        "restarted `{label}` as {}",
                        entry.task_id.as_deref().unwrap_or(&entry.id)
                    )),
                    id: entry.id,
                },
                Err(err) => Outcome::Failed(format!("cannot restart `{label}`: {err:#}")),
            },
        ),
        Effect::Resize { id, size } => {
            // An entry that has gone needs no size.
            let _ = fleet
                .ask(&id, |key| ask::Resize {
                    key,
                    size: size.to_wire(),
                })
                .await;
            None
        }
        Effect::Search {
            id,
            query,
            newer,
            scroll,
            rows,
            current,
        } => Some(
            match find_match(fleet, &id, &query, newer, (scroll, rows), current).await {
                Ok((Some(scroll), hit)) => Outcome::Found { query, scroll, hit },
                Ok((None, hit)) => Outcome::Failed(not_found_text(&query, hit, newer)),
                Err(err) => Outcome::Failed(format!("cannot search: {err:#}")),
            },
        ),
        // Done where they were asked for.
        Effect::Notify { .. } | Effect::Clipboard { .. } | Effect::Write { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_coalesced_to_one_an_interval_and_forced_ones_come_at_once() {
        let start = Instant::now();
        let interval = Duration::from_millis(16);
        let mut frames = FrameScheduler::new(interval);
        // The first frame is wanted and due at once.
        assert!(frames.due(start));
        frames.drawn(start);
        assert!(!frames.due(start + interval));
        assert_eq!(frames.wake_at(start), None);
        // Many asks within the interval make one frame, at its end.
        frames.schedule();
        frames.schedule();
        let soon = start + Duration::from_millis(5);
        assert!(!frames.due(soon));
        assert_eq!(frames.wake_at(soon), Some(start + interval));
        assert!(frames.due(start + interval));
        frames.drawn(start + interval);
        assert!(!frames.due(start + interval * 3));
        // A forced frame does not wait for the interval.
        frames.force();
        assert!(frames.due(start + interval + Duration::from_millis(1)));
        frames.drawn(start + interval + Duration::from_millis(1));
        assert!(!frames.due(start + interval * 4));
    }
}
