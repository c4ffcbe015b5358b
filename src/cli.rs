//! The command line: flags parsed by clap into plain structs, checked into a [`RunConfig`], then
//! run on the user's server (started when none runs), or on a core in this process with
//! `--embedded`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::call::{CallOptions, CallResult, TimeoutPolicy};
use crate::core::{CallRequest, CoreError, MAX_COMMAND_BYTES};
use crate::link::{DetachWhen, Link};
use crate::pty::TermSize;

/// Like `eprintln!`, but a closed standard error is no panic, and what it says is inert: a name
/// or a command holding control characters shows them escaped.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(std::io::stderr().lock(), "{}", $crate::inert::escaped_lines(&text));
    }};
}

mod remote;

/// Exit status for bad arguments, as clap uses.
const EXIT_USAGE: u8 = 2;
/// Exit status after Ctrl-C, as shells report it.
const EXIT_INTERRUPTED: u8 = 130;
/// Raw bytes read per step while following a task.
const FOLLOW_READ_BYTES: usize = 256 * 1024;

#[derive(Debug, Parser)]
#[command(
    name = "oino",
    version,
    about = "A terminal process manager: every shell call in its own PTY, detachable into a \
             background task that keeps running.",
    after_help = "With no command, oino opens its full-screen interface on the COMMANDs given \
                  (each one a call), or on a demo. Press ? in it for the keys.\n\n\
                  Examples:\n  oino 'npm run dev' 'cargo watch -x test'\n  \
                  oino run -- cargo test\n  oino run --timeout 60 -- make\n  \
                  oino run --detach-after 5 --follow -- npm run dev\n  \
                  oino headless --script demo.oino\n  \
                  claude mcp add oino -- oino mcp   (an agent's commands through oino)\n\n\
                  A call named like a subcommand goes after `--`: oino -- ls"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Commands to start as calls in the interface (a demo when none are given and the server
    /// has nothing to show).
    #[arg(value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// Host the processes in this interface instead of the server: quitting ends them.
    #[arg(long)]
    pub embedded: bool,
    /// The project file whose processes to start (default: oino.toml here, else a Procfile).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerChoice,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one command in a PTY and print its result text as an agent receives it.
    Run(RunArgs),
    /// Run the interface with no terminal, driven by a script (for tests).
    Headless(HeadlessArgs),
    #[command(flatten)]
    Remote(remote::Command),
    /// Serve AI agents over MCP (stdio): their shell commands run as calls of the server.
    Mcp(McpArgs),
    /// This terminal onto a running call's or task's terminal: its screen, then its output live;
    /// keys go to it, and the detach key (Ctrl-A) leaves it running.
    Attach(AttachArgs),
    /// Start a process of the project file here (oino.toml, else a Procfile), even one with
    /// `autostart = false`, on the server.
    Start(StartArgs),
    /// Print a completion script for a shell (see README: where to put it).
    Completions(CompletionsArgs),
    /// Print the manual page (roff): `oino man | man -l -`.
    Man,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// A call id, task id or task name.
    pub id: String,
    /// The key that detaches: ctrl-a (default), ctrl-], f12, …
    #[arg(long, value_name = "KEY", default_value = "ctrl-a")]
    pub detach_key: String,
    #[command(flatten)]
    pub server: ServerChoice,
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// The process's name in the project file.
    pub name: String,
    /// The project file (default: oino.toml here, else a Procfile).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerChoice,
}

#[derive(Debug, Args)]
#[command(after_help = "Install:\n  \
                  bash: oino completions bash > ~/.local/share/bash-completion/completions/oino\n  \
                  zsh:  oino completions zsh > ~/.zfunc/_oino   (with fpath+=~/.zfunc before \
                  compinit)\n  \
                  fish: oino completions fish > ~/.config/fish/completions/oino.fish")]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
