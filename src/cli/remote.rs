//! The commands that talk to the oino server: `server`, `run` through it, `ls`, `detach`,
//! `logs`, `screen`, `wait`, `kill`, `send`, `kill-server`.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use super::{ServerChoice, exit_byte, print_raw, said};
use crate::core::EntryInfo;
use crate::core::project::{ProcessPhase, ProjectMark};
use crate::inert::escaped;
use crate::link::Link;
use crate::remote::client::Client;
use crate::remote::protocol::{Travel, requests as ask};

#[derive(Debug, Args)]
#[command(
    after_help = "A server started in the background (by a client, or without \
                  --foreground) logs to server-NAME-HASH.log in the state folder \
                  ($XDG_STATE_HOME/oino, else ~/.local/state/oino): NAME is the socket's name \
                  (the session), HASH tells sockets of one name in different folders apart. \
                  `oino server` prints the path."
)]
pub struct ServerArgs {
    #[command(flatten)]
    pub server: ServerChoice,
    /// Stay attached to this terminal, logging to standard error.
    #[arg(long)]
    pub foreground: bool,
    /// Started by a client: leave the terminal's session.
    #[arg(long, hide = true)]
    pub detached: bool,
    /// End after this many seconds with no process and no client.
    #[arg(long, value_name = "SECS", default_value_t = crate::remote::server::DEFAULT_IDLE_EXIT.as_secs())]
    pub idle_exit: u64,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    #[command(flatten)]
    pub server: ServerChoice,
    /// Earlier runs of projects' processes too (each restart is a run).
    #[arg(long)]
    pub all: bool,
    /// Print JSON, for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DetachArgs {
    /// The call's id.
    #[arg(add = super::complete::entries())]
    pub id: String,
    /// The task's name (default: made from the command).
    #[arg(long)]
    pub name: Option<String>,
    /// Why, as the call's waiter will read it.
    #[arg(long)]
    pub reason: Option<String>,
    #[command(flatten)]
    pub server: ServerChoice,
    /// Print JSON, for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// A call id, task id or task name.
    #[arg(add = super::complete::entries())]
    pub id: String,
    /// Of a project's process: its run N (1 is its first; `oino ls --all` lists them).
    #[arg(long, value_name = "N")]
    pub run: Option<u32>,
    /// Keep printing until it ends.
    #[arg(short, long)]
    pub follow: bool,
    /// Start at this raw offset (default: the start; a task's own output for a task, `--since 0`
    /// for all of it).
    #[arg(long, value_name = "OFFSET")]
    pub since: Option<u64>,
    #[command(flatten)]
    pub server: ServerChoice,
    /// Print JSON, for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// A call id, task id or task name.
    #[arg(add = super::complete::entries())]
    pub id: String,
    /// Give up after SECS seconds (exit 124).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub server: ServerChoice,
    /// Print JSON, for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ScreenArgs {
    /// A call id, task id or task name.
    #[arg(add = super::complete::entries())]
    pub id: String,
    /// Keep colors and attributes (SGR sequences).
    #[arg(long, conflicts_with = "json")]
    pub ansi: bool,
    #[command(flatten)]
    pub server: ServerChoice,
    /// Print JSON: size, lines, cursor, alternate screen.
    #[arg(long)]
    pub json: bool,
}

/// Calls or tasks, named.
#[derive(Debug, Args)]
pub struct EntriesArgs {
    /// Call ids, task ids or task names.
    #[arg(required = true, value_name = "ID", add = super::complete::entries())]
    pub ids: Vec<String>,
    /// The server they run on.
    #[command(flatten)]
    pub server: ServerChoice,
    /// Print JSON: a value for each id, in order.
    #[arg(long)]
    pub json: bool,
}

