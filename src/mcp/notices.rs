//! End notices: the end of each task this bridge started or read is told to the agent once, in
//! the result of its next tool call however much later that comes (and as a log message the
//! moment it happens, for clients that show those).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::core::EntryInfo;

/// The tasks this bridge started or read, by entry id, and what it has said of their end.
#[derive(Default)]
pub(crate) struct Watched {
    entries: Mutex<HashMap<String, Seen>>,
}

#[derive(Default)]
struct Seen {
    /// A tool result said it ended.
    told: bool,
    /// A log message said it ended.
    logged: bool,
}

impl Watched {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Seen>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// From now on, the end of entry `id` is told.
    pub fn watch(&self, id: &str) {
        self.entries().entry(id.to_owned()).or_default();
    }

    /// A result said that entry `id` ended (a read or a kill of it): no notice is owed.
    pub fn told(&self, id: &str) {
        self.entries().entry(id.to_owned()).or_default().told = true;
    }

    /// Whether this bridge started or read entry `id`.
    pub(crate) fn is_watched(&self, id: &str) -> bool {
        self.entries().contains_key(id)
    }

    /// Whether an end may still be owed.
    pub(crate) fn any_untold(&self) -> bool {
        self.entries().values().any(|seen| !seen.told)
    }

    /// The notices owed for `listed` (the server's entries): each watched entry that ended and
    /// was not told yet, now told, but the one `except` names (by id, task id or name), which
    /// stays owed. Entries the server no longer lists are forgotten.
    pub fn notices(&self, listed: &[EntryInfo], except: Option<&str>) -> Vec<String> {
        let mut entries = self.entries();
        entries.retain(|id, _| listed.iter().any(|entry| entry.id == *id));
        let named = |entry: &EntryInfo, key: &str| {
            entry.id == key
                || entry.task_id.as_deref() == Some(key)
                || entry.name.as_deref() == Some(key)
        };
        listed
            .iter()
            .filter(|entry| !entry.state.is_running())
            .filter(|entry| !except.is_some_and(|key| named(entry, key)))
            .filter_map(|entry| {
                let seen = entries.get_mut(&entry.id)?;
                if seen.told {
                    return None;
                }
                seen.told = true;
                Some(end_notice(entry))
            })
            .collect()
    }

    /// Whether the end of entry `id` is to be logged now (watched, and neither told nor logged
    /// yet); it counts as logged from here.
    pub(crate) fn log_end(&self, id: &str) -> bool {
        match self.entries().get_mut(id) {
            Some(seen) if !seen.told && !seen.logged => {
                seen.logged = true;
                true
            }
            _ => false,
        }
    }
}

/// `[task t3 "npm-run-dev" exited 1 after 4m12s: task_output {"task":"t3"} shows its output]`
pub(crate) fn end_notice(entry: &EntryInfo) -> String {
    let task = entry.task_id.as_deref().unwrap_or(&entry.id);
    let name = entry
        .name
        .as_deref()
        .map(|name| format!(" {name:?}"))
        .unwrap_or_default();
    let ran = entry
        .ended_ms
        .unwrap_or(entry.started_ms)
        .saturating_sub(entry.started_ms);
    format!(
        "[task {task}{name} {:#} after {}: task_output {{\"task\":\"{task}\"}} shows its output]",
        entry.state,
        duration(ran)
    )
}

/// The log message of a task that waits for someone to type: `[task t3: waiting for input:
/// Continue? [y/N]]`, as the detach's reason says it.
pub(crate) fn input_notice(task: &str, reason: &str) -> String {
    format!("[{task}: {reason}]")
}

/// How long a call ran, as its result says it: `0.8 s`, `12.4 s`, then `4m12s`, `2h05m`.
pub(crate) fn run_time(ran: std::time::Duration) -> String {
    if ran.as_secs() < 60 {
        format!("{:.1} s", ran.as_secs_f64())
    } else {
        duration(u64::try_from(ran.as_millis()).unwrap_or(u64::MAX))
    }
}

/// `850ms`, `12s`, `4m12s`, `2h05m`.
fn duration(ms: u64) -> String {
    let seconds = ms / 1000;
    match seconds {
        0 => format!("{ms}ms"),
        1..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{EntryKind, EntryState};

    fn task(id: &str, state: EntryState, ran_ms: u64) -> EntryInfo {
        EntryInfo {
            id: id.into(),
            kind: EntryKind::Task,
            task_id: Some("t3".into()),
            name: Some("npm-run-dev".into()),
            title: None,
            command: "npm run dev".into(),
            cwd: "/".into(),
            pid: 1,
            started_ms: 1_000,
            detached_ms: Some(1_000),
            ended_ms: (!state.is_running()).then_some(1_000 + ran_ms),
            state,
            timed_out: false,
            bytes: 0,
            detach_offset: 0,
            log_path: "/dev/null".into(),
            log_error: None,
            log_cut: None,
            waiting_for_input: None,
            ready: None,
            project: None,
        }
    }

    #[test]
    fn an_end_reads_as_one_line_naming_the_task_its_end_and_how_to_read_it() {
        assert_eq!(
            end_notice(&task("c9", EntryState::Exited { code: 1 }, 252_000)),
            "[task t3 \"npm-run-dev\" exited 1 after 4m12s: task_output {\"task\":\"t3\"} shows \
             its output]"
        );
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(59_999), "59s");
        assert_eq!(duration(7_500_000), "2h05m");
    }

    #[test]
    fn each_end_is_told_once_and_only_for_watched_tasks() {
        let watched = Watched::default();
        watched.watch("c1");
        watched.watch("c2");
        let running = [
            task("c1", EntryState::Running, 0),
            task("c2", EntryState::Running, 0),
        ];
        assert!(watched.notices(&running, None).is_empty());
        let ended = [
            task("c1", EntryState::Exited { code: 0 }, 3_000),
            task("c2", EntryState::Running, 0),
            task("c7", EntryState::Exited { code: 2 }, 3_000),
        ];
        assert!(watched.log_end("c1"));
        assert!(!watched.log_end("c1"));
        assert!(!watched.log_end("c7"));
        assert_eq!(watched.notices(&ended, None).len(), 1);
        assert!(watched.notices(&ended, None).is_empty());
        assert!(watched.any_untold());
        watched.told("c2");
        assert!(!watched.any_untold());
        // The task a result is about keeps its notice for the next result: that result's state
        // line was read before it ended.
        watched.watch("c9");
        let about = [task("c9", EntryState::Exited { code: 1 }, 3_000)];
        assert!(watched.notices(&about, Some("t3")).is_empty());
        assert!(watched.is_watched("c9"));
        assert_eq!(watched.notices(&about, None).len(), 1);
        // A forgotten entry is dropped, not told.
        watched.watch("c5");
        assert!(watched.notices(&ended, None).is_empty());
        assert!(!watched.any_untold());
    }
}
