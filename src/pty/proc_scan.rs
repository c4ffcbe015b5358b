//! The processes /proc lists: their state, group, session, start time and CPU, the spawn key
//! each carries, and signals pinned by a pidfd so that only the process a search found is hit.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::TREE_KEY_ENV;

/// A process as /proc/PID/stat shows it.
#[derive(Clone, Copy, Debug)]
pub struct ProcessStat {
    /// Its process id.
    pub pid: i32,
    /// Its parent's pid.
    pub parent: i32,
    /// Its process group.
    pub group: i32,
    /// Its session (a call's shell leads one).
    pub session: i32,
    /// The foreground process group of its terminal (-1 without one).
    pub terminal_group: i32,
    /// `R` running, `S` sleeping (waiting for something), `D`, `T`…
    pub state: char,
    /// When it started, in clock ticks since boot.
    pub started: u64,
    /// CPU time it and its children it reaped have used, user and system, in clock ticks
    /// (a build's short-lived compilers count, in the process that waited for them).
    pub cpu_ticks: u64,
    /// Memory resident now, in pages.
    pub resident_pages: u64,
    /// How many threads it has.
    pub threads: u64,
}

/// Clock ticks a second in what /proc reports (`USER_HZ`, 100 on every Linux ABI).
pub(crate) const TICKS_PER_SECOND: f64 = 100.0;

/// Now, in the clock ticks of [`ProcessStat::started`]; `None` if /proc cannot say.
#[must_use]
pub(crate) fn now_ticks() -> Option<u64> {
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    let seconds: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Some((seconds * TICKS_PER_SECOND) as u64)
}

/// Every process that is not a zombie.
pub(crate) fn live_processes() -> impl Iterator<Item = ProcessStat> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
}

/// Parses /proc/PID/stat; `None` for a zombie or a process that is gone.
#[must_use]
pub fn stat(pid: i32) -> Option<ProcessStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')',
    // with field 3 (the state) of proc(5).
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = [""; 22];
    let mut count = 0;
    for (slot, field) in fields.iter_mut().zip(rest.split_whitespace()) {
        *slot = field;
        count += 1;
    }
    if count < fields.len() {
        return None;
    }
    let field = |number: usize| fields[number - 3];
    let number = |number: usize| field(number).parse::<u64>().ok();
    let state = field(3).chars().next()?;
    if state == 'Z' || state == 'X' {
        return None;
    }
    Some(ProcessStat {
        pid,
        parent: field(4).parse().ok()?,
        group: field(5).parse().ok()?,
        session: field(6).parse().ok()?,
        terminal_group: field(8).parse().ok()?,
        state,
        started: number(22)?,
        cpu_ticks: number(14)? + number(15)? + number(16)? + number(17)?,
        resident_pages: number(24)?,
        threads: number(20)?,
    })
}

/// `shell` (a call's shell, leader of its session, as just read) and its descendants in
/// that session, by the kernel's lists of children; at most `limit` of them.
#[must_use]
pub(crate) fn session_tree(shell: ProcessStat, limit: usize) -> Vec<ProcessStat> {
    let mut found = vec![shell];
    let mut next = 0;
    while next < found.len() && found.len() < limit {
        let parent = found[next].pid;
        // A process of one thread (most are) has one list: no need to list its threads.
        let one_thread = found[next].threads == 1;
        next += 1;
        let threads: Vec<i32> = if one_thread {
            vec![parent]
        } else {
            threads(parent).collect()
        };
        for thread in threads {
            let Ok(children) =
                std::fs::read_to_string(format!("/proc/{parent}/task/{thread}/children"))
            else {
                continue;
            };
            found.extend(
                children
                    .split_whitespace()
                    .filter_map(|child| child.parse().ok())
                    .filter_map(stat)
                    .filter(|child| child.session == shell.session),
            );
        }
    }
    found.truncate(limit);
    found
}

