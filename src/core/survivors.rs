//! What a server that died (`kill -9`, a crash) left running, found by the server that comes
//! after it.
//!
//! Every call's processes carry the tag of the server that spawned them in their environment
//! (`OINO_SERVER=KEY:PID:START`: its socket's key, its pid and its start time) beside their call
//! id. A process that traps SIGHUP, a `nohup` or `setsid` child, outlives its server and the
//! terminal that went with it; a server starting for the same socket finds such processes of
//! this user whose server is gone, lists them as an entry per call in the state `orphaned`, and
//! `oino kill` ends them (each checked by its start time before every signal: pids are reused).
//! Their terminal died with their server: they cannot be read or typed into. A project's
//! process carries its name and file too (`OINO_PROCESS=NAME:FILE`), so that the project is not
//! started twice while its earlier run survives.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::types::{EntryInfo, EntryKind, EntryState};
use crate::pty::proc_scan::{self, ProcessStat};
use crate::pty::{CALL_ID_ENV, OWNER_ENV, procfs};

/// Environment variable of a project's process: `NAME:FILE`, the process and its project file.
pub(crate) const PROCESS_ENV: &str = "OINO_PROCESS";

/// How often a dying survivor is looked at during a kill.
const KILL_POLL: Duration = Duration::from_millis(10);
/// How long after its SIGKILL a process that does not go (stuck in the kernel) is waited for.
const KILL_GIVE_UP: Duration = Duration::from_secs(5);

/// One process left behind: its pid and its start time, which prove it is the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Process {
    pid: i32,
    started: u64,
}

impl Process {
    fn is_alive(self) -> bool {
        proc_scan::stat(self.pid).is_some_and(|stat| stat.started == self.started)
    }
}

/// A call's processes that its dead server left running.
#[derive(Clone, Debug)]
pub(crate) struct Survivor {
    /// Its entry's id: the call's id and `.left` (a new call may get the old id).
    pub id: String,
    pub call_id: String,
    /// The pid the server that died had.
    pub server_pid: u32,
    /// The tag its processes carry (`KEY:PID:START`): a kill looks for them by it again, so
    /// that a child started since they were found goes too.
    tag: String,
    processes: Vec<Process>,
    command: String,
    cwd: PathBuf,
    /// A project's process: its project file and its name.
    process: Option<(PathBuf, String)>,
    started_ms: u64,
    /// `Orphaned` while any lives; once killed, how.
    state: EntryState,
    ended_ms: Option<u64>,
}

/// The tag a server (or an interface with processes of its own) puts in its calls'
/// environment: `KEY:PID:START`.
#[must_use]
pub(crate) fn owner_tag(key: &str) -> String {
    let pid = std::process::id();
    let started = i32::try_from(pid)
        .ok()
        .and_then(proc_scan::stat)
        .map_or(0, |stat| stat.started);
    format!("{key}:{pid}:{started}")
}

/// The survivors of dead servers of the socket `key`: live processes of this user whose tag
/// names that key and a server that is no longer running (this process is not one).
#[must_use]
pub fn find(key: &str) -> Vec<Survivor> {
    let mut found: Vec<Survivor> = Vec::new();
    for (process, tag, call_id) in tagged_processes() {
        let Some((tag_key, server_pid, server_started)) = parse_tag(&tag) else {
            continue;
        };
        if tag_key != key || server_pid == std::process::id() {
            continue;
        }
        let server_alive = i32::try_from(server_pid)
            .ok()
            .and_then(proc_scan::stat)
            .is_some_and(|stat| stat.started == server_started);
        if server_alive {
            continue;
        }
        let this = Process {
            pid: process.pid,
            started: process.started,
        };
        if let Some(survivor) = found
            .iter_mut()
            .find(|survivor| survivor.call_id == call_id && survivor.tag == tag)
        {
            // Described by its oldest process: the shell, when it lives.
            if process.started < survivor.first().started {
                survivor.describe(process);
            }
            survivor.processes.push(this);
        } else {
            let mut survivor = Survivor {
                id: format!("{call_id}.left"),
                call_id,
                server_pid,
                tag,
                processes: vec![this],
                command: String::new(),
                cwd: PathBuf::new(),
                process: None,
                started_ms: 0,
                state: EntryState::Orphaned { server_pid },
                ended_ms: None,
            };
            survivor.describe(process);
            found.push(survivor);
        }
    }
    found.sort_by_key(|survivor| survivor.started_ms);
    found
}

