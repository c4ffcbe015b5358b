//! The commands that talk to the oino server: `server`, `run` through it, `ls`, `detach`,
//! `logs`, `wait`, `kill`, `send`, `kill-server`.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;
use serde::Serialize;

use super::{
    Command, EXIT_INTERRUPTED, EXIT_USAGE, RunConfig, ServerChoice, print_raw, print_text,
};
use crate::call::{CallResult, TimeoutPolicy};
use crate::client::{Client, Refused};
use crate::core::{EntryInfo, EntryState};
use crate::output::OutputSlice;
use crate::protocol::Request;

/// Raw bytes asked per step while following output.
const FOLLOW_BYTES: usize = 256 * 1024;

#[derive(Debug, Args)]
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
    #[arg(long, value_name = "SECS", default_value_t = crate::server::DEFAULT_IDLE_EXIT.as_secs())]
    pub idle_exit: u64,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    #[command(flatten)]
    pub server: ServerChoice,
    /// Print JSON, for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DetachArgs {
    /// The call's id.
    pub id: String,
    /// The task's name (default: made from the command).
    #[arg(long)]
    pub name: Option<String>,
    /// Why, as the call's waiter will read it.
    #[arg(long)]
    pub reason: Option<String>,
    #[command(flatten)]
    pub server: ServerChoice,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// A call id, task id or task name.
    pub id: String,
    /// Keep printing until it ends.
    #[arg(short, long)]
    pub follow: bool,
    /// Start at this raw offset (default: the start; a task's own output for a task).
    #[arg(long, value_name = "OFFSET")]
    pub since: Option<u64>,
    #[command(flatten)]
    pub server: ServerChoice,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// A call id, task id or task name.
    pub id: String,
    /// Give up after SECS seconds (exit 124).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub server: ServerChoice,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// A call id, task id or task name.
    pub id: String,
    #[command(flatten)]
    pub server: ServerChoice,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// A call id, task id or task name.
    pub id: String,
    /// The text to type.
    pub text: String,
    /// Press Enter after it.
    #[arg(long)]
    pub enter: bool,
    #[command(flatten)]
    pub server: ServerChoice,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct KillServerArgs {
    #[command(flatten)]
    pub server: ServerChoice,
    #[arg(long)]
    pub json: bool,
}

/// Runs a command that talks to the server.
pub async fn main(command: Command) -> ExitCode {
    let outcome = match command {
        Command::Server(args) => server(&args).await,
        Command::Ls(args) => ls(&args).await,
        Command::Detach(args) => detach(args).await,
        Command::Logs(args) => logs(args).await,
        Command::Wait(args) => wait(args).await,
        Command::Kill(args) => kill(args).await,
        Command::Send(args) => send(args).await,
        Command::KillServer(args) => kill_server(&args).await,
        Command::Run(_) | Command::Headless(_) => Ok(ExitCode::from(EXIT_USAGE)),
    };
    outcome.unwrap_or_else(|err| {
        eprintln!("oino: {err:#}");
        if err.downcast_ref::<Refused>().is_some() {
            ExitCode::from(EXIT_USAGE)
        } else {
            ExitCode::FAILURE
        }
    })
}

fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, value)?;
    writeln!(stdout)?;
    Ok(())
}

fn status_of(state: EntryState) -> u8 {
    let status = match state {
        EntryState::Exited { code } => code,
        EntryState::Killed { signal } => 128 + signal,
        EntryState::Running => 0,
    };
    u8::try_from(status & 0xff).unwrap_or(1)
}