/// The threads of `pid`.
pub fn threads(pid: i32) -> impl Iterator<Item = i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
}

/// How old a scan of /proc may be for a look that only a live answer can end (a kill polling
/// its tree) or that is made again each round (a kill's signals): a thousand kills cost a few
/// scans, not a thousand. Longer than a scan takes with thousands of processes (20 ms).
pub(crate) const TABLE_REUSE: Duration = Duration::from_millis(100);

/// A live process, with the spawn key (`OINO_TREE`) its environment carries, if any.
#[derive(Clone, Debug)]
pub(crate) struct Keyed {
    /// The process as the scan read it.
    pub stat: ProcessStat,
    /// The value of [`TREE_KEY_ENV`] in its environment.
    pub key: Option<Arc<str>>,
}

/// The last scan, and the keys read so far, by pid and start time: a process's key is read
/// once in its life (the environment it was started with).
struct Table {
    /// When the last scan began.
    taken: Option<Instant>,
    processes: Arc<Vec<Keyed>>,
    keys: HashMap<(i32, u64), Option<Arc<str>>>,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| {
    Mutex::new(Table {
        taken: None,
        processes: Arc::new(Vec::new()),
        keys: HashMap::new(),
    })
});

/// Every live process with its spawn key, from a scan begun at `since` or later. Callers that
/// come while a scan runs wait for it, and share the next.
pub(crate) fn keyed_processes(since: Instant) -> Arc<Vec<Keyed>> {
    let mut table = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
    if table.taken.is_some_and(|taken| taken >= since) {
        return Arc::clone(&table.processes);
    }
    let taken = Instant::now();
    let mut keys = HashMap::with_capacity(table.keys.len());
    let processes: Vec<Keyed> = live_processes()
        .map(|stat| {
            let id = (stat.pid, stat.started);
            let key = table
                .keys
                .remove(&id)
                .unwrap_or_else(|| environ_value(stat.pid, TREE_KEY_ENV));
            keys.insert(id, key.clone());
            Keyed { stat, key }
        })
        .collect();
    table.keys = keys;
    table.processes = Arc::new(processes);
    table.taken = Some(taken);
    Arc::clone(&table.processes)
}

/// The value of `name` in the environment of `pid` (the first, as `getenv` reads it).
pub(crate) fn environ_value(pid: i32, name: &str) -> Option<Arc<str>> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ.split(|byte| *byte == 0).find_map(|entry| {
        let value = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        Some(Arc::from(std::str::from_utf8(value).ok()?))
    })
}

/// Signals `found` (a process a search found) if it still is that process (the same start
/// time) and `still` holds for it: a pidfd pins it first, so that its pid cannot be handed
/// to another process between the check and the signal.
pub(crate) fn signal_pinned(
    found: ProcessStat,
    still: impl Fn(&ProcessStat) -> bool,
    signal: nix::sys::signal::Signal,
) {
    let Some(pid) = rustix::process::Pid::from_raw(found.pid) else {
        return;
    };
    let pinned = match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(pinned) => Some(pinned),
        // Gone since the search.
        Err(rustix::io::Errno::SRCH) => return,
        // A kernel without pidfds: the check below stays, the signal goes by pid.
        Err(_) => None,
    };
    let still_it = stat(found.pid).is_some_and(|now| now.started == found.started && still(&now));
    if !still_it {
        return;
    }
    match (
        pinned,
        rustix::process::Signal::from_named_raw(signal as i32),
    ) {
        (Some(pinned), Some(rustix_signal)) => {
            let _ = rustix::process::pidfd_send_signal(&pinned, rustix_signal);
        }
        _ => {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(found.pid), signal);
        }
    }
}

/// Live processes whose environment holds `name=value`.
#[must_use]
pub fn with_env(name: &str, value: &str) -> Vec<i32> {
    live_processes()
        .filter(|process| environ_value(process.pid, name).as_deref() == Some(value))
        .map(|process| process.pid)
        .collect()
}