/// Live processes of this user (not this process) that carry an owner's tag and a call id, with
/// both.
fn tagged_processes() -> impl Iterator<Item = (ProcessStat, String, String)> {
    let uid = nix::unistd::getuid().as_raw();
    let mine = i32::try_from(std::process::id()).unwrap_or(-1);
    proc_scan::live_processes()
        .filter(move |process| process.pid != mine && proc_owner(process.pid) == Some(uid))
        .filter_map(|process| {
            let (tag, call_id) = tags(process.pid)?;
            Some((process, tag, call_id))
        })
}

impl Survivor {
    fn first(&self) -> Process {
        self.processes
            .iter()
            .copied()
            .min_by_key(|process| process.started)
            .unwrap_or(Process { pid: 0, started: 0 })
    }

    /// Its command, folder, project process and start, from its oldest process.
    fn describe(&mut self, process: ProcessStat) {
        self.command = procfs::cmdline(process.pid)
            .map(|cmdline| command_of(&cmdline))
            .unwrap_or_default();
        self.cwd = procfs::cwd(process.pid).unwrap_or_default();
        self.process = environ_value(process.pid, PROCESS_ENV).and_then(|tag| {
            let (name, file) = tag.split_once(':')?;
            Some((PathBuf::from(file), name.to_owned()))
        });
        self.started_ms = started_ms(process.started);
    }

    /// Whether it is the run of process `name` of the project `file`, and still runs.
    #[must_use]
    pub(crate) fn runs_process(&self, file: &Path, name: &str) -> bool {
        matches!(self.state, EntryState::Orphaned { .. })
            && self
                .process
                .as_ref()
                .is_some_and(|(its_file, its_name)| its_file == file && its_name == name)
            && self.is_alive()
    }

    /// Its entry, as front ends list it.
    #[must_use]
    pub(crate) fn info(&self) -> EntryInfo {
        let first = self.first();
        EntryInfo {
            id: self.id.clone(),
            kind: EntryKind::Task,
            task_id: None,
            name: None,
            title: None,
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            pid: u32::try_from(first.pid).unwrap_or(0),
            started_ms: self.started_ms,
            detached_ms: None,
            ended_ms: self.ended_ms,
            state: self.state,
            timed_out: false,
            bytes: 0,
            detach_offset: 0,
            log_path: PathBuf::new(),
            log_error: None,
            log_cut: None,
            waiting_for_input: None,
            ready: None,
            project: None,
        }
    }

    /// Its processes now: those found, and any started since with its tag and call id.
    fn members(&self) -> Vec<ProcessStat> {
        tagged_processes()
            .filter(|(_, tag, call_id)| *tag == self.tag && *call_id == self.call_id)
            .map(|(process, _, _)| process)
            .collect()
    }

