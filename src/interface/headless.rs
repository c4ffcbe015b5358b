//! Headless mode: the same interface and event loop on a test backend, driven by a script.
//!
//! The script is one command a line (`run`, `key`, `type`, `wait-for`, `wait-exit`, `resize`,
//! `snapshot`, `picture`, `freeze-clock`, `result`; `#` starts a comment). It plays the keyboard
//! and the waiters of the calls it runs: keys go into the loop's input channel, and after each
//! frame the loop publishes the screen's cells, on whose text `wait-for` waits.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tokio::sync::{mpsc, oneshot, watch};

use crate::core::CallRequest;
use crate::interface::app::{App, Input, parse_key};
use crate::interface::fleet::Fleet;
use crate::interface::ui::buffer_text;
use crate::link::Link;
use crate::pty::TermSize;
use crate::remote::protocol::Travel as _;
use crate::remote::protocol::requests as ask;

/// How long a wait lasts unless the line says otherwise.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// One line of a script.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `run [--id ID] [--title TITLE] COMMAND`: starts a call.
    Run {
        /// The call id; `None` for the core to make one.
        id: Option<String>,
        /// What the list calls it instead of its command.
        title: Option<String>,
        /// The command.
        command: String,
    },
    /// `key KEY`: presses a key.
    Key(KeyEvent),
    /// `type TEXT`: types the text, a key a character.
    Type(String),
    /// `wait-for TEXT`: waits until the screen shows the text.
    WaitFor {
        /// The text to wait for.
        text: String,
        /// How long to wait before the script fails (10 s unless `--timeout`).
        timeout: Duration,
    },
    /// Waits until a line of the screen matches a regular expression: for a condition that no
    /// one text shows (a number at least so large).
    WaitMatch {
        /// The regular expression.
        pattern: String,
        /// How long to wait before the script fails (10 s unless `--timeout`).
        timeout: Duration,
    },
    /// Start the processes of a project file, as `oino` does in its folder.
    Project(std::path::PathBuf),
    /// `wait-exit ID`: waits until a call or task ends.
    WaitExit {
        /// The entry: a call id, a task id (`t3`) or a task name.
        key: String,
        /// How long to wait before the script fails (10 s unless `--timeout`).
        timeout: Duration,
    },
    /// `resize COLSxROWS`: resizes the pretend terminal.
    Resize(TermSize),
    /// `snapshot`: prints the screen.
    Snapshot,
    /// `picture`: prints the screen as an SVG picture, colours included.
    Picture,
    /// `freeze-clock [MINUTES]`: elapsed times stand still from now on (what the script starts
    /// within half a minute shows MINUTES, 0 unless given), and cpu, memory and pids are no
    /// longer drawn, so that the same script draws the same screen every time.
    FreezeClock(u64),
    /// `result ID`: waits for a call's result and prints it.
    Result {
        /// The id of a call this script started.
        id: String,
    },
}

/// A script line that failed, and why.
#[derive(Debug, thiserror::Error)]
#[error("line {number}: `{line}`: {message}")]
pub(crate) struct ScriptError {
    pub number: usize,
    pub line: String,
    pub message: String,
}

/// Parses `COLSxROWS`.
pub(crate) fn parse_size(text: &str) -> Result<TermSize, String> {
    let (cols, rows) = text
        .split_once('x')
        .ok_or_else(|| format!("`{text}` is not a size: write COLSxROWS, like 120x40"))?;
    let parse = |part: &str, most: u16| {
        part.trim()
            .parse::<u16>()
            .ok()
            .filter(|n| (1..=most).contains(n))
            .ok_or_else(|| {
                format!(
                    "`{text}` is not a size: write COLSxROWS, each from 1 (up to {}x{}), like \
                     120x40",
                    TermSize::MAX.cols,
                    TermSize::MAX.rows
                )
            })
    };
    Ok(TermSize::new(
        parse(cols, TermSize::MAX.cols)?,
        parse(rows, TermSize::MAX.rows)?,
    ))
}

/// Splits `TEXT [--timeout SECS]`.
fn with_timeout(rest: &str) -> Result<(String, Duration), String> {
    match rest.rsplit_once(" --timeout ") {
        Some((text, seconds)) => {
            let seconds: f64 = seconds
                .trim()
                .parse()
                .map_err(|_| format!("--timeout `{seconds}` is not a number of seconds"))?;
            let timeout = Duration::try_from_secs_f64(seconds)
                .map_err(|_| format!("--timeout {seconds} is not a duration"))?;
            Ok((text.to_owned(), timeout))
        }
        None => Ok((rest.to_owned(), DEFAULT_WAIT)),
    }
}

