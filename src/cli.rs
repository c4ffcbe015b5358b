//! The command line: flags parsed by clap into plain structs, checked into a [`RunConfig`], then
//! run on the user's server (started when none runs), or on a core in this process with
//! `--embedded`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::link::Link;
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

mod complete;
mod man;
mod project;
mod remote;
mod run;
mod said;
mod typo;

use project::{
    DownArgs, StartArgs, UpArgs, apply_project, here_env, load_project, project_greeting,
    start_process, stop_project,
};

use crate::remote::protocol::Travel as _;
use crate::remote::protocol::requests as ask;
use run::{BadFlag, run_in_runtime, seconds};
pub use run::{OnInput, OnTimeout, RunArgs, RunConfig, run};

/// Exit status for bad arguments, as clap uses.
const EXIT_USAGE: u8 = 2;
/// Exit status after Ctrl-C, as shells report it.
const EXIT_INTERRUPTED: u8 = 130;
/// Raw bytes read per step while following a task.
const FOLLOW_READ_BYTES: usize = 256 * 1024;
/// The same through a transport (ssh), where each step's round trip costs more.
const FAR_READ_BYTES: usize = 1024 * 1024;

#[derive(Debug, Parser)]
#[command(
    name = "oino",
    version,
    override_usage = "oino [OPTIONS] [SUBCOMMAND | [--] COMMAND...]",
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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Commands to start as calls in the interface (a demo when none are given and the server
    /// has nothing to show).
    #[arg(value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// Host the processes in this interface instead of the server: quitting ends them.
    #[arg(long)]
    pub embedded: bool,
    /// The project file whose processes to start (default: oino.toml here, else
    /// process-compose.yaml, mprocs.yaml or a Procfile).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerChoice,
}

/// The subcommands; without one, `oino` opens its interface.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one command in a PTY and print its result text as an agent receives it.
    Run(RunArgs),
    /// Run the interface with no terminal, driven by a script (for tests).
    Headless(HeadlessArgs),
    /// The commands that ask a server: `server`, `ls`, `detach`, `logs` and the others.
    #[command(flatten)]
    Remote(remote::Command),
    /// Serve AI agents over MCP (stdio): their shell commands run as calls of the server.
    Mcp(McpArgs),
    /// This terminal onto a running call's or task's terminal: its screen, then its output live;
    /// keys go to it, and the detach key (Ctrl-A) leaves it running.
    Attach(AttachArgs),
    /// Start a process of the project file here (oino.toml, else process-compose.yaml,
    /// mprocs.yaml or a Procfile), even one with `autostart = false`, on the server.
    Start(StartArgs),
    /// Stop the project here (or the named processes and those that wait for them), each before
    /// those it waits for; nothing else on the server.
    Down(DownArgs),
    /// Start the project here (or the named processes and what they wait for); when it runs,
    /// apply its file: stop removed processes, restart changed ones, start added ones.
    Up(UpArgs),
    /// Print a completion script for a shell (see README: where to put it).
    Completions(CompletionsArgs),
    /// Print the manual page (roff): `oino man | man -l -`.
    Man,
}

/// `oino attach ID`: the entry, and the key that leaves it.
#[derive(Debug, Args)]
pub struct AttachArgs {
    /// A call id, task id or task name.
    #[arg(add = complete::entries())]
    pub id: String,
    /// The key that detaches: ctrl-a (default), ctrl-], f12, …
    #[arg(long, value_name = "KEY", default_value = "ctrl-a")]
    pub detach_key: String,
    /// The server that runs it.
    #[command(flatten)]
    pub server: ServerChoice,
}

/// `oino completions SHELL`.
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

/// `oino mcp`: the server the agent's calls run on, and when a long call detaches.
#[derive(Debug, Args)]
#[command(after_help = mcp_help())]
pub struct McpArgs {
    /// The server the agent's calls run on.
    #[command(flatten)]
    pub server: ServerChoice,
    /// Detach every bash call still running after SECS seconds into a background task (unless
    /// the call gives its own `detach_after_ms`): set it below the client's own request timeout
    /// (60 s in Codex), so that a long call returns instead of being cancelled and killed.
    #[arg(long, value_name = "SECS")]
    pub detach_after: Option<f64>,
}

