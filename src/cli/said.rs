//! The one line each command says about what it did, made from what the server answered: plain
//! functions of the entries and states, so that the words are tested without a server. They
//! go to standard error through `say!`, which escapes them.

use crate::core::{EntryInfo, EntryKind, EntryState, Killed};

/// An entry as `oino ls` names it: its task name or title, else its id.
#[must_use]
pub(crate) fn shown_name(entry: &EntryInfo) -> &str {
    entry
        .name
        .as_deref()
        .or(entry.title.as_deref())
        .unwrap_or(&entry.id)
}

/// How an entry ended, in a few words: `exited 3`, `killed by TERM`.
#[must_use]
pub(crate) fn how_it_ended(state: EntryState) -> String {
    match state {
        EntryState::Killed { signal } => format!("killed by {}", signal_name(signal)),
        EntryState::Orphaned { server_pid } => {
            format!("left running by a server that died, pid {server_pid}")
        }
        state => format!("{state:#}"),
    }
}

/// A signal's short name (`TERM`), or its number.
fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal).map_or_else(
        |_| format!("signal {signal}"),
        |name| name.as_str().trim_start_matches("SIG").to_owned(),
    )
}

/// What `oino kill` did to `name`, which ran until it was asked: its state once killed.
#[must_use]
pub(crate) fn killed(name: &str, killed: &Killed) -> String {
    let rest = killed.and_the_rest();
    match killed.state {
        // TERM and HUP go together (HUP is what a closed terminal sends); KILL after the grace.
        EntryState::Killed { signal: 9 } => {
            format!("killed `{name}`{rest} (KILL: it outlived TERM)")
        }
        EntryState::Killed { .. } => format!("killed `{name}` (TERM){rest}"),
        EntryState::Running => format!("`{name}` still runs: it outlived TERM and KILL"),
        state => format!("ended `{name}` with TERM ({}){rest}", how_it_ended(state)),
    }
}

/// What `oino kill` says of `name`, which had ended before it was asked.
#[must_use]
pub(crate) fn had_ended(name: &str, state: EntryState) -> String {
    format!("`{name}` had ended already ({})", how_it_ended(state))
}

/// What `oino kill-server` ended: the calls and tasks that ran when it was asked.
#[must_use]
pub(crate) fn server_stopped(entries: &[EntryInfo]) -> String {
    let running = |kind| {
        entries
            .iter()
            .filter(|entry| entry.kind == kind && entry.state.is_running())
            .count()
    };
    let counted = |count: usize, one: &str| match count {
        0 => None,
        1 => Some(format!("1 {one}")),
        count => Some(format!("{count} {one}s")),
    };
    let parts: Vec<String> = [
        counted(running(EntryKind::Call), "call"),
        counted(running(EntryKind::Task), "task"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "the server stopped (nothing ran)".to_owned()
    } else {
        format!("ended {}; the server stopped", parts.join(" and "))
    }
}

/// Seconds as a person writes them: `1`, `0.5`.
#[must_use]
pub(crate) fn seconds(value: f64) -> String {
    format!("{value}")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn entry(kind: EntryKind, state: EntryState) -> EntryInfo {
        use crate::remote::protocol::requests::{self, examples::Example};
        EntryInfo {
            kind,
            state,
            ..requests::Entry::example().1
        }
    }

    #[test]
    fn each_end_is_said_in_a_few_words() {
        let killed_with = |state, processes| {
            let name = "web".to_owned();
            killed(
                "web",
                &Killed {
                    name,
                    state,
                    processes,
                },
            )
        };
        assert_eq!(
            killed_with(EntryState::Killed { signal: 15 }, 1),
            "killed `web` (TERM)"
        );
        assert_eq!(
            killed_with(EntryState::Killed { signal: 1 }, 4),
            "killed `web` (TERM) and 3 processes"
        );
        assert_eq!(
            killed_with(EntryState::Killed { signal: 15 }, 2),
            "killed `web` (TERM) and 1 process"
        );
        assert_eq!(
            killed_with(EntryState::Killed { signal: 9 }, 3),
            "killed `web` and 2 processes (KILL: it outlived TERM)"
        );
        assert_eq!(
            killed_with(EntryState::Exited { code: 0 }, 1),
            "ended `web` with TERM (exited 0)"
        );
        assert_eq!(
            had_ended("run-770", EntryState::Exited { code: 0 }),
            "`run-770` had ended already (exited 0)"
        );
        assert_eq!(
            had_ended("c2", EntryState::Killed { signal: 15 }),
            "`c2` had ended already (killed by TERM)"
        );
        assert_eq!(seconds(1.0), "1");
        assert_eq!(seconds(0.25), "0.25");
    }

    #[test]
    fn kill_server_counts_what_ran() {
        let running = EntryState::Running;
        let ended = EntryState::Exited { code: 0 };
        let entries = [
            entry(EntryKind::Call, running),
            entry(EntryKind::Call, running),
            entry(EntryKind::Call, ended),
            entry(EntryKind::Task, running),
        ];
        assert_eq!(
            server_stopped(&entries),
            "ended 2 calls and 1 task; the server stopped"
        );
        assert_eq!(
            server_stopped(&entries[2..]),
            "ended 1 task; the server stopped"
        );
        assert_eq!(server_stopped(&[]), "the server stopped (nothing ran)");
    }
}