#[command(after_help = "Register it in an agent as a stdio MCP server, e.g.\n  \
                  claude mcp add oino -- oino mcp\n  \
                  codex mcp add oino -- oino mcp\n\n\
                  Tools: bash, task_output, task_list, task_kill, task_input. The agent's \
                  commands appear in every oino attached to the same server (`oino` in another \
                  terminal), where a key detaches one that would block the agent.")]
pub struct McpArgs {
    #[command(flatten)]
    pub server: ServerChoice,
    /// Detach every bash call still running after SECS seconds into a background task (unless
    /// the call gives its own `detach_after_ms`): set it below the client's own request timeout
    /// (60 s in Codex), so that a long call returns instead of being cancelled and killed.
    #[arg(long, value_name = "SECS")]
    pub detach_after: Option<f64>,
}

/// Where the server is: `--socket`, else a session's socket (`-s`), else `OINO_SOCKET`.
#[derive(Clone, Debug, Default, Args)]
pub struct ServerChoice {
    /// The server's socket (default: `$XDG_RUNTIME_DIR/oino/SESSION.sock`).
    #[arg(long, value_name = "PATH", global = true)]
    pub socket: Option<PathBuf>,
    /// The session: a server of its own, at SESSION.sock.
    #[arg(short, long, value_name = "NAME", global = true)]
    pub session: Option<String>,
}

impl ServerChoice {
    #[must_use]
    pub fn path(&self) -> PathBuf {
        crate::remote::socket::choose_socket(self.socket.clone(), self.session.as_deref())
    }
}

#[derive(Debug, Args)]
#[command(
    after_help = "Script lines:\n  run [--id ID] COMMAND        start a call\n  \
                        project FILE                 start a project file's processes\n  \
                        key KEY                      press a key: d, enter, esc, ctrl-a, up, pgup, f5\n  \
                        type TEXT                    type text\n  \
                        wait-for TEXT [--timeout S]  wait until the screen shows TEXT (10 s)\n  \
                        wait-match REGEX [--timeout S] wait until a line of the screen matches\n  \
                        wait-exit ID [--timeout S]   wait until a call or task ends\n  \
                        resize COLSxROWS             resize the terminal\n  \
                        snapshot                     print the screen\n  \
                        result ID                    wait for a call's result and print it\n  \
                        # ...                        a comment"
)]
pub struct HeadlessArgs {
    /// Attach to the server (started if needed) instead of hosting the processes here.
    #[arg(long)]
    pub server: bool,
    #[command(flatten)]
    pub choice: ServerChoice,
    /// The size of the pretend terminal.
    #[arg(long, value_name = "COLSxROWS", default_value = "120x40", value_parser = crate::interface::headless::parse_size)]
    pub size: TermSize,
    /// The script (default: standard input).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
}

/// The demo calls, one a line.
const DEMO: &str = include_str!("../assets/demo.sh");

/// The demo's calls: a title (the one-word comment above a line) and a command.
#[must_use]
pub fn demo_commands() -> Vec<(Option<String>, String)> {
    let mut title = None;
    let mut calls = Vec::new();
    for line in DEMO.lines().map(str::trim) {
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim();
            title = (!comment.is_empty() && !comment.contains(' ')).then(|| comment.to_owned());
        } else if !line.is_empty() {
            calls.push((title.take(), line.to_owned()));
        }
    }
    calls
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnTimeout {
    /// Kill the process tree (exit status 124).
    Kill,
    /// Detach into a background task.
    Detach,
}

/// What the waiter of a call does when the call waits for someone to type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnInput {
    /// Keep waiting: someone answers in the interface, or with `oino send`.
    Wait,
    /// Detach it into a task and return with the output so far (its prompt last).
    Detach,
    /// Kill it.
    Kill,
}