/// `oino mcp --help`'s notes, naming the tools the bridge offers.
fn mcp_help() -> String {
    format!(
        "Register it in an agent as a stdio MCP server, e.g.\n  \
         claude mcp add oino -- oino mcp\n  \
         codex mcp add oino -- oino mcp\n\n\
         Tools: {}. The agent's commands appear in every oino attached to the same server \
         (`oino` in another terminal), where a key detaches one that would block the agent.",
        crate::mcp::tool_names().join(", ")
    )
}

/// Where the server is: `--socket`, else a session's socket (`-s`), else `OINO_SOCKET`; on
/// another machine with `--host`, or through a command with `--via`.
#[derive(Clone, Debug, Default, Args)]
pub struct ServerChoice {
    /// The server's socket (default: `$XDG_RUNTIME_DIR/oino/SESSION.sock`); with --host or
    /// --via, the socket on the far side.
    #[arg(long, value_name = "PATH", global = true)]
    pub socket: Option<PathBuf>,
    /// The session: a server of its own, at SESSION.sock.
    #[arg(short, long, value_name = "NAME", global = true)]
    pub session: Option<String>,
    /// The server of HOST, over ssh: `ssh -T HOST oino proxy` (ssh's own configuration, keys
    /// and agent apply). Nothing of oino listens on the network. The interface takes several,
    /// and lists this machine's calls above each host's.
    #[arg(long, value_name = "HOST", global = true)]
    pub host: Vec<String>,
    /// The server reached through COMMAND, whose standard input and output reach `oino proxy`
    /// on the far side: `--via 'docker exec -i dev oino proxy'`.
    #[arg(long, value_name = "COMMAND", global = true)]
    pub via: Vec<String>,
}

impl ServerChoice {
    /// The socket chosen on this machine: `--socket`, else the session's, else `OINO_SOCKET`,
    /// else the default session's.
    #[must_use]
    pub fn path(&self) -> PathBuf {
        crate::remote::socket::choose_socket(self.socket.clone(), self.session.as_deref())
    }

    /// Where the server is: this machine's socket, or the far side of `--host` or `--via`
    /// (with the session or socket named for that side).
    pub fn address(&self) -> anyhow::Result<crate::remote::address::Address> {
        use crate::remote::address::Address;
        let mut far = self.flag_addresses()?;
        match far.len() {
            0 => Ok(Address::Socket(self.path())),
            1 => Ok(far.remove(0)),
            _ => Err(BadFlag(
                "this command talks to one server: give one --host or --via (the interface, \
                 `oino` alone, lists several)"
                    .into(),
            )
            .into()),
        }
    }

    /// The far servers named by `--via` and `--host`, in that order (the settings read for
    /// `ssh_command` and `link_persist` only when one is named).
    pub fn flag_addresses(&self) -> anyhow::Result<Vec<crate::remote::address::Address>> {
        let settings = if self.is_here() {
            crate::core::settings::FarSettings::default()
        } else {
            crate::core::settings::FarSettings {
                hosts: Vec::new(),
                ..crate::core::settings::FarSettings::load()?
            }
        };
        self.far_addresses(&settings)
    }