/// Parses what follows `run`: `[--id ID] [--title TITLE] COMMAND`.
fn parse_run(rest: &str) -> Result<Command, String> {
    let (mut id, mut title) = (None, None);
    let mut rest = rest.trim();
    loop {
        // An option is a word of its own: `--title-less` is a command.
        let option_word = |name: &str| {
            rest.strip_prefix(name)
                .filter(|after| after.is_empty() || after.starts_with(char::is_whitespace))
        };
        let (option, after, slot) = if let Some(after) = option_word("--id") {
            ("--id ID", after, &mut id)
        } else if let Some(after) = option_word("--title") {
            ("--title TITLE", after, &mut title)
        } else {
            break;
        };
        let (value, command) = after
            .trim()
            .split_once(char::is_whitespace)
            .filter(|(value, _)| !value.is_empty())
            .ok_or_else(|| format!("`run {option}` needs a command"))?;
        *slot = Some(value.to_owned());
        rest = command.trim();
    }
    Ok(Command::Run {
        id,
        title,
        command: rest.to_owned(),
    })
}

/// Parses one line; `None` for a blank line or a comment.
pub(crate) fn parse_line(line: &str) -> Result<Option<Command>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let need = |what: &str| {
        if rest.is_empty() {
            Err(format!("`{word}` needs {what}"))
        } else {
            Ok(())
        }
    };
    let command = match word {
        "run" => {
            need("a command")?;
            parse_run(rest)?
        }
        "project" => {
            need("a project file (oino.toml, process-compose.yaml, mprocs.yaml or Procfile)")?;
            Command::Project(rest.into())
        }
        "key" => {
            need("a key name")?;
            Command::Key(parse_key(rest)?)
        }
        "type" => {
            need("text")?;
            Command::Type(rest.to_owned())
        }
        "wait-for" => {
            need("text to wait for")?;
            let (text, timeout) = with_timeout(rest)?;
            Command::WaitFor { text, timeout }
        }
        "wait-match" => {
            need("a regular expression to wait for")?;
            let (pattern, timeout) = with_timeout(rest)?;
            regex::Regex::new(&pattern)
                .map_err(|err| format!("not a regular expression: {err}"))?;
            Command::WaitMatch { pattern, timeout }
        }
        "wait-exit" => {
            need("a call id, task id or name")?;
            let (key, timeout) = with_timeout(rest)?;
            Command::WaitExit { key, timeout }
        }
        "resize" => {
            need("a size")?;
            Command::Resize(parse_size(rest)?)
        }
        "snapshot" => Command::Snapshot,
        "picture" => Command::Picture,
        "freeze-clock" if rest.is_empty() => Command::FreezeClock(0),
        "freeze-clock" => Command::FreezeClock(
            rest.parse()
                .map_err(|_| format!("`freeze-clock {rest}`: give a whole number of minutes"))?,
        ),
        "result" => {
            need("a call id")?;
            Command::Result {
                id: rest.to_owned(),
            }
        }
        other => {
            return Err(format!(
                "unknown command `{other}`: use run, project, key, type, wait-for, wait-match, \
                 wait-exit, resize, snapshot, picture, freeze-clock or result"
            ));
        }
    };
    Ok(Some(command))
}

