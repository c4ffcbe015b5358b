//! `oino run`: its flags, and one call run to its result (detached when asked, followed after).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::call::{CallOptions, CallResult, TimeoutPolicy};
use crate::core::{CallRequest, CoreError, MAX_COMMAND_BYTES};
use crate::link::{DetachWhen, Link};
use crate::pty::TermSize;

use super::{
    ServerChoice, client_runtime, exit_byte, follow, print_text, report, runtime, stop_signal,
    warn_log,
};
use crate::remote::protocol::requests as ask;

/// What `--on-timeout` does once the timeout passes.
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

/// `oino run`: its flags and its command, as given.
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
    /// Cap of the result text (at most 4 MiB: a larger one is taken as 4 MiB); beyond it the
    /// head and tail are kept, and the whole output is in the call's log.
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
    /// The server that runs the call (unless `--embedded`).
    #[command(flatten)]
    pub server: ServerChoice,
    /// The command, run by `bash -c` (several words are joined by spaces).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// A `run` whose arguments were checked.
#[derive(Debug)]
pub struct RunConfig {
    /// The call: its command, folder, environment and options.
    pub request: CallRequest,
    /// The name of the task it becomes if it is detached.
    pub name: Option<String>,
    /// Detach it once it has run this long.
    pub detach_after: Option<Duration>,
    /// Detach it as soon as a line of output matches.
    pub detach_on: Option<regex::Regex>,
    /// After a detach, print the task's output until it ends.
    pub follow: bool,
    /// The server, or `None` to run in this process.
    pub socket: Option<crate::remote::address::Address>,
    /// Print the result as JSON.
    pub json: bool,
}

/// A flag's value that cannot be used: what to change, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadFlag(pub(crate) String);

pub(crate) fn seconds(flag: &str, value: f64) -> anyhow::Result<Duration> {
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
    pub(crate) fn into_config(self) -> anyhow::Result<RunConfig> {
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
            socket: if self.embedded {
                // In this process: a far server would silently not be the one that runs it.
                if !self.server.is_here() {
                    return Err(BadFlag(
                        "--embedded runs the call in this process, here: not with --host or \
                         --via"
                            .into(),
                    )
                    .into());
                }
                None
            } else {
                Some(self.server.address()?)
            },
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

pub(crate) fn run_in_runtime(config: RunConfig) -> ExitCode {
    // A call on the server needs no threads here; one in this process has its core here.
    let runtime = if config.socket.is_some() {
        client_runtime()
    } else {
        runtime()
    };
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    match runtime.block_on(run(config)) {
        Ok(status) => ExitCode::from(status),
        Err(err) => report("oino run", &err),
    }
}

/// Runs one call, on the server or in this process; returns the exit status.
pub async fn run(mut config: RunConfig) -> anyhow::Result<u8> {
    let link = Link::open(config.socket.as_ref()).await?;
    config.request.id = Some(format!("run-{}", std::process::id()));
    // The id the call got, once it started: a signal ends it wherever it runs. Once it is a
    // task being followed, the task it became: a signal then ends only the following.
    let started = std::sync::OnceLock::new();
    let followed = std::sync::OnceLock::new();
    let stop = stop_signal()?;
    let outcome = tokio::select! {
        // The signal first: Ctrl-C also ends a transport (ssh) in this terminal's process
        // group, and the link it drops must not hide the kill the signal asks for.
        biased;
        status = stop => {
            if let Some(task) = followed.get() {
                say!(
                    "oino run: stopped following task {task}; it keeps running (`oino kill \
                     {task}` ends it)"
                );
            } else if let Some(id) = started.get() {
                // Ctrl-C ends the command, as it would without oino. One not started yet ends
                // as this client leaves.
                let _ = link.ask(ask::Kill { key: String::from(id) }).await;
            }
            Ok(status)
        }
        outcome = run_call(&link, config, &started, &followed) => outcome,
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
    let (id, result) = link.run_unique(link.from_here(config.request)?).await?;
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
        let from = link
            .ask(ask::Entry {
                key: String::from(&id),
            })
            .await?
            .detach_offset;
        let state = follow(link, &id, Some(from), true, false).await?;
        // What the log went through while followed.
        if let Ok(entry) = link
            .ask(ask::Entry {
                key: String::from(&id),
            })
            .await
        {
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