    /// Ends its processes: SIGTERM, `grace`, then SIGKILL to those still there; looked for
    /// again by their tags each time (a child started since goes too), each pinned and checked
    /// by its start time before its signal. Returns how it ended.
    pub async fn kill(&mut self, grace: Duration) -> EntryState {
        if !matches!(self.state, EntryState::Orphaned { .. }) {
            return self.state;
        }
        let is_member = |process: &ProcessStat| {
            tags(process.pid)
                .is_some_and(|(tag, call_id)| tag == self.tag && call_id == self.call_id)
        };
        let kill_at = tokio::time::Instant::now() + grace;
        let give_up = kill_at + KILL_GIVE_UP;
        let mut signal = nix::sys::signal::Signal::SIGTERM;
        // SIGTERM once to each (a newcomer too); after the grace SIGKILL each round.
        let mut termed = std::collections::HashSet::new();
        loop {
            let members = self.members();
            let now = tokio::time::Instant::now();
            if members.is_empty() || now >= give_up {
                break;
            }
            if now >= kill_at {
                signal = nix::sys::signal::Signal::SIGKILL;
            }
            for member in members {
                let first = termed.insert((member.pid, member.started));
                if first || signal == nix::sys::signal::Signal::SIGKILL {
                    proc_scan::signal_pinned(member, is_member, signal);
                }
            }
            tokio::time::sleep(KILL_POLL).await;
        }
        self.state = EntryState::Killed {
            signal: signal as i32,
        };
        self.ended_ms = Some(crate::time::now_ms());
        self.state
    }

    /// Whether any of its processes still runs (those found, or any with its tags).
    #[must_use]
    pub(crate) fn is_alive(&self) -> bool {
        self.processes.iter().any(|process| process.is_alive()) || !self.members().is_empty()
    }
}

/// A survivor's tag and call id, from its environment.
fn tags(pid: i32) -> Option<(String, String)> {
    let environ = procfs::environ(pid)?;
    Some((
        value_in(&environ, OWNER_ENV)?,
        value_in(&environ, CALL_ID_ENV)?,
    ))
}

/// The value of `name` in the environment of `pid`.
fn environ_value(pid: i32, name: &str) -> Option<String> {
    value_in(&procfs::environ(pid)?, name)
}

/// The value of `name` in `environ` (`NAME=value` entries ended by zero bytes).
fn value_in(environ: &[u8], name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    environ
        .split(|byte| *byte == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

/// `KEY:PID:START`.
fn parse_tag(tag: &str) -> Option<(&str, u32, u64)> {
    let (rest, started) = tag.rsplit_once(':')?;
    let (key, pid) = rest.rsplit_once(':')?;
    Some((key, pid.parse().ok()?, started.parse().ok()?))
}

/// The uid a process runs as.
fn proc_owner(pid: i32) -> Option<u32> {
    procfs::owner(pid)
}

/// A command line as a person reads it: `bash -c COMMAND` is COMMAND.
fn command_of(cmdline: &[u8]) -> String {
    let args: Vec<String> = cmdline
        .split(|byte| *byte == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    match args.as_slice() {
        // The command as it was given, without the wrapper that reported its folder.
        [shell, flag, command, ..] if shell.ends_with("bash") && flag == "-c" => {
            crate::call::without_folder_report(command).to_owned()
        }
        _ => args.join(" "),
    }
}

/// Milliseconds since the epoch of a start time in clock ticks since boot.
fn started_ms(started: u64) -> u64 {
    let Some(now_ticks) = proc_scan::now_ticks() else {
        return crate::time::now_ms();
    };
    let ago_ms = now_ticks.saturating_sub(started) * 1000 / 100;
    crate::time::now_ms().saturating_sub(ago_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_commands_read_back() {
        assert_eq!(
            parse_tag("default-1a2b3c4d:4242:987654"),
            Some(("default-1a2b3c4d", 4242, 987_654))
        );
        assert_eq!(parse_tag("no-tag"), None);
        assert_eq!(command_of(b"/bin/bash\0-c\0sleep 600\0"), "sleep 600");
        assert_eq!(command_of(b"sleep\x00600\x00"), "sleep 600");
        let wrapped = crate::call::reporting_folder("cd /tmp && make", Path::new("/run/o'k/f"));
        let cmdline = format!("bash\0-c\0{wrapped}\0");
        assert_eq!(command_of(cmdline.as_bytes()), "cd /tmp && make");
        let tag = owner_tag("k");
        let (key, pid, _) = parse_tag(&tag).expect("a tag");
        assert_eq!((key, pid), ("k", std::process::id()));
    }
}