/// Runs a script against the interface of size `size`, printing to `out`.
pub async fn run(
    size: TermSize,
    script: String,
    fleet: Fleet,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<()> {
    // Every line is checked before anything runs.
    let mut commands = Vec::new();
    for (index, line) in script.lines().enumerate() {
        match parse_line(line) {
            Ok(Some(command)) => commands.push((index + 1, line.trim().to_owned(), command)),
            Ok(None) => {}
            Err(message) => {
                return Err(ScriptError {
                    number: index + 1,
                    line: line.trim().to_owned(),
                    message,
                }
                .into());
            }
        }
    }

    let mut terminal = Terminal::new(TestBackend::new(size.cols, size.rows))
        .context("creating the test backend")?;
    let mut app = App::new((size.cols, size.rows), !crate::interface::ui::no_color());
    // The same settings as the interface; a mistake in them fails the script.
    app.configure(crate::interface::app::settings::Config::load()?);
    let (input_tx, mut inputs) = mpsc::channel(64);
    let (frames_tx, frames) = watch::channel(Buffer::empty(Rect::default()));

    let (printed_tx, mut printed) = mpsc::unbounded_channel::<String>();
    let player = tokio::spawn(play(
        fleet.here().clone(),
        size,
        commands,
        input_tx,
        frames,
        printed_tx,
    ));
    let looped = crate::interface::event_loop::run_loop(
        &mut terminal,
        &mut app,
        &fleet,
        &mut inputs,
        Some(&frames_tx),
    )
    .await;
    let script_outcome = player.await.context("the script stopped")?;
    while let Ok(text) = printed.try_recv() {
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    fleet.close().await;
    looped?;
    script_outcome.map_err(Into::into)
}

/// Plays the commands; the interface stops when this returns (its input channel closes).
async fn play(
    link: Link,
    size: TermSize,
    commands: Vec<(usize, String, Command)>,
    inputs: mpsc::Sender<Input>,
    frames: watch::Receiver<Buffer>,
    output: mpsc::UnboundedSender<String>,
) -> Result<(), ScriptError> {
    let mut player = Player {
        link,
        size,
        inputs,
        frames,
        output,
        calls: HashMap::new(),
    };
    for (number, line, command) in commands {
        player.step(command).await.map_err(|message| ScriptError {
            number,
            line,
            message,
        })?;
    }
    Ok(())
}

/// The script's side: the keyboard, and the waiter of the calls it runs.
struct Player {
    link: Link,
    size: TermSize,
    inputs: mpsc::Sender<Input>,
    frames: watch::Receiver<Buffer>,
    output: mpsc::UnboundedSender<String>,
    calls: HashMap<String, crate::link::RunResult>,
}

const QUIT: &str = "the interface has quit";

impl Player {
    async fn send(&self, input: Input) -> Result<(), String> {
        self.inputs.send(input).await.map_err(|_| QUIT.to_owned())
    }

    async fn step(&mut self, command: Command) -> Result<(), String> {
        match command {
            Command::Run { id, title, command } => self.start_call(id, title, command).await?,
            Command::Project(file) => self.start_project(&file).await?,
            Command::Key(key) => self.send(Input::Key(key)).await?,
            Command::Type(text) => {
                for c in text.chars() {
                    let key = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
                    self.send(Input::Key(key)).await?;
                }
            }
            Command::WaitFor { text, timeout } => {
                self.wait_for(&format!("`{text}`"), timeout, |frame| frame.contains(&text))
                    .await?;
            }
            Command::WaitMatch { pattern, timeout } => {
                let pattern = regex::Regex::new(&pattern).map_err(|err| err.to_string())?;
                self.wait_for(&format!("a line matching `{pattern}`"), timeout, |frame| {
                    frame.lines().any(|line| pattern.is_match(line))
                })
                .await?;
            }
            Command::WaitExit { key, timeout } => {
                let state = self
                    .link
                    .ask(ask::Wait {
                        key: String::from(&key),
                        timeout_ms: Some(crate::time::millis(timeout)),
                    })
                    .await
                    .map_err(|err| format!("{err:#}"))?;
                if state.is_running() {
                    return Err(format!("still running after {} s", timeout.as_secs_f64()));
                }
            }
            Command::Resize(size) => {
                self.size = size;
                self.send(Input::Resize {
                    cols: size.cols,
                    rows: size.rows,
                })
                .await?;
            }
            Command::Snapshot => {
                let frame = self.drawn().await?;
                self.print("snapshot", &buffer_text(&frame));
            }
            Command::Picture => {
                let frame = self.drawn().await?;
                self.print("picture", &crate::interface::picture::svg(&frame));
            }
            Command::FreezeClock(minutes) => {
                self.send(Input::FreezeClock(minutes.saturating_mul(60_000)))
                    .await?;
            }
            Command::Result { id } => self.print_result(&id).await?,
        }
        Ok(())
    }

    /// Starts a call as the interface does, and keeps its result for a later `result`.
    async fn start_call(
        &mut self,
        id: Option<String>,
        title: Option<String>,
        command: String,
    ) -> Result<(), String> {
        // Started at the pane's size, as the interface starts its own calls.
        let pane = crate::interface::app::Layout::new(self.size.cols, self.size.rows, false, None)
            .map(|layout| layout.pane_size());
        let request = self
            .link
            .from_here(CallRequest {
                id,
                title,
                size: pane,
                ..CallRequest::new(command)
            })
            .map_err(|err| err.to_string())?;
        let (id, result) = self
            .link
            .run(request)
            .await
            .map_err(|err| format!("{err:#}"))?;
        self.calls.insert(id, result);
        Ok(())
    }

    /// Starts the processes of a project file, with this process's environment.
    async fn start_project(&self, file: &std::path::Path) -> Result<(), String> {
        let project = crate::core::project::Project::load(file).map_err(|err| err.to_string())?;
        let env = self
            .link
            .from_here(CallRequest::default())
            .map_err(|err| err.to_string())?
            .env;
        self.link
            .ask(ask::Project {
                project: project.clone().to_wire(),
                env,
                only: (None).map(str::to_owned),
            })
            .await
            .map_err(|err| format!("{err:#}"))?;
        Ok(())
    }

    /// The frame drawn after every input sent so far.
    async fn drawn(&mut self) -> Result<Buffer, String> {
        let (drawn_tx, drawn) = oneshot::channel();
        self.send(Input::Barrier(drawn_tx)).await?;
        drawn.await.map_err(|_| QUIT.to_owned())?;
        Ok(self.frames.borrow_and_update().clone())
    }

    /// Prints `text` between `=== WHAT ===` and `=== end ===`.
    fn print(&self, what: &str, text: &str) {
        let _ = self
            .output
            .send(format!("=== {what} ===\n{text}=== end ===\n"));
    }

    /// Waits for a call this script started and prints its result.
    async fn print_result(&mut self, id: &str) -> Result<(), String> {
        let handle = self
            .calls
            .remove(id)
            .ok_or_else(|| format!("no call `{id}` was started by this script"))?;
        let result = handle
            .await
            .map_err(|err| err.to_string())?
            .map_err(|err| format!("{err:#}"))?;
        let _ = self.output.send(format!(
            "=== result {id} (is_error: {}) ===\n{}\n=== end ===\n",
            result.is_error, result.text
        ));
        Ok(())
    }

    /// Waits until a frame `shows` what is awaited (`what`, in words for the error).
    async fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        shows: impl Fn(&str) -> bool,
    ) -> Result<(), String> {
        let waited = tokio::time::timeout(timeout, async {
            self.frames
                .wait_for(|frame| shows(&buffer_text(frame)))
                .await
                .map(drop)
        })
        .await;
        match waited {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(QUIT.to_owned()),
            Err(_) => Err(format!(
                "{what} did not show within {} s; the screen was:\n{}",
                timeout.as_secs_f64(),
                buffer_text(&self.frames.borrow())
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_into_commands() {
        assert_eq!(parse_line("  # a comment"), Ok(None));
        assert_eq!(
            parse_line("run --id web npm run dev"),
            Ok(Some(Command::Run {
                id: Some("web".into()),
                title: None,
                command: "npm run dev".into()
            }))
        );
        assert_eq!(
            parse_line("run --title web --id w1 npm run dev"),
            Ok(Some(Command::Run {
                id: Some("w1".into()),
                title: Some("web".into()),
                command: "npm run dev".into()
            }))
        );
        assert_eq!(
            parse_line("run --title-less"),
            Ok(Some(Command::Run {
                id: None,
                title: None,
                command: "--title-less".into()
            }))
        );
        assert!(parse_line("run --id web").is_err());
        assert!(parse_line("picture").is_ok_and(|c| c == Some(Command::Picture)));
        assert_eq!(
            parse_line("freeze-clock"),
            Ok(Some(Command::FreezeClock(0)))
        );
        assert_eq!(
            parse_line("freeze-clock 12"),
            Ok(Some(Command::FreezeClock(12)))
        );
        assert!(parse_line("freeze-clock 12m").is_err_and(|err| err.contains("whole number")));
        assert_eq!(
            parse_line("wait-for ready on port 80 --timeout 2.5"),
            Ok(Some(Command::WaitFor {
                text: "ready on port 80".into(),
                timeout: Duration::from_millis(2500)
            }))
        );
        assert_eq!(
            parse_line("key ctrl-a"),
            Ok(Some(Command::Key(KeyEvent::new(
                KeyCode::Char('a'),
                KeyModifiers::CONTROL
            ))))
        );
        assert_eq!(
            parse_line("key G"),
            Ok(Some(Command::Key(KeyEvent::new(
                KeyCode::Char('G'),
                KeyModifiers::SHIFT
            ))))
        );
        assert_eq!(
            parse_line("resize 100x30"),
            Ok(Some(Command::Resize(TermSize::new(100, 30))))
        );
        assert!(parse_line("resize big").is_err());
        assert!(parse_line("key hyper-q").is_err());
        assert!(parse_line("dance").is_err());
        assert!(parse_line("wait-for").is_err());
    }
}