/// One call or task, named.
#[derive(Debug, Args)]
pub struct EntryArgs {
    /// A call id, task id or task name.
    #[arg(add = super::complete::entries())]
    pub id: String,
    #[command(flatten)]
    pub server: ServerChoice,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// A call id, task id or task name.
    #[arg(add = super::complete::entries())]
    pub id: String,
    /// The text to type.
    pub text: String,
    /// Press Enter after it.
    #[arg(long)]
    pub enter: bool,
    #[command(flatten)]
    pub server: ServerChoice,
    /// Print JSON, for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct KillServerArgs {
    #[command(flatten)]
    pub server: ServerChoice,
    /// Print JSON, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// The commands that talk to the server.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Host the calls and tasks, so that they outlive any window (started by clients as needed).
    Server(ServerArgs),
    /// List the server's calls and tasks.
    Ls(LsArgs),
    /// Detach a running call into a background task.
    Detach(DetachArgs),
    /// Print a call's or task's output.
    Logs(LogsArgs),
    /// Print what a call's or task's screen shows now (a prompt, a summary, a full-screen program).
    Screen(ScreenArgs),
    /// Wait until a call or task ends.
    Wait(WaitArgs),
    /// Kill calls or tasks and all their processes.
    Kill(EntriesArgs),
    /// Run calls' or tasks' commands again, each as a new call in the same folder and
    /// environment (ending it first if it still runs); prints the new ids.
    Restart(EntriesArgs),
    /// Type text into a call or task.
    Send(SendArgs),
    /// End every call and task, then the server.
    KillServer(KillServerArgs),
    /// Carry the protocol between standard input and output and this user's server (started
    /// if needed): what `--host` runs on the far side, over ssh.
    Proxy(ProxyArgs),
    /// Keep links through a transport ready for the commands that reach its far side (started
    /// by them when `link_persist` is set).
    #[command(hide = true)]
    KeepLink(KeepLinkArgs),
}

#[derive(Debug, Args)]
pub struct KeepLinkArgs {
    /// Seconds to keep a link ready after the last one was taken.
    #[arg(long, value_name = "SECS")]
    pub persist: u64,
    /// The links' identity, as the commands that take them compute it.
    #[arg(long, value_name = "HEX")]
    pub identity: String,
    /// The transport: a program and its arguments.
    #[arg(last = true, required = true)]
    pub transport: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ProxyArgs {
    #[command(flatten)]
    pub server: ServerChoice,
}

/// Runs a command that talks to the server.
pub async fn main(command: Command) -> ExitCode {
    let outcome = match command {
        Command::Server(args) => server(&args).await,
        Command::Ls(args) => ls(&args).await,
        Command::Detach(args) => detach(args).await,
        Command::Logs(args) => logs(args).await,
        Command::Screen(args) => screen(&args).await,
        Command::Wait(args) => wait(args).await,
        Command::Kill(args) => kill(args).await,
        Command::Restart(args) => restart(args).await,
        Command::Send(args) => send(args).await,
        Command::KillServer(args) => kill_server(&args).await,
        Command::Proxy(args) => proxy(&args).await,
        Command::KeepLink(args) => {
            let persist = Duration::from_secs(args.persist);
            crate::remote::ready::keep(args.transport, args.identity, persist)
                .await
                .map(|()| ExitCode::SUCCESS)
        }
    };
    outcome.unwrap_or_else(|err| crate::cli::report("oino", &err))
}

pub(super) fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut text = crate::inert::json(serde_json::to_string_pretty(value)?);
    text.push('\n');
    Ok(print_raw(&text)?)
}

async fn proxy(args: &ProxyArgs) -> anyhow::Result<ExitCode> {
    if !args.server.is_here() {
        anyhow::bail!(
            "oino proxy serves this machine's server: --host and --via belong to the client \
             on the other side"
        );
    }
    crate::remote::proxy::carry(&args.server.path()).await?;
    Ok(ExitCode::SUCCESS)
}

