//! The project commands: `oino start NAME`, `oino up`, `oino down`, and what the interface
//! needs to open on a project.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{EXIT_USAGE, ServerChoice, report};
use crate::core::CallRequest;
use crate::link::Link;
use crate::remote::protocol::Travel;
use crate::remote::protocol::requests as ask;

/// `oino start NAME`: a process of a project file.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// The process's name in the project file.
    #[arg(add = super::complete::processes())]
    pub name: String,
    /// The project file (default: oino.toml here, else process-compose.yaml, mprocs.yaml or a
    /// Procfile).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The server that runs it.
    #[command(flatten)]
    pub server: ServerChoice,
}

/// `oino down [NAME...]`: the project, or some of its processes, stopped.
#[derive(Debug, Args)]
pub struct DownArgs {
    /// Processes to stop, with those that wait for them (default: all of the project's).
    #[arg(add = super::complete::processes())]
    pub names: Vec<String>,
    /// The project file (default: oino.toml here, else process-compose.yaml, mprocs.yaml or a
    /// Procfile).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The server that runs it.
    #[command(flatten)]
    pub server: ServerChoice,
}

/// `oino up [NAME...]`: the project started, or its file applied.
#[derive(Debug, Args)]
pub struct UpArgs {
    /// Processes to start or apply, with what they wait for (default: the whole project).
    #[arg(add = super::complete::processes())]
    pub names: Vec<String>,
    /// The project file (default: oino.toml here, else process-compose.yaml, mprocs.yaml or a
    /// Procfile).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print what was done as JSON, for scripts.
    #[arg(long)]
    pub json: bool,
    /// The server that runs it.
    #[command(flatten)]
    pub server: ServerChoice,
}

/// The project file given, else the one of this folder (oino.toml, else process-compose.yaml or
/// .yml, mprocs.yaml, a Procfile).
pub(super) fn load_project(
    config: Option<&std::path::Path>,
) -> Result<Option<crate::core::project::Project>, crate::core::project::ProjectError> {
    if let Some(file) = config {
        return crate::core::project::Project::load(file).map(Some);
    }
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    crate::core::project::Project::find(&here)
}

/// This process's environment, as calls started from here get it.
pub(super) fn here_env() -> Vec<(String, String)> {
    CallRequest::default()
        .from_here()
        .map(|request| request.env)
        .unwrap_or_default()
}

/// What the interface says first about a project it started.
pub(super) fn project_greeting(
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
    if !started.done.is_empty() {
        parts.push(format!(
            "done already (`oino up` runs them again): {}",
            started.done.join(", ")
        ));
    }
    if !started.not_started.is_empty() {
        parts.push(format!(
            "not started (autostart = false; `oino start NAME`): {}",
            started.not_started.join(", ")
        ));
    }
    parts.extend(started.left_running.iter().map(left_running));
    parts.extend(
        project
            .ignored
            .iter()
            .map(|ignored| format!("ignored: {ignored}")),
    );
    format!("{name}: {}", parts.join("; "))
}

/// Why a process was not started: its run of a server that died still runs.
fn left_running((name, orphan): &(String, String)) -> String {
    format!(
        "{name}: not started: its earlier run still runs as {orphan} (`oino kill {orphan}`, \
         then start it again)"
    )
}

/// The project file `config`, else the one in this folder; a usage error, said, without one.
fn project_here(
    command: &str,
    config: Option<&std::path::Path>,
) -> Result<crate::core::project::Project, ExitCode> {
    match load_project(config) {
        Ok(Some(project)) => {
            // What the file says that oino does not take is never dropped without a word.
            for ignored in &project.ignored {
                say!("ignored: {ignored}");
            }
            Ok(project)
        }
        Ok(None) => {
            say!(
                "{command}: no oino.toml, process-compose.yaml, mprocs.yaml or Procfile in this \
                 folder: run it in the project's folder, or give --config FILE"
            );
            Err(ExitCode::from(EXIT_USAGE))
        }
        Err(err) => {
            say!("{command}: {err}");
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

/// `oino start NAME`: one process of the project here, on the server.
pub(super) async fn start_process(args: StartArgs) -> ExitCode {
    let project = match project_here("oino start", args.config.as_deref()) {
        Ok(project) => project,
        Err(code) => return code,
    };
    let started = async {
        let link = Link::open(Some(&args.server.address()?)).await?;
        Ok::<_, anyhow::Error>(
            link.ask(ask::Project {
                project: project.clone().to_wire(),
                env: here_env(),
                only: Some(args.name.clone()),
            })
            .await?,
        )
    };
    match started.await {
        Ok(started) if started.started.contains(&args.name) => {
            say!("started {} as a task named {}", args.name, args.name);
            // What it waits for and started with it, if anything did.
            let with: Vec<&str> = started
                .started
                .iter()
                .filter(|name| **name != args.name)
                .map(String::as_str)
                .collect();
            if !with.is_empty() {
                say!("started too, as it waits for them: {}", with.join(", "));
            }
            ExitCode::SUCCESS
        }
        Ok(started) if !started.left_running.is_empty() => {
            for left in &started.left_running {
                say!("{}", left_running(left));
            }
            ExitCode::FAILURE
        }
        Ok(_) => {
            say!("{} runs already", args.name);
            ExitCode::SUCCESS
        }
        Err(err) => report("oino start", &err),
    }
}

/// `oino down [NAME...]`: the project here stopped on the server, or the named processes.
pub(super) async fn stop_project(args: DownArgs) -> ExitCode {
    let project = match project_here("oino down", args.config.as_deref()) {
        Ok(project) => project,
        Err(code) => return code,
    };
    let stopped = async {
        let link = Link::open(Some(&args.server.address()?)).await?;
        Ok::<_, anyhow::Error>(
            link.ask(ask::Down {
                project: project.clone().to_wire(),
                only: args.names,
            })
            .await?,
        )
    };
    match stopped.await {
        Ok(outcome) => {
            for name in &outcome.stopped {
                say!("stopped {name}");
            }
            for name in &outcome.not_running {
                say!("{name} was not running");
            }
            ExitCode::SUCCESS
        }
        Err(err) => report("oino down", &err),
    }
}

/// `oino up [NAME...]`: the project here started, or its file applied when it runs; what was
/// done to each process, one a line.
pub(super) async fn apply_project(args: UpArgs) -> ExitCode {
    let project = match project_here("oino up", args.config.as_deref()) {
        Ok(project) => project,
        Err(code) => return code,
    };
    let applied = async {
        let link = Link::open(Some(&args.server.address()?)).await?;
        Ok::<_, anyhow::Error>(
            link.ask(ask::Up {
                project: project.clone().to_wire(),
                env: here_env(),
                only: args.names,
            })
            .await?,
        )
    };
    match applied.await {
        Ok(applied) => {
            if args.json {
                return match super::remote::print_json(&applied.to_wire()) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(err) => report("oino up", &err),
                };
            }
            for process in &applied.processes {
                let did = process.did.word().replace('_', " ");
                if let Some(why) = &process.why {
                    say!("{}: {did} ({why})", process.name);
                } else {
                    say!("{}: {did}", process.name);
                }
            }
            ExitCode::SUCCESS
        }
        Err(err) => report("oino up", &err),
    }
}
