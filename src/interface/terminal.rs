//! The interface on a real terminal: the guard that puts the terminal back however oino ends,
//! the thread that reads keys, the signals that stop it, and [`run`], which starts it all around
//! the shared [`run_loop`].

use std::io::{IsTerminal, Stdout, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event, KeyEvent,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc;

use crate::core::CallRequest;
use crate::interface::app::{App, Input, Running};
use crate::interface::event_loop::run_loop;
use crate::interface::fleet::Fleet;
use crate::interface::ui::no_color;
use crate::link::Link;
use crate::remote::protocol::requests as ask;

/// How often the input thread looks up from the terminal to see whether to stop: seldom, as
/// every look costs an idle interface a wakeup.
const INPUT_POLL: Duration = Duration::from_secs(2);
/// Input events buffered between the input thread and the loop.
const INPUT_BUFFER: usize = 256;

/// Puts the terminal in raw mode on the alternate screen; puts it back on drop and on panic.
pub(crate) struct TerminalGuard {
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
    pub fn enter(mouse: bool) -> anyhow::Result<Self> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        // crossterm drops every color under NO_COLOR, the programs' own too; but NO_COLOR is about
        // what oino adds, and the theme leaves that out already.
        crossterm::style::force_color_output(true);
        enable_raw_mode().context("putting the terminal in raw mode")?;
        let guard = Self { _private: () };
        crossterm::execute!(
            std::io::stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste
        )
        .context("setting up the terminal")?;
        // Off in the settings: the terminal's own selection works.
        if mouse {
            crossterm::execute!(std::io::stdout(), EnableMouseCapture)
                .context("setting up the terminal")?;
        }
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

/// Sends `Input::Stop` on SIGTERM, SIGHUP, SIGINT or SIGQUIT (in raw mode Ctrl-C is a key: these
/// come from `kill`), so that the terminal is put back whichever ends oino.
fn forward_stop_signals(inputs: mpsc::Sender<Input>) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut quit = signal(SignalKind::quit())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
            _ = interrupt.recv() => {}
            _ = quit.recv() => {}
        }
        let _ = inputs.send(Input::Stop).await;
    });
    Ok(())
}

/// The full-screen interface on this terminal, on `fleet`, with `commands` (title, command)
/// started as calls on `commands_on` (else on this machine), and `greeting` said first.
pub async fn run(
    fleet: Fleet,
    commands: Vec<(Option<String>, String)>,
    commands_on: Option<Link>,
    greeting: Option<String>,
) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the interface needs a terminal: run oino in one, or use `oino run -- COMMAND` or \
             `oino headless`"
        );
    }
    let (cols, rows) = crossterm::terminal::size().context("reading the terminal size")?;
    let mut app = App::new((cols, rows), !no_color());
    // A mistake in the settings: the defaults, and the mistake shown.
    match crate::interface::app::settings::Config::load() {
        Ok(config) => {
            app.configure(config);
            if let Some(greeting) = greeting {
                app.say(greeting, false);
            }
        }
        Err(err) => app.say(format!("settings not used: {err}"), true),
    }
    // This shell's folder and environment, read once for all of them.
    let link = commands_on.as_ref().unwrap_or(fleet.here());
    let here = link.from_here(CallRequest {
        size: app.pane_size(),
        ..CallRequest::default()
    })?;
    for (title, command) in commands {
        link.ask(ask::Start::from_call(CallRequest {
            command,
            title,
            ..here.clone()
        }))
        .await?;
    }
    // A far host's link of their own is let go: the fleet has its own.
    drop(commands_on);

    run_app(&fleet, &mut app).await?;
    // Nothing ended: say what goes on, on the terminal as it is again.
    if app.processes_outlive {
        if let Some(line) = Running::of(&app.entries).left_running_line() {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    }
    Ok(())
}

/// The size of the terminal on standard output, if it has one.
#[must_use]
pub fn size() -> Option<crate::pty::TermSize> {
    let (cols, rows) = crossterm::terminal::size().ok()?;
    Some(crate::pty::TermSize::new(cols, rows))
}

/// Draws `app` on this terminal until it quits; then the terminal is as it was.
async fn run_app(fleet: &Fleet, app: &mut App) -> anyhow::Result<()> {
    let guard = TerminalGuard::enter(app.wants_mouse() != crate::screen::MouseEvents::None)?;
    let outcome = async {
        let mut terminal: Terminal<CrosstermBackend<Stdout>> =
            Terminal::new(CrosstermBackend::new(std::io::stdout()))
                .context("opening the terminal")?;
        let (input_tx, mut inputs) = mpsc::channel(INPUT_BUFFER);
        let stop = Arc::new(AtomicBool::new(false));
        spawn_input_thread(input_tx.clone(), Arc::clone(&stop))?;
        forward_stop_signals(input_tx)?;
        let result = run_loop(&mut terminal, app, fleet, &mut inputs, None).await;
        stop.store(true, Ordering::Relaxed);
        result
    }
    .await;
    drop(guard);
    // An interface of its own ends its processes; a server keeps them.
    fleet.close().await;
    outcome
}

/// `oino attach`: this terminal onto the running entry `key` (the screen it shows, then its
/// output live; every key but `detach_key` goes to it) until the detach key or its end. Says
/// which on standard error afterwards.
pub async fn attach(
    link: Link,
    key: &str,
    detach_key: KeyEvent,
    detach_label: &str,
) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("attach needs a terminal: run it in one (`oino screen ID` prints a screen)");
    }
    let entry = link
        .ask(ask::Entry {
            key: String::from(key),
        })
        .await?;
    if !entry.state.is_running() {
        anyhow::bail!(
            "`{key}` has ended ({}): there is nothing to attach to; `oino logs {key}` shows its \
             output",
            entry.state
        );
    }
    let (cols, rows) = crossterm::terminal::size().context("reading the terminal size")?;
    let mut app = App::new((cols, rows), !no_color());
    if let Ok(config) = crate::interface::app::settings::Config::load() {
        app.configure(config);
    }
    app.attach(entry.id.clone(), detach_key, detach_label.to_owned());
    run_app(&Fleet::single(link), &mut app).await?;
    let label = entry.task_id.as_deref().unwrap_or(&entry.id);
    let said = match app.attached.and_then(|attached| attached.ended) {
        Some(state) => format!("`{}` {state}", entry.label()),
        None => format!(
            "detached from `{}`: it keeps running (`oino attach {label}` comes back to it)",
            entry.label()
        ),
    };
    let _ = writeln!(std::io::stderr(), "{said}");
    Ok(())
}