async fn server(args: &ServerArgs) -> anyhow::Result<ExitCode> {
    let socket = args.server.path();
    if !args.foreground {
        // Started and left running in the background; this command ends once it answers.
        let client = Client::connect_or_start(&socket).await?;
        println!("oino server on {}", client.socket().display());
        return Ok(ExitCode::SUCCESS);
    }
    if args.detached {
        // Leave the session of the terminal that started the client. It fails only for a
        // group leader, which a process spawned by a client is not.
        let _ = nix::unistd::setsid();
    }
    let served = crate::server::serve(&socket, Duration::from_secs(args.idle_exit)).await?;
    if served == crate::server::Served::AlreadyRunning {
        eprintln!(
            "oino server: another server already serves {}",
            socket.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn ls(args: &LsArgs) -> anyhow::Result<ExitCode> {
    let mut client = Client::connect_or_start(&args.server.path()).await?;
    let entries: Vec<EntryInfo> = client.request(&Request::List {}).await?;
    if args.json {
        print_json(&entries)?;
        return Ok(ExitCode::SUCCESS);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        });
    let mut out = format!(
        "{:<14} {:<5} {:<18} {:<12} {:>7} {:>7}  COMMAND\n",
        "ID", "TASK", "NAME", "STATE", "PID", "TIME"
    );
    for entry in &entries {
        let state = match entry.state {
            EntryState::Running => "running".to_owned(),
            EntryState::Exited { code } => format!("exited {code}"),
            EntryState::Killed { signal } => format!("killed {signal}"),
        };
        let elapsed = crate::ui::format_elapsed(crate::ui::shown_elapsed_ms(
            entry.started_ms,
            entry.ended_ms.unwrap_or(now),
        ));
        let _ = writeln!(
            out,
            "{:<14} {:<5} {:<18} {:<12} {:>7} {:>7}  {}",
            entry.id,
            entry.task_id.as_deref().unwrap_or("-"),
            entry
                .name
                .as_deref()
                .or(entry.title.as_deref())
                .unwrap_or("-"),
            state,
            entry.pid,
            elapsed,
            entry.command
        );
    }
    print_raw(&out);
    Ok(ExitCode::SUCCESS)
}

async fn detach(args: DetachArgs) -> anyhow::Result<ExitCode> {
    let mut client = Client::connect(&args.server.path()).await?;
    let task: EntryInfo = client
        .request(&Request::Detach {
            key: args.id,
            name: args.name,
            reason: args.reason,
        })
        .await?;
    if args.json {
        print_json(&task)?;
    } else {
        println!(
            "{} {}",
            task.task_id.as_deref().unwrap_or("?"),
            task.name.as_deref().unwrap_or("?")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints output from `since` on; with `follow`, until the entry ends. Returns its last state.
async fn print_output(
    client: &mut Client,
    key: &str,
    since: Option<u64>,
    follow: bool,
    json: bool,
) -> anyhow::Result<EntryState> {
    let mut offset = since;
    loop {
        let slice: OutputSlice = client
            .request(&Request::Output {
                key: key.to_owned(),
                since: offset,
                max_bytes: Some(FOLLOW_BYTES),
            })
            .await?;
        let moved = slice.next_offset > slice.from;
        if json && moved {
            serde_json::to_writer(std::io::stdout().lock(), &slice)?;
            println!();
        } else if moved {
            print_raw(&slice.text);
        }
        offset = Some(slice.next_offset);
        if moved {
            continue;
        }
        let entry: EntryInfo = client
            .request(&Request::Entry {
                key: key.to_owned(),
            })
            .await?;
        if !follow || (!entry.state.is_running() && slice.next_offset >= entry.bytes) {
            return Ok(entry.state);
        }
        let _: bool = client
            .request(&Request::WaitOutput {
                key: key.to_owned(),
                offset: slice.next_offset,
                timeout_ms: 1000,
            })
            .await?;
    }
}

async fn logs(args: LogsArgs) -> anyhow::Result<ExitCode> {
    let mut client = Client::connect(&args.server.path()).await?;
    let state = print_output(&mut client, &args.id, args.since, args.follow, args.json).await?;
    Ok(if args.follow {
        ExitCode::from(status_of(state))
    } else {
        ExitCode::SUCCESS
    })
}

async fn wait(args: WaitArgs) -> anyhow::Result<ExitCode> {
    let mut client = Client::connect(&args.server.path()).await?;
    let timeout_ms = args
        .timeout
        .map(|seconds| super::seconds("--timeout", seconds))
        .transpose()?
        .map(|timeout| u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
    let state: EntryState = client
        .request(&Request::Wait {
            key: args.id,
            timeout_ms,
        })
        .await?;
    if args.json {
        print_json(&state)?;
    }
    Ok(if state.is_running() {
        ExitCode::from(124)
    } else {
        ExitCode::from(status_of(state))
    })
}

async fn kill(args: KillArgs) -> anyhow::Result<ExitCode> {
    let mut client = Client::connect(&args.server.path()).await?;
    let state: EntryState = client.request(&Request::Kill { key: args.id }).await?;
    if args.json {
        print_json(&state)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn send(args: SendArgs) -> anyhow::Result<ExitCode> {
    let mut client = Client::connect(&args.server.path()).await?;
    let mut text = args.text;
    if args.enter {
        text.push('\r');
    }
    let _: String = client
        .request(&Request::Send { key: args.id, text })
        .await?;
    Ok(ExitCode::SUCCESS)
}

async fn kill_server(args: &KillServerArgs) -> anyhow::Result<ExitCode> {
    let socket = args.server.path();
    let Ok(mut client) = Client::connect(&socket).await else {
        if args.json {
            print_json(&"no server")?;
        } else {
            eprintln!("oino: no server answers at {}", socket.display());
        }
        return Ok(ExitCode::SUCCESS);
    };
    let stopping: String = client.request(&Request::KillServer {}).await?;
    if args.json {
        print_json(&stopping)?;
    }
    // The server is gone once its socket is.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while socket.exists() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(ExitCode::SUCCESS)
}

/// `oino run` through the server: the call shows in every attached interface and can be
/// detached from anywhere; a detached call's task lives on in the server.
pub async fn run(config: RunConfig, socket: &Path) -> anyhow::Result<u8> {
    let mut client = Client::connect_or_start(socket).await?;
    let id = format!("run-{}", std::process::id());
    let options = &config.request.options;
    // The command runs where, and with what, it would in this shell, not the server's.
    let cwd = match config.request.cwd.clone() {
        Some(cwd) => cwd,
        None => std::env::current_dir()?,
    };
    let env = std::env::vars()
        .filter(|(name, _)| name != "OINO_SOCKET")
        .collect();
    let request = Request::Run {
        command: config.request.command.clone(),
        id: Some(id.clone()),
        cwd: Some(cwd),
        env,
        timeout_ms: options
            .timeout
            .map(|timeout| u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
        on_timeout: (options.on_timeout == TimeoutPolicy::Detach).then(|| "detach".to_owned()),
        max_bytes: Some(options.max_result_bytes),
        title: None,
    };
    if let Some(after) = config.detach_after {
        let (socket, id, name) = (socket.to_owned(), id.clone(), config.name.clone());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let reason = format!("still running after {} s", after.as_secs_f64());
            if let Ok(mut other) = Client::connect(&socket).await {
                // A call that ended meanwhile gives its normal result.
                let _: anyhow::Result<EntryInfo> = other
                    .request(&Request::Detach {
                        key: id,
                        name,
                        reason: Some(reason),
                    })
                    .await;
            }
        });
    }
    let result = tokio::select! {
        result = client.request::<CallResult>(&request) => result?,
        () = interrupted() => {
            // Ctrl-C ends the command, as it would without oino.
            if let Ok(mut other) = Client::connect(socket).await {
                let _: anyhow::Result<EntryState> = other.request(&Request::Kill { key: id }).await;
            }
            return Ok(EXIT_INTERRUPTED);
        }
    };
    if config.json {
        let mut stdout = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut stdout, &result)?;
        writeln!(stdout)?;
    } else {
        print_text(&result.text);
    }
    if result.detached.is_some() && config.follow {
        let mut follower = Client::connect(socket).await?;
        let entry: EntryInfo = follower
            .request(&Request::Entry { key: id.clone() })
            .await?;
        let state =
            print_output(&mut follower, &id, Some(entry.detach_offset), true, false).await?;
        return Ok(status_of(state));
    }
    Ok(u8::try_from(result.exit_status() & 0xff).unwrap_or(1))
}

async fn interrupted() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}