async fn server(args: &ServerArgs) -> anyhow::Result<ExitCode> {
    let socket = args.server.path();
    if !args.foreground {
        // Started and left running in the background; this command ends once it answers.
        let address = args.server.address()?;
        Client::connect_or_start(&address).await?;
        match &address {
            crate::remote::address::Address::Socket(socket) => print_raw(&format!(
                "oino server on {} (log: {})\n",
                socket.display(),
                crate::remote::socket::server_log(socket).display()
            ))?,
            crate::remote::address::Address::Through(_) => {
                print_raw(&format!(
                    "oino server on {}\n",
                    escaped(&address.to_string())
                ))?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.server.is_here() {
        anyhow::bail!(
            "oino server --foreground serves this machine: --host and --via reach another"
        );
    }
    if args.detached {
        // Leave the session of the terminal that started the client. It fails only for a
        // group leader, which a process spawned by a client is not.
        let _ = nix::unistd::setsid();
    }
    let config = crate::cli::core_config();
    let served =
        crate::remote::server::serve(&socket, Duration::from_secs(args.idle_exit), config).await?;
    if let crate::remote::server::Served::AlreadyRunning { holder } = served {
        say!(
            "oino server: another server{} holds {}: it serves {}",
            holder
                .map(|pid| format!(" (pid {pid})"))
                .unwrap_or_default(),
            crate::remote::socket::lock_path(&socket).display(),
            socket.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn ls(args: &LsArgs) -> anyhow::Result<ExitCode> {
    let client = Client::connect_or_start(&args.server.address()?).await?;
    let mut entries = client.ask(ask::List {}).await?;
    if !args.all {
        entries.retain(|entry| entry.project.as_ref().is_none_or(|mark| mark.latest));
    }
    if args.json {
        print_json(&entries.to_wire())?;
        return Ok(ExitCode::SUCCESS);
    }
    if entries.is_empty() {
        // An interface of its own (the demo, --embedded) hosts its calls: a second window
        // finds none here, and is told why.
        say!(
            "oino ls: no calls or tasks on the server at {}; calls of `oino --embedded` and of \
             the demo live in their own window",
            client.address()
        );
        return Ok(ExitCode::SUCCESS);
    }
    print_raw(&ls_table(&entries))?;
    Ok(ExitCode::SUCCESS)
}

/// The longest name `ls` shows whole; a longer one ends with `…`.
const LS_NAME_COLUMNS: usize = 24;

/// `ls`'s table: columns as wide as what they hold (counted in terminal columns: a wide name
/// takes two a character), a name cut past [`LS_NAME_COLUMNS`], ids whole; then its notes.
fn ls_table(entries: &[EntryInfo]) -> String {
    use crate::interface::fit::{columns, cut};
    let now = crate::time::now_ms();
    // Names and commands are shown, never carried out: `\e]52;…` in a command must not reach
    // the clipboard of whoever lists it.
    let rows: Vec<[String; 7]> = entries
        .iter()
        .map(|entry| {
            let name = entry
                .name
                .as_deref()
                .or(entry.title.as_deref())
                .unwrap_or("-");
            let elapsed = crate::time::format_elapsed(crate::time::shown_elapsed_ms(
                entry.started_ms,
                entry.ended_ms.unwrap_or(now),
            ));
            [
                escaped(&entry.id).into_owned(),
                escaped(entry.task_id.as_deref().unwrap_or("-")).into_owned(),
                cut(&escaped(name), LS_NAME_COLUMNS),
                shown_state(entry),
                entry.pid.to_string(),
                elapsed,
                escaped(&entry.command).into_owned(),
            ]
        })
        .collect();
    let header = ["ID", "TASK", "NAME", "STATE", "PID", "TIME", "COMMAND"].map(str::to_owned);
    // As wide as they always were, wider for what does not fit.
    let least = [14, 5, 18, 12, 7, 7];
    let widths: Vec<usize> = (0..6)
        .map(|column| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|row| columns(&row[column]))
                .fold(least[column], usize::max)
        })
        .collect();
    let line = |row: &[String; 7], out: &mut String| {
        for (column, cell) in row.iter().enumerate().take(6) {
            let pad = " ".repeat(widths[column].saturating_sub(columns(cell)));
            // PID and TIME to the right, the rest to the left.
            if column >= 4 {
                let _ = write!(out, "{pad}{cell} ");
            } else {
                let _ = write!(out, "{cell}{pad} ");
            }
        }
        let _ = writeln!(out, " {}", row[6]);
    };
    let mut out = String::new();
    line(&header, &mut out);
    let mut project = None;
    for (entry, row) in entries.iter().zip(&rows) {
        let mark = entry.project.as_ref();
        if mark.map(|mark| &mark.project) != project {
            project = mark.map(|mark| &mark.project);
            if let Some(name) = project {
                let _ = writeln!(out, "[{}]", escaped(name));
            }
        }
        line(row, &mut out);
    }
    ls_notes(entries, &mut out);
    out
}

/// What `ls` says under its table: why a project's process waits, what waits for input, whose
/// log could not be written or was cut.
fn ls_notes(entries: &[EntryInfo], out: &mut String) {
    for entry in entries {
        if let Some(line) = entry.project.as_ref().and_then(phase_line) {
            let _ = writeln!(out, "{}", escaped(&line));
        }
    }
    for entry in entries {
        if let (Some(prompt), true) = (&entry.waiting_for_input, entry.state.is_running()) {
            let key = entry.task_id.as_deref().unwrap_or(&entry.id);
            let (key, prompt) = (escaped(key), escaped(prompt));
            let _ = writeln!(
                out,
                "? {key} waits for input: {prompt} (answer with `oino send {key} TEXT --enter`)"
            );
        }
    }
    for entry in entries {
        let id = escaped(&entry.id);
        if let Some(error) = &entry.log_error {
            let error = escaped(error);
            let _ = writeln!(out, "! {id}: its log could not be written: {error}");
        } else if let Some(cut) = &entry.log_cut {
            let _ = writeln!(out, "~ {id}: {cut}");
        }
    }
}

/// The call id of run `run` of the project process `name`.
async fn run_of(link: &Link, name: &str, run: u32) -> anyhow::Result<String> {
    let entries = link.ask(ask::List {}).await?;
    let runs: Vec<&EntryInfo> = entries
        .iter()
        .filter(|entry| {
            entry
                .project
                .as_ref()
                .is_some_and(|mark| mark.process == name && mark.run > 0)
        })
        .collect();
    if let Some(entry) = runs
        .iter()
        .find(|entry| entry.project.as_ref().is_some_and(|mark| mark.run == run))
    {
        return Ok(entry.id.clone());
    }
    let known: Vec<String> = runs
        .iter()
        .filter_map(|entry| entry.project.as_ref().map(|mark| mark.run.to_string()))
        .collect();
    anyhow::bail!(if known.is_empty() {
        format!("`{name}` is no project process with runs here (`oino ls` lists them)")
    } else {
        format!(
            "`{name}` has no run {run}: its runs kept are {} (`oino ls --all`)",
            known.join(", ")
        )
    })
}

/// The state `ls` shows: `input?` while it waits for someone, a project's process's phase, and
/// its restarts.
fn shown_state(entry: &EntryInfo) -> String {
    let mark = entry.project.as_ref();
    let state = if entry.state.is_running() && entry.waiting_for_input.is_some() {
        "input?".to_owned()
    } else if let Some(phase) = mark.and_then(|mark| mark.phase.as_ref()) {
        phase_word(phase).to_owned()
    } else {
        format!("{:#}", entry.state)
    };
    match mark {
        Some(mark) if mark.restarts > 0 => format!("{state} ↻{}", mark.restarts),
        _ => state,
    }
}

/// The word `ls` shows for a project's process that says more than its run's state.
fn phase_word(phase: &ProcessPhase) -> &'static str {
    match phase {
        ProcessPhase::Waiting { .. } => "waiting",
        ProcessPhase::Blocked { .. } => "blocked",
        ProcessPhase::Restarting { .. } => "restarting",
        ProcessPhase::GaveUp => "gave up",
        ProcessPhase::Changed { .. } => "changed",
    }
}

/// The line under `ls`'s table that says why a project's process waits, cannot start, is
/// restarting, gave up or changed.
fn phase_line(mark: &ProjectMark) -> Option<String> {
    let name = &mark.process;
    Some(match mark.phase.as_ref()? {
        ProcessPhase::Waiting { waiting_for } => {
            format!("… {name} waits for {}", waiting_for.join(", "))
        }
        ProcessPhase::Blocked { reason } => format!("⊘ {name} is blocked: {reason}"),
        ProcessPhase::Restarting { backoff_left_ms } => format!(
            "↻ {name} starts again in {}",
            crate::time::format_wait(*backoff_left_ms)
        ),
        ProcessPhase::GaveUp => format!(
            "✗ {name} gave up after {} restarts (`oino restart {name}` starts it again)",
            mark.restarts
        ),
        ProcessPhase::Changed { change } => {
            format!("◈ {name}: its {change} changed in the file (`oino up` applies it)")
        }
    })
}

async fn detach(args: DetachArgs) -> anyhow::Result<ExitCode> {
    let client = Client::connect(&args.server.address()?).await?;
    let task = client
        .ask(ask::Detach {
            key: args.id,
            name: args.name,
            reason: args.reason,
        })
        .await?;
    if args.json {
        print_json(&task.clone().to_wire())?;
    } else {
        print_raw(&format!(
            "{} {}\n",
            escaped(task.task_id.as_deref().unwrap_or("?")),
            escaped(task.name.as_deref().unwrap_or("?"))
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn logs(mut args: LogsArgs) -> anyhow::Result<ExitCode> {
    let link = Link::connect(&args.server.address()?).await?;
    if let Some(run) = args.run {
        args.id = run_of(&link, &args.id, run).await?;
    }
    // Caught only while following: a plain read ends on Ctrl-C as any command does.
    let stop = args.follow.then(super::stop_signal).transpose()?;
    let following = super::follow(&link, &args.id, args.since, args.follow, args.json);
    let state = if let Some(stop) = stop {
        // A follow is a view: Ctrl-C ends it, not what it follows.
        tokio::select! {
            state = following => state?,
            status = stop => {
                let id = &args.id;
                say!("oino logs: stopped following {id}; it keeps running (`oino kill {id}` ends it)");
                return Ok(ExitCode::from(status));
            }
        }
    } else {
        following.await?
    };
    let entry = link
        .ask(ask::Entry {
            key: String::from(&args.id),
        })
        .await?;
    super::warn_log(
        "oino logs",
        &entry.id,
        entry.log_error.as_deref(),
        entry.log_cut.as_ref(),
    );
    Ok(if args.follow {
        ExitCode::from(exit_byte(state.shell_status()))
    } else {
        ExitCode::SUCCESS
    })
}

async fn screen(args: &ScreenArgs) -> anyhow::Result<ExitCode> {
    let link = Link::connect(&args.server.address()?).await?;
    let snapshot = link
        .ask(ask::Snapshot {
            key: String::from(&args.id),
            size: None,
        })
        .await?;
    let view = snapshot.view();
    if args.json {
        print_json(&view.clone().to_wire())?;
    } else if args.ansi {
        // Rows up to the last that shows anything, a coloured blank included.
        let ansi = snapshot.ansi();
        let rows: Vec<&str> = ansi.split_inclusive('\n').collect();
        let shown = rows
            .iter()
            .rposition(|row| *row != "\n")
            .map_or(0, |last| last + 1);
        print_raw(&rows[..shown].concat())?;
    } else {
        let mut text = view.shown_lines().join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        print_raw(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn wait(args: WaitArgs) -> anyhow::Result<ExitCode> {
    let timeout_ms = args
        .timeout
        .map(|seconds| super::seconds("--timeout", seconds))
        .transpose()?
        .map(|timeout| u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
    let client = Client::connect(&args.server.address()?).await?;
    let state = client
        .ask(ask::Wait {
            key: args.id.clone(),
            timeout_ms,
        })
        .await?;
    if args.json {
        print_json(&state.to_wire())?;
    }
    if !state.is_running() {
        return Ok(ExitCode::from(exit_byte(state.shell_status())));
    }
    // Named as the list names it; as typed, should it have gone meanwhile.
    let entry = client
        .ask(ask::Entry {
            key: args.id.clone(),
        })
        .await
        .ok();
    let name = entry.as_ref().map_or(args.id.as_str(), said::shown_name);
    let seconds = said::seconds(args.timeout.unwrap_or_default());
    say!("oino wait: `{name}` still runs after {seconds} s");
    Ok(ExitCode::from(124))
}

async fn kill(args: EntriesArgs) -> anyhow::Result<ExitCode> {
    let client = Client::connect(&args.server.address()?).await?;
    let mut status = ExitCode::SUCCESS;
    for id in args.ids {
        match kill_one(&client, id, args.json).await {
            Ok(true) => {}
            Ok(false) => status = ExitCode::FAILURE,
            Err(err) => status = failed_one("oino kill", err)?,
        }
    }
    Ok(status)
}

/// Kills one entry and says what it did: killed it, or found it ended. Whether it has ended.
async fn kill_one(client: &Client, key: String, json: bool) -> anyhow::Result<bool> {
    // One request: its reply names what it killed.
    let killed = client.ask(ask::Kill { key: key.clone() }).await?;
    let state = killed.state;
    if json {
        print_json(&killed.clone().to_wire())?;
    }
    let name = if killed.name.is_empty() {
        key.clone()
    } else {
        killed.name.clone()
    };
    let name = name.as_str();
    // The reply tells: no process was signalled, so it had ended (maybe since `before`).
    if killed.processes == 0 && !state.is_running() {
        say!("oino kill: {}", said::had_ended(name, state));
    } else {
        say!("oino kill: {}", said::killed(name, &killed));
    }
    Ok(!state.is_running())
}

async fn restart(args: EntriesArgs) -> anyhow::Result<ExitCode> {
    let client = Client::connect(&args.server.address()?).await?;
    let mut status = ExitCode::SUCCESS;
    for id in args.ids {
        let asked = ask::Restart {
            key: id,
            size: None,
        };
        match client.ask(asked).await {
            Ok(entry) if args.json => print_json(&entry.to_wire())?,
            Ok(entry) => print_raw(&format!(
                "{}\n",
                escaped(entry.task_id.as_ref().unwrap_or(&entry.id))
            ))?,
            Err(err) => status = failed_one("oino restart", err)?,
        }
    }
    Ok(status)
}

/// One of several ids failed: said, and the others still done; the command's status is the
/// last failure's. A failure of the link itself (the server gone) ends the command.
fn failed_one(command: &str, err: anyhow::Error) -> anyhow::Result<ExitCode> {
    if crate::link::refusal(&err).is_some() {
        Ok(crate::cli::report(command, &err))
    } else {
        Err(err)
    }
}

async fn send(args: SendArgs) -> anyhow::Result<ExitCode> {
    let client = Client::connect(&args.server.address()?).await?;
    let entry = client
        .ask(ask::Entry {
            key: args.id.clone(),
        })
        .await?;
    if !entry.state.is_running() {
        say!(
            "oino send: `{}` has ended ({}): it reads no input; `oino restart {}` runs it again",
            said::shown_name(&entry),
            said::how_it_ended(entry.state),
            args.id
        );
        return Ok(ExitCode::from(super::EXIT_USAGE));
    }
    let mut text = args.text;
    if args.enter {
        text.push('\r');
    }
    client
        .ask(ask::Send {
            key: args.id,
            text,
            bytes: Vec::new(),
        })
        .await?;
    Ok(ExitCode::SUCCESS)
}

/// How long `kill-server` waits for the server to end its processes (each gets the kill grace
/// after SIGTERM, then SIGKILL).
const KILL_SERVER_WAIT: Duration = Duration::from_secs(30);

async fn kill_server(args: &KillServerArgs) -> anyhow::Result<ExitCode> {
    let socket = args.server.path();
    let connected = match Client::connect(&args.server.address()?).await {
        // A server of another user, an unsafe folder: said as such (exit 2), not as no server.
        Err(err) if !crate::remote::client::nobody_listens(&err) => return Err(err),
        connected => connected,
    };
    let client = match connected {
        Ok(client) => client,
        Err(err) => {
            let why = match crate::remote::socket::lock_holder(&socket) {
                Some(pid) => format!(
                    "a server (pid {pid}) holds {} but does not answer at {}",
                    crate::remote::socket::lock_path(&socket).display(),
                    socket.display()
                ),
                None => format!("{err:#}"),
            };
            if args.json {
                print_json(&why)?;
            }
            say!("oino kill-server: {why}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let elsewhere = client.address().transport().is_some();
    let server = crate::remote::socket::lock_holder(&socket).filter(|_| !elsewhere);
    let entries = client.ask(ask::List {}).await?;
    let stopping = client.ask(ask::KillServer {}).await?;
    if args.json {
        print_json(&stopping)?;
    }
    if elsewhere {
        // Its lock is on the far side: it has ended once the link closes (the proxy goes with
        // the server's connection). This machine's server is none of it.
        if tokio::time::timeout(KILL_SERVER_WAIT, client.closed())
            .await
            .is_err()
        {
            say!(
                "oino: the far server is still ending its processes after {} s: `oino ls` there \
                 shows what is left",
                KILL_SERVER_WAIT.as_secs()
            );
            return Ok(ExitCode::FAILURE);
        }
        say!("oino kill-server: {}", said::server_stopped(&entries));
        return Ok(ExitCode::SUCCESS);
    }
    // The server has ended its processes and itself once it lets go of its lock.
    let deadline = tokio::time::Instant::now() + KILL_SERVER_WAIT;
    let ending = || match server {
        Some(_) => crate::remote::socket::lock_holder(&socket) == server,
        // Its lock could not be read: its socket goes last but one.
        None => socket.exists(),
    };
    while ending() {
        if tokio::time::Instant::now() >= deadline {
            let pid = server.map_or_else(|| "?".to_owned(), |pid| pid.to_string());
            say!(
                "oino: the server (pid {pid}) is still ending its processes after {} s: `oino ls` \
                 shows what is left; `kill {pid}` ends it at once",
                KILL_SERVER_WAIT.as_secs()
            );
            return Ok(ExitCode::FAILURE);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    say!("oino kill-server: {}", said::server_stopped(&entries));
    Ok(ExitCode::SUCCESS)
}
