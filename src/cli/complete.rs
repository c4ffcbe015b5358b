//! Completion for bash, zsh, fish, elvish and PowerShell by `clap_complete`'s engine: the script
//! `oino completions SHELL` prints calls `oino` back with `OINO_COMPLETE` set and the words
//! typed so far; the candidates for a call or task come from the running server (none is
//! started for them), and those for a project's process from the project file here.

use std::time::Duration;

use clap::CommandFactory;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};

/// The variable that tells `oino` to complete the words after `--` instead of running.
pub(crate) const COMPLETE_VAR: &str = "OINO_COMPLETE";

/// How long completion waits for the server: a shell must not hang on a Tab.
const SERVER_WAIT: Duration = Duration::from_millis(500);

/// When a completion script called: prints the candidates and exits.
pub(crate) fn answer_if_asked() {
    clap_complete::env::CompleteEnv::with_factory(super::Cli::command)
        .var(COMPLETE_VAR)
        .complete();
}

/// The script that hooks the completion into `shell`.
pub(crate) fn script(shell: clap_complete::Shell) -> anyhow::Result<Vec<u8>> {
    let name = shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let completer = shells
        .completer(&name)
        .ok_or_else(|| anyhow::anyhow!("no completion for {name}"))?;
    let mut out = Vec::new();
    // `oino` by name: the one on the PATH answers, wherever it is installed.
    completer.write_registration(COMPLETE_VAR, "oino", "oino", "oino", &mut out)?;
    Ok(out)
}

/// Completes a call's or task's id or name from the server.
pub(crate) fn entries() -> ArgValueCandidates {
    ArgValueCandidates::new(entry_candidates)
}

/// Completes the name of a process of the project file here.
pub(crate) fn processes() -> ArgValueCandidates {
    ArgValueCandidates::new(process_candidates)
}

/// The ids, task ids and task names of the server's calls and tasks (its newest runs of a
/// project's processes), each with its command as help; none when no server answers.
fn entry_candidates() -> Vec<CompletionCandidate> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    // The far server the line names, else the socket of the environment (the rest of the line
    // is not parsed yet).
    let address = match far_in_line(std::env::args()) {
        Some(Ok(far)) => far,
        Some(Err(_)) => return Vec::new(),
        None => crate::remote::address::Address::Socket(crate::remote::socket::choose_socket(
            None, None,
        )),
    };
    let listed = runtime.block_on(async {
        tokio::time::timeout(SERVER_WAIT, async {
            let client = crate::remote::client::Client::connect(&address).await?;
            client.ask(crate::remote::protocol::requests::List {}).await
        })
        .await
    });
    let Ok(Ok(entries)) = listed else {
        return Vec::new();
    };
    let mut candidates = Vec::new();
    for entry in entries
        .iter()
        .filter(|entry| entry.project.as_ref().is_none_or(|mark| mark.latest))
    {
        let help = || Some(crate::inert::escaped(&entry.command).into_owned().into());
        let keys = [Some(&entry.id), entry.task_id.as_ref(), entry.name.as_ref()];
        for key in keys.into_iter().flatten() {
            candidates.push(CompletionCandidate::new(key).help(help()));
        }
    }
    candidates
}

/// The far server the words being completed name with `--host` or `--via` (its ssh never
/// prompts: a Tab answers or gives nothing); `None` when they name none.
fn far_in_line(
    words: impl Iterator<Item = String>,
) -> Option<anyhow::Result<crate::remote::address::Address>> {
    let words: Vec<String> = words.collect();
    let value = |flag: &str| {
        words.iter().enumerate().find_map(|(at, word)| {
            if word == flag {
                words.get(at + 1).cloned()
            } else {
                word.strip_prefix(&format!("{flag}=")).map(str::to_owned)
            }
        })
    };
    let choice = super::ServerChoice {
        via: value("--via").into_iter().collect(),
        host: value("--host").into_iter().collect(),
        ..super::ServerChoice::default()
    };
    if choice.is_here() {
        return None;
    }
    Some(
        choice
            .address()
            .map(crate::remote::address::Address::without_terminal),
    )
}

/// The processes of the project file here, each with its command as help.
fn process_candidates() -> Vec<CompletionCandidate> {
    let Ok(Some(project)) = super::project::load_project(None) else {
        return Vec::new();
    };
    project
        .processes
        .iter()
        .map(|process| {
            CompletionCandidate::new(&process.name).help(Some(
                crate::inert::escaped(&process.cmd).into_owned().into(),
            ))
        })
        .collect()
}