impl OnInput {
    fn policy(self) -> crate::call::InputPolicy {
        match self {
            Self::Wait => crate::call::InputPolicy::Wait,
            Self::Detach => crate::call::InputPolicy::Detach,
            Self::Kill => crate::call::InputPolicy::Kill,
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Stop waiting after SECS seconds (see --on-timeout).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// What a timeout does.
    #[arg(long, value_enum, default_value = "kill", value_name = "POLICY")]
    pub on_timeout: OnTimeout,
    /// What happens when the command waits for someone to type (a prompt, a password): detach
    /// it into a task and print what it showed, keep waiting (answer with `oino send`, or in
    /// `oino`), or kill it.
    #[arg(long, value_enum, default_value = "detach", value_name = "POLICY")]
    pub on_input: OnInput,
    /// Directory to run in (default: the current one).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Cap of the result text; beyond it the head and tail are kept.
    #[arg(long, value_name = "N", default_value_t = crate::output::DEFAULT_MAX_RESULT_BYTES)]
    pub max_bytes: usize,
    /// Name of the task, if the call is detached.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Detach into a background task if still running after SECS seconds.
    #[arg(long, value_name = "SECS")]
    pub detach_after: Option<f64>,
    /// Detach into a background task the moment a line of output matches REGEX (a server that
    /// says it listens), with the output so far.
    #[arg(long, value_name = "REGEX")]
    pub detach_on: Option<String>,
    /// After a detach, keep printing the task's output until it ends.
    #[arg(long)]
    pub follow: bool,
    /// Run in this process instead of the server: what still runs ends when this command does.
    #[arg(long)]
    pub embedded: bool,
    /// Print the whole result as JSON (`text`, `is_error`, `exit`, `timed_out`, `detached`, …).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub server: ServerChoice,
    /// The command, run by `bash -c` (several words are joined by spaces).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// A `run` whose arguments were checked.
#[derive(Debug)]
pub struct RunConfig {
    pub request: CallRequest,
    pub name: Option<String>,
    pub detach_after: Option<Duration>,
    pub detach_on: Option<regex::Regex>,
    pub follow: bool,
    /// The server's socket, or `None` to run in this process.
    pub socket: Option<PathBuf>,
    pub json: bool,
}

/// A flag's value that cannot be used: what to change, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadFlag(String);

fn seconds(flag: &str, value: f64) -> anyhow::Result<Duration> {
    if !value.is_finite() || value <= 0.0 {
        return Err(BadFlag(format!(
            "{flag} must be a positive number of seconds, not {value}"
        ))
        .into());
    }
    Duration::try_from_secs_f64(value)
        .map_err(|_| BadFlag(format!("{flag} {value} is too large")).into())
}

impl RunArgs {
    /// Checks the flags into a config the rest can trust.
    pub fn into_config(self) -> anyhow::Result<RunConfig> {
        let timeout = self
            .timeout
            .map(|value| seconds("--timeout", value))
            .transpose()?;
        let detach_after = self
            .detach_after
            .map(|value| seconds("--detach-after", value))
            .transpose()?;
        let detach_on = self
            .detach_on
            .as_deref()
            .map(|pattern| {
                regex::Regex::new(pattern).map_err(|err| {
                    BadFlag(format!(
                        "--detach-on {pattern:?} is not a regular expression: {err}"
                    ))
                })
            })
            .transpose()?;
        let detaches = detach_after.is_some() || detach_on.is_some();
        if self.follow && !detaches && self.on_timeout != OnTimeout::Detach {
            anyhow::bail!(
                "--follow follows a detached task: add --detach-after SECS or --detach-on REGEX"
            );
        }
        if self.max_bytes < 100 {
            anyhow::bail!("--max-bytes must be at least 100, not {}", self.max_bytes);
        }
        if let Some(cwd) = &self.cwd {
            crate::pty::check_cwd(cwd)?;
        }
        if let Some(name) = &self.name {
            crate::core::tasks::validate_name(name)?;
        }
        let command = self.command.join(" ");
        if command.trim().is_empty() {
            anyhow::bail!("the command is empty: give a command after --");
        }
        if command.len() > MAX_COMMAND_BYTES {
            if self.command.len() == 1 {
                return Err(CoreError::CommandTooLong(command.len()).into());
            }
            anyhow::bail!(
                "the command's {} words joined make {} bytes, more than `bash -c` takes \
                 ({MAX_COMMAND_BYTES}): write them to a file and run the file",
                self.command.len(),
                command.len()
            );
        }
        let size = terminal_size().unwrap_or(TermSize::DEFAULT);
        Ok(RunConfig {
            request: CallRequest {
                command,
                cwd: self.cwd,
                size: Some(size),
                options: CallOptions {
                    timeout,
                    on_timeout: match self.on_timeout {
                        OnTimeout::Kill => TimeoutPolicy::Kill,
                        OnTimeout::Detach => TimeoutPolicy::Detach,
                    },
                    max_result_bytes: self.max_bytes,
                    on_input: self.on_input.policy(),
                    ..CallOptions::default()
                },
                task_name: self.name.clone(),
                ..CallRequest::default()
            },
            name: self.name,
            detach_after,
            detach_on,
            follow: self.follow,
            socket: (!self.embedded).then(|| self.server.path()),
            json: self.json,
        })
    }
}

fn terminal_size() -> Option<TermSize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    crate::interface::terminal::size()
}

/// The program: parse, run, exit status.
#[must_use]
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.config.is_some() && cli.command.is_some() {
        say!("oino: --config before a subcommand opens no interface; `oino start --config FILE …`");
        return ExitCode::from(EXIT_USAGE);
    }
    if cli.embedded && cli.command.is_some() {
        say!(
            "oino: --embedded before a subcommand opens no interface; `oino run --embedded …` \
             runs a command in this process, and `oino --embedded -- COMMAND` opens the \
             interface on a call named like a subcommand"
        );
        return ExitCode::from(EXIT_USAGE);
    }
    // A mistake in the settings: the interface starts with the defaults and shows it; the other
    // commands stop, saying where it is.
    if !matches!(
        cli.command,
        None | Some(Command::Completions(_) | Command::Man)
    ) {
        if let Err(err) = crate::interface::app::settings::Config::load() {
            say!("oino: the settings are wrong: {err}");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    match cli.command {
        Some(Command::Attach(args)) => attach(&args),
        Some(Command::Start(args)) => match runtime() {
            Ok(runtime) => runtime.block_on(start_process(args)),
            Err(code) => code,
        },
        Some(Command::Completions(args)) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(args.shell, &mut command, "oino", &mut out);
            print_or_report("oino completions", &out)
        }
        Some(Command::Man) => {
            let mut out = Vec::new();
            let rendered =
                clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut out);
            match rendered {
                Ok(()) => print_or_report("oino man", &out),
                Err(err) => report("oino man", &err.into()),
            }
        }
        Some(Command::Run(args)) => match args.into_config() {
            Ok(config) => run_in_runtime(config),
            Err(err) => {
                say!("oino run: {err:#}");
                ExitCode::from(EXIT_USAGE)
            }
        },
        Some(Command::Headless(args)) => headless(&args),
        Some(Command::Mcp(args)) => match (
            args.detach_after
                .map(|value| seconds("--detach-after", value))
                .transpose(),
            runtime(),
        ) {
            (Err(err), _) => report("oino mcp", &err),
            (Ok(detach_after), Ok(runtime)) => {
                let served = runtime.block_on(crate::mcp::serve(args.server.path(), detach_after));
                // A read of standard input cannot be cancelled: ending on a signal must not wait
                // for it.
                runtime.shutdown_background();
                match served {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(err) => {
                        say!("oino mcp: {err:#}");
                        ExitCode::FAILURE
                    }
                }
            }
            (Ok(_), Err(code)) => code,
        },
        Some(Command::Remote(command)) => {
            if let remote::Command::Server(args) = &command {
                if args.foreground {
                    // Before the runtime opens any: a server holds none of its starter's.
                    crate::remote::server::close_inherited_descriptors();
                }
            }
            match runtime() {
                Ok(runtime) => runtime.block_on(remote::main(command)),
                Err(code) => code,
            }
        }
        None => interface(cli),
    }
}

/// The project file given, else the one of this folder (oino.toml, else a Procfile).
fn load_project(
    config: Option<&std::path::Path>,
) -> Result<Option<crate::core::project::Project>, crate::core::project::ProjectError> {
    if let Some(file) = config {
        return crate::core::project::Project::load(file).map(Some);
    }
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    crate::core::project::Project::find(&here)
}

/// This process's environment, as calls started from here get it.
fn here_env() -> Vec<(String, String)> {
    CallRequest::default()
        .from_here()
        .map(|request| request.env)
        .unwrap_or_default()
}

/// What the interface says first about a project it started.
fn project_greeting(
    project: &crate::core::project::Project,
    started: &crate::core::project::ProjectStarted,
) -> String {
    let name = project
        .file
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    let mut parts = Vec::new();
    if !started.started.is_empty() {
        parts.push(format!("started {}", started.started.join(", ")));
    }
    if !started.running.is_empty() {
        parts.push(format!("running already: {}", started.running.join(", ")));
    }
    if !started.not_started.is_empty() {
        parts.push(format!(
            "not started (autostart = false; `oino start NAME`): {}",
            started.not_started.join(", ")
        ));
    }
    format!("{name}: {}", parts.join("; "))
}

/// `oino start NAME`: one process of the project here, on the server.
async fn start_process(args: StartArgs) -> ExitCode {
    let project = match load_project(args.config.as_deref()) {
        Ok(Some(project)) => project,
        Ok(None) => {
            say!(
                "oino start: no oino.toml or Procfile in this folder: run it in the project's \
                 folder, or give --config FILE"
            );
            return ExitCode::from(EXIT_USAGE);
        }
        Err(err) => {
            say!("oino start: {err}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let started = async {
        let link = Link::open(Some(&args.server.path())).await?;
        Ok::<_, anyhow::Error>(
            link.start_project(&project, here_env(), Some(&args.name))
                .await?,
        )
    };
    match started.await {
        Ok(started) if started.running.is_empty() => {
            say!("started {} as a task named {}", args.name, args.name);
            ExitCode::SUCCESS
        }
        Ok(_) => {
            say!("{} runs already", args.name);
            ExitCode::SUCCESS
        }
        Err(err) => report("oino start", &err),
    }
}

/// What the interface opens on: the server (or this process) with `commands`; given none, the
/// server's calls, or when there are none, the demo in this process, so that it ends with the
/// interface and leaves no server behind.
async fn interface_link(
    socket: Option<&std::path::Path>,
    commands: Vec<(Option<String>, String)>,
) -> anyhow::Result<(Link, Vec<(Option<String>, String)>)> {
    if !commands.is_empty() {
        return Ok((Link::open_with(socket, core_config()).await?, commands));
    }
    // A server that answers (none is started for the look) and shows something.
    if let Some(Ok(link)) = match socket {
        Some(socket) => Some(Link::connect(socket).await),
        None => None,
    } {
        if !link.entries().await?.is_empty() {
            return Ok((link, commands));
        }
        link.close().await;
    }
    Ok((Link::open_with(None, core_config()).await?, demo_commands()))
}

/// The core's settings from the user's: how long logs are kept, and how much of each. A
/// mistake in them means the defaults here: the commands that must stop on it have stopped
/// before, and the interface shows it.
pub(crate) fn core_config() -> crate::core::CoreConfig {
    let settings = crate::interface::app::settings::Config::load().unwrap_or_default();
    // Processes of a core in this process (an interface with --embedded, `run --embedded`) that
    // outlive it, killed, are found by the next server of the socket this user would use; a
    // server tags its calls with its own socket.
    let socket = crate::remote::socket::choose_socket(None, None);
    crate::core::CoreConfig {
        log_retention: settings.log_retention,
        log_cap: settings.log_cap,
        owner: Some(crate::core::survivors::owner_tag(
            &crate::remote::socket::socket_key(&socket),
        )),
        ..crate::core::CoreConfig::default()
    }
}

/// `oino attach ID`.
fn attach(args: &AttachArgs) -> ExitCode {
    let key = match crate::interface::app::parse_key(&args.detach_key) {
        Ok(key) => key,
        Err(err) => {
            say!("oino attach: --detach-key: {err}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let attached = runtime.block_on(async {
        let link = Link::connect(&args.server.path()).await?;
        let label = crate::interface::app::key_label(&args.detach_key);
        crate::interface::terminal::attach(link, &args.id, key, &label).await
    });
    attached.map_or_else(|err| report("oino attach", &err), |()| ExitCode::SUCCESS)
}

/// `oino` with no subcommand: the interface, on the COMMANDs given, else the project file here,
/// else the server's calls (or the demo).
fn interface(cli: Cli) -> ExitCode {
    let commands: Vec<(Option<String>, String)> = cli
        .commands
        .into_iter()
        .map(|command| (None, command))
        .collect();
    if cli.config.is_some() && !commands.is_empty() {
        say!("oino: --config starts a project file's processes: give it without COMMANDs");
        return ExitCode::from(EXIT_USAGE);
    }
    let project = if commands.is_empty() {
        match load_project(cli.config.as_deref()) {
            Ok(project) => project,
            Err(err) => {
                say!("oino: {err}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    } else {
        None
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let interface = async {
        let socket = (!cli.embedded).then(|| cli.server.path());
        let (link, commands, greeting) = if let Some(project) = project {
            let link = Link::open_with(socket.as_deref(), core_config()).await?;
            let started = link.start_project(&project, here_env(), None).await?;
            (link, Vec::new(), Some(project_greeting(&project, &started)))
        } else {
            let (link, commands) = interface_link(socket.as_deref(), commands).await?;
            (link, commands, None)
        };
        crate::interface::terminal::run(link, commands, greeting).await
    };
    match runtime.block_on(interface) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            say!("oino: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| {
            say!("oino: cannot start the runtime: {err}");
            ExitCode::FAILURE
        })
}

fn headless(args: &HeadlessArgs) -> ExitCode {
    let script = match &args.script {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|err| format!("cannot read the script {}: {err}", path.display())),
        None => std::io::read_to_string(std::io::stdin())
            .map_err(|err| format!("cannot read the script from standard input: {err}")),
    };
    let script = match script {
        Ok(script) => script,
        Err(message) => {
            say!("oino headless: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let mut stdout = std::io::stdout();
    let played = runtime.block_on(async {
        let socket = args.server.then(|| args.choice.path());
        let link = Link::open(socket.as_deref()).await?;
        crate::interface::headless::run(args.size, script, link, &mut stdout).await
    });
    match played {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            say!("oino headless: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_in_runtime(config: RunConfig) -> ExitCode {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    match runtime.block_on(run(config)) {
        Ok(status) => ExitCode::from(status),
        Err(err) => report("oino run", &err),
    }
}

/// The exit status for a failure, decided by its code: 2 when what was asked must change (a
/// bad name, an unknown id, a command too long), 1 when it failed otherwise.
pub(crate) fn failure_status(err: &anyhow::Error) -> ExitCode {
    use crate::core::ErrorCode::{
        AlreadyTask, BadRequest, DuplicateId, DuplicateName, Forbidden, Forgotten, InvalidName,
        NoSuchEntry, NotRunning, TooLarge, Version,
    };
    if err
        .chain()
        .any(|cause| cause.is::<BadFlag>() || cause.is::<crate::paths::UnsafePath>())
    {
        return ExitCode::from(EXIT_USAGE);
    }
    match crate::link::error_code(err) {
        Some(
            NoSuchEntry | Forgotten | DuplicateId | DuplicateName | InvalidName | NotRunning
            | AlreadyTask | TooLarge | BadRequest | Version | Forbidden,
        ) => ExitCode::from(EXIT_USAGE),
        _ => ExitCode::FAILURE,
    }
}

/// Waits for Ctrl-C, SIGTERM or SIGHUP; returns the status a shell reports for it.
/// The signals are caught from the call on, not from the first wait: one that comes before
/// is not lost to the default action.
pub(crate) fn stop_signal() -> std::io::Result<impl Future<Output = u8>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => EXIT_INTERRUPTED,
            _ = terminate.recv() => 128 + 15,
            _ = hangup.recv() => 128 + 1,
        }
    })
}

/// Runs one call, on the server or in this process; returns the exit status.
pub async fn run(mut config: RunConfig) -> anyhow::Result<u8> {
    let link = Link::open(config.socket.as_deref()).await?;
    config.request.id = Some(format!("run-{}", std::process::id()));
    // The id the call got, once it started: a signal ends it wherever it runs. Once it is a
    // task being followed, the task it became: a signal then ends only the following.
    let started = std::sync::OnceLock::new();
    let followed = std::sync::OnceLock::new();
    let stop = stop_signal()?;
    let outcome = tokio::select! {
        outcome = run_call(&link, config, &started, &followed) => outcome,
        status = stop => {
            if let Some(task) = followed.get() {
                say!(
                    "oino run: stopped following task {task}; it keeps running (`oino kill \
                     {task}` ends it)"
                );
            } else if let Some(id) = started.get() {
                // Ctrl-C ends the command, as it would without oino. One not started yet ends
                // as this client leaves.
                let _ = link.kill(id).await;
            }
            Ok(status)
        }
    };
    // In this process, what still runs ends with it; a server keeps its tasks.
    link.close().await;
    outcome
}

async fn run_call(
    link: &Link,
    config: RunConfig,
    started: &std::sync::OnceLock<String>,
    followed: &std::sync::OnceLock<String>,
) -> anyhow::Result<u8> {
    for name in crate::core::variables_not_utf8() {
        say!("oino run: {name} is left out of the call's environment: it is not UTF-8");
    }
    let max_bytes = config.request.options.max_result_bytes;
    let (id, result) = link.run_unique(config.request.from_here()?).await?;
    let _ = started.set(id.clone());
    let detach = DetachWhen {
        after: config.detach_after,
        on_line: config.detach_on.as_ref(),
        name: config.name.as_deref(),
    };
    let finished = link
        .finish_run(&id, result, detach, |err| {
            say!("oino run: cannot detach: {err:#}");
        })
        .await;
    let result: CallResult = match finished {
        Ok(result) => result,
        Err(err) => {
            // The server died while this waited: what the call wrote is in its log.
            let crate::link::LinkError::ServerGone(gone) = err else {
                return Err(err.into());
            };
            print_text(&gone.output_so_far(max_bytes))?;
            say!("oino run: {gone}");
            return Ok(1);
        }
    };
    if let (Some(detached), true) = (&result.detached, config.follow) {
        let _ = followed.set(detached.task_id.clone());
    }
    if config.json {
        let wire = crate::remote::protocol::Travel::to_wire(result.clone());
        print_text(&crate::inert::json(serde_json::to_string_pretty(&wire)?))?;
    } else {
        print_text(&result.text)?;
    }
    if result.detached.is_some() && config.follow {
        let from = link.entry(&id).await?.detach_offset;
        let state = follow(link, &id, Some(from), true, false).await?;
        // What the log went through while followed.
        if let Ok(entry) = link.entry(&id).await {
            warn_log(
                "oino run",
                &id,
                entry.log_error.as_deref(),
                entry.log_cut.as_ref(),
            );
        }
        return Ok(exit_byte(state.shell_status()));
    }
    // The result says it too; standard error is where a script's reader looks for trouble.
    warn_log(
        "oino run",
        &id,
        result.log_error.as_deref(),
        result.log_cut.as_ref(),
    );
    Ok(exit_byte(result.exit_status()))
}

/// Says on standard error that an entry's log could not be written (its output came from
/// memory, and some may be missing), or what its cap left out.
pub(crate) fn warn_log(
    command: &str,
    id: &str,
    log_error: Option<&str>,
    log_cut: Option<&crate::output::LogCut>,
) {
    if let Some(error) = log_error {
        say!("{command}: the log of {id} could not be written: {error}");
    } else if let Some(cut) = log_cut {
        say!("{command}: {id}: {cut}");
    }
}

/// An exit status as a process can return it.
#[must_use]
pub fn exit_byte(status: i32) -> u8 {
    u8::try_from(status & 0xff).unwrap_or(1)
}

/// Prints an entry's output from `since` on (as text, or slices as JSON lines); with `until_end`,
/// until it has ended and all is printed. Returns its state then.
pub async fn follow(
    link: &Link,
    key: &str,
    since: Option<u64>,
    until_end: bool,
    json: bool,
) -> anyhow::Result<crate::core::EntryState> {
    let from = match since {
        Some(since) => since,
        // A task's own output, or a call's whole.
        None => link.entry(key).await?.detach_offset,
    };
    let mut follower = link.follow(key, from);
    // Without `until_end`, what is there now.
    let until = (!until_end).then(tokio::time::Instant::now);
    while let crate::output::Followed::Output(slice) =
        follower.next(FOLLOW_READ_BYTES, until).await?
    {
        if json {
            let wire = crate::remote::protocol::Travel::to_wire(slice);
            print_text(&crate::inert::json(serde_json::to_string(&wire)?))?;
        } else {
            print_raw(&slice.text)?;
        }
    }
    Ok(link.entry(key).await?.state)
}

/// Writing to this command's own standard output failed: its reader left (`oino logs | head`),
/// or the output is full. Told apart from a server's socket failing, which is an error.
#[derive(Debug, thiserror::Error)]
#[error("writing the output: {0}")]
pub struct StdoutFailed(#[source] pub std::io::Error);

pub(crate) fn print_text(text: &str) -> Result<(), StdoutFailed> {
    print_raw(text)?;
    if !text.ends_with('\n') {
        print_raw("\n")?;
    }
    Ok(())
}

/// Writes to standard output; an error (a reader that left) goes to the caller, which stops.
pub(crate) fn print_raw(text: &str) -> Result<(), StdoutFailed> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(StdoutFailed)
}

/// Whether an error is only that this command's standard output was closed (`oino logs |
/// head`): a command then ends quietly, as `cat` and `rg` do. A broken pipe anywhere else (the
/// server's socket) is a failure, said as such.
pub(crate) fn output_closed(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<StdoutFailed>()
            .is_some_and(|StdoutFailed(err)| err.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Writes `bytes` to standard output; a reader that left early is no error.
fn print_or_report(command: &str, bytes: &[u8]) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => report(command, &StdoutFailed(err).into()),
    }
}

/// Says why a command failed, on standard error (never a panic if that is closed too), and
/// gives its exit status; a closed standard output is no failure.
pub(crate) fn report(command: &str, err: &anyhow::Error) -> ExitCode {
    if output_closed(err) {
        return ExitCode::SUCCESS;
    }
    say!("{command}: {err:#}{}", advice(err));
    failure_status(err)
}

/// What to do about a refusal, in this command line's words (the core says what is wrong).
fn advice(err: &anyhow::Error) -> String {
    match crate::link::refusal(err) {
        Some((crate::core::ErrorCode::NoSuchEntry, _)) => ": list them with `oino ls`".to_owned(),
        Some((_, data)) if data.left_by_server.is_some() => {
            let key = data.key.as_deref().unwrap_or("ID");
            format!("; `oino kill {}` ends it", crate::inert::escaped(key))
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;