    /// The far servers named by `--via` and `--host` (else by the `settings`' `hosts`), in that
    /// order, reached with the `settings`' `ssh_command`.
    pub fn far_addresses(
        &self,
        settings: &crate::core::settings::FarSettings,
    ) -> anyhow::Result<Vec<crate::remote::address::Address>> {
        use crate::remote::address::Address;
        if !self.via.is_empty() && (self.socket.is_some() || self.session.is_some()) {
            return Err(BadFlag(
                "--via runs its command as given: name the far side's session or socket in it \
                 (`--via '… oino proxy -s work'`), not with -s or --socket"
                    .into(),
            )
            .into());
        }
        let mut far = self
            .via
            .iter()
            .map(|via| Ok(Address::via(via)?.kept_ready(settings.link_persist)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let hosts = if self.is_here() {
            &settings.hosts
        } else {
            &self.host
        };
        if hosts.is_empty() {
            return Ok(far);
        }
        // -s and --socket name the far side's server when the hosts are given here; with the
        // settings' hosts, they name this machine's.
        let mut proxy = Vec::new();
        if let Some(socket) = self.socket.as_ref().filter(|_| !self.host.is_empty()) {
            proxy.extend(["--socket".to_owned(), socket.to_string_lossy().into_owned()]);
        }
        if let Some(session) = self.session.as_ref().filter(|_| !self.host.is_empty()) {
            proxy.extend(["--session".to_owned(), session.clone()]);
        }
        for host in hosts {
            let address = Address::ssh(host, settings.ssh_command.as_deref(), &proxy)?;
            far.push(address.kept_ready(settings.link_persist));
        }
        Ok(far)
    }

    /// This machine's socket beside far hosts: with `--host`, -s and --socket name the far
    /// side's server, so this machine's is the one `OINO_SOCKET` (else the default) names.
    #[must_use]
    pub fn path_here(&self) -> PathBuf {
        if self.host.is_empty() {
            self.path()
        } else {
            crate::remote::socket::choose_socket(None, None)
        }
    }

    /// Whether the server is on this machine.
    #[must_use]
    pub fn is_here(&self) -> bool {
        self.host.is_empty() && self.via.is_empty()
    }
}

#[derive(Debug, Args)]
#[command(after_help = "Script lines:\n  \
                        run [--id ID] [--title TITLE] COMMAND\n  \
                        \x20                              start a call (TITLE names it in the list)\n  \
                        project FILE                   start a project file's processes\n  \
                        key KEY                        press a key: d, enter, esc, ctrl-a, up, pgup, f5\n  \
                        type TEXT                      type text\n  \
                        wait-for TEXT [--timeout S]    wait until the screen shows TEXT (10 s)\n  \
                        wait-match REGEX [--timeout S] wait until a line of the screen matches\n  \
                        wait-exit ID [--timeout S]     wait until a call or task ends\n  \
                        resize COLSxROWS               resize the terminal\n  \
                        snapshot                       print the screen\n  \
                        picture                        print the screen as an SVG picture (colours kept)\n  \
                        freeze-clock [MINUTES]         times stand still at MINUTES old; no pids, cpu, memory\n  \
                        result ID                      wait for a call's result and print it\n  \
                        # ...                          a comment")]
/// `oino headless`: a script drives the interface in a pretend terminal.
pub struct HeadlessArgs {
    /// Attach to the server (started if needed) instead of hosting the processes here.
    #[arg(long)]
    pub server: bool,
    /// The server, with `--server`.
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
pub(crate) fn demo_commands() -> Vec<(Option<String>, String)> {
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

/// The program: parse, run, exit status.
#[must_use]
pub fn main() -> ExitCode {
    complete::answer_if_asked();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = Cli::parse_from(&args);
    if let Err(code) = refuse_typo(&cli, &args) {
        return code;
    }
    if let Err(code) = refuse_misplaced_flags(&cli) {
        return code;
    }
    if let Err(code) = check_settings(cli.command.as_ref()) {
        return code;
    }
    match cli.command {
        Some(Command::Attach(args)) => attach(&args),
        Some(Command::Start(args)) => match runtime() {
            Ok(runtime) => runtime.block_on(start_process(args)),
            Err(code) => code,
        },
        Some(Command::Down(args)) => match runtime() {
            Ok(runtime) => runtime.block_on(stop_project(args)),
            Err(code) => code,
        },
        Some(Command::Up(args)) => match runtime() {
            Ok(runtime) => runtime.block_on(apply_project(args)),
            Err(code) => code,
        },
        Some(Command::Completions(args)) => completions(&args),
        Some(Command::Man) => man(),
        Some(Command::Run(args)) => match args.into_config() {
            Ok(config) => run_in_runtime(config),
            Err(err) => {
                say!("oino run: {err:#}");
                ExitCode::from(EXIT_USAGE)
            }
        },
        Some(Command::Headless(args)) => headless(&args),
        Some(Command::Mcp(args)) => mcp(&args),
        Some(Command::Remote(command)) => remote_command(command),
        None => interface(cli),
    }
}

/// Refuses a first word that is no command but a subcommand mistyped (`oino lss`).
fn refuse_typo(cli: &Cli, args: &[std::ffi::OsString]) -> Result<(), ExitCode> {
    if cli.command.is_some() {
        return Ok(());
    }
    let command = <Cli as clap::CommandFactory>::command();
    let subcommands: Vec<&str> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(clap::Command::get_name)
        .collect();
    if let Some((word, meant)) = typo::typo(&cli.commands, args, &subcommands) {
        say!(
            "oino: no subcommand `{word}`: did you mean `{meant}`? (`oino -- {word}` runs it as a \
             command)"
        );
        return Err(ExitCode::from(EXIT_USAGE));
    }
    Ok(())
}

/// Refuses the interface's own flags before a subcommand, which opens no interface.
fn refuse_misplaced_flags(cli: &Cli) -> Result<(), ExitCode> {
    if cli.config.is_some() && cli.command.is_some() {
        say!("oino: --config before a subcommand opens no interface; `oino start --config FILE …`");
        return Err(ExitCode::from(EXIT_USAGE));
    }
    if cli.embedded && cli.command.is_some() {
        say!(
            "oino: --embedded before a subcommand opens no interface; `oino run --embedded …` \
             runs a command in this process, and `oino --embedded -- COMMAND` opens the \
             interface on a call named like a subcommand"
        );
        return Err(ExitCode::from(EXIT_USAGE));
    }
    Ok(())
}

/// Stops a subcommand when the settings are wrong, saying where. The interface (no subcommand)
/// starts with the defaults and shows the mistake itself; completions and the manual read none.
fn check_settings(command: Option<&Command>) -> Result<(), ExitCode> {
    if matches!(command, None | Some(Command::Completions(_) | Command::Man)) {
        return Ok(());
    }
    crate::interface::app::settings::Config::load().map_err(|err| {
        say!("oino: the settings are wrong: {err}");
        ExitCode::from(EXIT_USAGE)
    })?;
    Ok(())
}

/// `oino completions SHELL`.
fn completions(args: &CompletionsArgs) -> ExitCode {
    match complete::script(args.shell) {
        Ok(script) => print_or_report("oino completions", &script),
        Err(err) => report("oino completions", &err),
    }
}

/// `oino man`.
fn man() -> ExitCode {
    match man::page() {
        Ok(page) => print_or_report("oino man", &page),
        Err(err) => report("oino man", &err),
    }
}

/// `oino mcp`.
fn mcp(args: &McpArgs) -> ExitCode {
    match (
        args.detach_after
            .map(|value| seconds("--detach-after", value))
            .transpose()
            .and_then(|detach_after| Ok((detach_after, args.server.address()?))),
        runtime(),
    ) {
        (Err(err), _) => report("oino mcp", &err),
        (Ok((detach_after, address)), Ok(runtime)) => {
            let served = runtime.block_on(crate::mcp::serve(address, detach_after));
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
    }
}

/// The subcommands that reach a server: `oino server`, `oino ls`, …
fn remote_command(command: remote::Command) -> ExitCode {
    match &command {
        // Before the runtime opens any: a server or a keeper holds none of its starter's.
        remote::Command::Server(args) if args.foreground => {
            crate::remote::server::close_inherited_descriptors();
        }
        remote::Command::KeepLink(_) => crate::remote::server::close_inherited_descriptors(),
        _ => {}
    }
    let runtime = if matches!(command, remote::Command::Server(_)) {
        runtime()
    } else {
        client_runtime()
    };
    match runtime {
        Ok(runtime) => {
            let code = runtime.block_on(remote::main(command));
            // A read of standard input (the proxy's) cannot be cancelled: no waiting for it.
            runtime.shutdown_background();
            code
        }
        Err(code) => code,
    }
}

/// Where the interface's COMMANDs run: on the one host `--host` or `--via` names (linked now:
/// they were asked to run there), else here.
async fn commands_host(
    server: &ServerChoice,
    far: &[crate::remote::address::Address],
    commands: &[(Option<String>, String)],
) -> anyhow::Result<Option<Link>> {
    if commands.is_empty() || server.is_here() {
        return Ok(None);
    }
    match far {
        [one] => Ok(Some(Link::remote(one).await?)),
        _ => anyhow::bail!(
            "COMMANDs run on one machine: give one --host or --via with them, or start them \
             from the interface on an entry of the host"
        ),
    }
}

/// What the interface opens on: the server (or this process) with `commands`; given none, the
/// server's calls, or when there are none, the demo in this process, so that it ends with the
/// interface and leaves no server behind.
async fn interface_link(
    socket: Option<&crate::remote::address::Address>,
    commands: Vec<(Option<String>, String)>,
) -> anyhow::Result<(Link, Vec<(Option<String>, String)>)> {
    if !commands.is_empty() {
        return Ok((Link::open_with(socket, core_config()).await?, commands));
    }
    // A server elsewhere is what was asked for, even with nothing on it: its failure is said,
    // never answered with a demo here.
    if let Some(far @ crate::remote::address::Address::Through(_)) = socket {
        return Ok((Link::remote(far).await?, commands));
    }
    // A server that answers (none is started for the look) and shows something.
    if let Some(Ok(link)) = match socket {
        Some(socket) => Some(Link::connect(socket).await),
        None => None,
    } {
        if !link.ask(ask::List {}).await?.is_empty() {
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
    let logs = crate::core::settings::LogSettings::load().unwrap_or_default();
    // Processes of a core in this process (an interface with --embedded, `run --embedded`) that
    // outlive it, killed, are found by the next server of the socket this user would use; a
    // server tags its calls with its own socket.
    let socket = crate::remote::socket::choose_socket(None, None);
    crate::core::CoreConfig {
        log_retention: logs.retention,
        log_cap: logs.cap,
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
        let link = Link::connect(&args.server.address()?).await?;
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
    // A project file is this machine's: the interface on another machine's server shows that
    // server's entries.
    let project = if commands.is_empty() && cli.server.is_here() {
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
        // The settings' hosts, when none is named here; a mistake in the file is shown by the
        // interface, which then lists this machine alone (and reaches a --host with plain ssh).
        let settings = crate::core::settings::FarSettings::load().unwrap_or_default();
        let far = cli.server.far_addresses(&settings)?;
        if cli.embedded && !commands.is_empty() && !cli.server.is_here() {
            anyhow::bail!(
                "--embedded runs COMMANDs in this process, here: give them without --host or \
                 --via, or without --embedded to run them there"
            );
        }
        let commands_on = commands_host(&cli.server, &far, &commands).await?;
        let socket = (!cli.embedded)
            .then(|| {
                if far.is_empty() {
                    cli.server.address()
                } else {
                    Ok(crate::remote::address::Address::Socket(
                        cli.server.path_here(),
                    ))
                }
            })
            .transpose()?;
        let (link, commands, greeting) = if let Some(project) = project {
            let link = Link::open_with(socket.as_ref(), core_config()).await?;
            let started = link
                .ask(ask::Project {
                    project: project.clone().to_wire(),
                    env: here_env(),
                    only: None,
                })
                .await?;
            (link, Vec::new(), Some(project_greeting(&project, &started)))
        } else if far.is_empty() {
            let (link, commands) = interface_link(socket.as_ref(), commands).await?;
            (link, commands, None)
        } else {
            // Far hosts beside it: this machine's own server, never a demo.
            let link = Link::open_with(socket.as_ref(), core_config()).await?;
            (link, commands, None)
        };
        let fleet = crate::interface::fleet::Fleet::new(link, far)?;
        crate::interface::terminal::run(fleet, commands, commands_on, greeting).await
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
    build_runtime(tokio::runtime::Builder::new_multi_thread())
}

/// A runtime on this thread alone, for a command that only talks to the server: it starts
/// without threads to spawn or CPU limits to read, a sizeable part of a short command's time.
fn client_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    build_runtime(tokio::runtime::Builder::new_current_thread())
}

fn build_runtime(
    mut builder: tokio::runtime::Builder,
) -> Result<tokio::runtime::Runtime, ExitCode> {
    builder.enable_all().build().map_err(|err| {
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
        // Far hosts are listed beside this machine's server (or a core here without --server).
        let far = args.choice.flag_addresses()?;
        let socket = args
            .server
            .then(|| crate::remote::address::Address::Socket(args.choice.path_here()));
        let link = Link::open(socket.as_ref()).await?;
        let fleet = crate::interface::fleet::Fleet::new(link, far)?;
        crate::interface::headless::run(args.size, script, fleet, &mut stdout).await
    });
    match played {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            say!("oino headless: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The exit status for a failure, decided by its code: 2 when what was asked must change (a
/// bad name, an unknown id, a command too long), 1 when it failed otherwise.
pub(crate) fn failure_status(err: &anyhow::Error) -> ExitCode {
    use crate::core::ErrorCode::{
        AlreadyTask, BadRequest, DuplicateId, DuplicateName, Forbidden, Forgotten, InvalidName,
        NoSuchEntry, NotRunning, TooLarge, Version,
    };
    if err.chain().any(|cause| {
        cause.is::<BadFlag>()
            || cause.is::<crate::paths::UnsafePath>()
            || cause.is::<crate::remote::client::NotOino>()
    }) {
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
pub(crate) fn exit_byte(status: i32) -> u8 {
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
        // A task's own output (what came before its detach went to whoever waited for the
        // call), or a call's whole.
        None => {
            link.ask(ask::Entry {
                key: String::from(key),
            })
            .await?
            .detach_offset
        }
    };
    let mut follower = link.follow(key, from);
    let step = if link.is_elsewhere() {
        FAR_READ_BYTES
    } else {
        FOLLOW_READ_BYTES
    };
    // Without `until_end`, what is there now.
    let until = (!until_end).then(tokio::time::Instant::now);
    while let crate::output::Followed::Output(slice) = follower.next(step, until).await? {
        if json {
            let wire = crate::remote::protocol::Travel::to_wire(slice);
            print_text(&crate::inert::json(serde_json::to_string(&wire)?))?;
        } else {
            print_raw(&slice.text)?;
        }
    }
    Ok(link
        .ask(ask::Entry {
            key: String::from(key),
        })
        .await?
        .state)
}

/// Writing to this command's own standard output failed: its reader left (`oino logs | head`),
/// or the output is full. Told apart from a server's socket failing, which is an error.
#[derive(Debug, thiserror::Error)]
#[error("writing the output: {0}")]
pub(crate) struct StdoutFailed(#[source] pub std::io::Error);

/// Prints `text` as lines: a newline ends it if it has none. No text prints nothing (a call
/// that wrote nothing leaves no empty line).
pub(crate) fn print_text(text: &str) -> Result<(), StdoutFailed> {
    print_raw(text)?;
    if !text.is_empty() && !text.ends_with('\n') {
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
            // Escaped with the rest of the message, by `say!`.
            let key = data.key.as_deref().unwrap_or("ID");
            format!("; `oino kill {key}` ends it")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;
