//! Whether a call waits for someone to type: a process of its terminal's foreground group is
//! blocked reading the terminal, as /proc shows it. Read from the kernel's own account (the
//! system call each thread sleeps in and the files it waits on), not guessed from the output:
//! `sleep`, a server blocked in `accept` or `poll` on its sockets, and a busy loop never look
//! like a prompt. A wait with a timeout (a `poll` of the keyboard between two pieces of work) is
//! told apart from one without: the caller looks twice, and one that worked meanwhile is not
//! waiting for anyone.

use std::os::unix::fs::FileExt;

use nix::libc;

use super::proc_scan::{self, threads};

/// The most processes of one call looked at.
const MAX_PROCESSES: usize = 256;
/// The most descriptors of a `poll` looked at.
const MAX_POLLED: u64 = 256;

/// How a terminal's foreground is reading it, at one look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerminalRead {
    /// Nothing of the foreground reads it.
    No,
    /// A process is blocked reading it, for as long as it takes: it waits for someone.
    Waits,
    /// A process waits for it with a timeout (`poll`, `select`): it waits for someone only if it
    /// does nothing else between its looks at the keyboard. Its pid and the CPU time it has
    /// used, in clock ticks, to compare with the next look.
    Polls {
        /// The process.
        pid: i32,
        /// Its CPU time so far.
        cpu_ticks: u64,
    },
}

/// How the foreground group of the terminal that `leader` (the call's shell, leader of its
/// session) controls reads that terminal: a process blocked reading it (with a timeout or
/// without), or none.
#[must_use]
pub(crate) fn reading_terminal(leader: i32) -> TerminalRead {
    let Some(shell) = proc_scan::stat(leader) else {
        return TerminalRead::No;
    };
    let foreground = shell.terminal_group;
    if foreground <= 0 {
        return TerminalRead::No;
    }
    let mut read = TerminalRead::No;
    for process in proc_scan::session_tree(shell, MAX_PROCESSES)
        .into_iter()
        .filter(|process| process.group == foreground && process.state == 'S')
    {
        for thread in threads(process.pid) {
            match reads_terminal(process.pid, thread) {
                Some(Timeout::None) => return TerminalRead::Waits,
                Some(Timeout::Some) if read == TerminalRead::No => {
                    read = TerminalRead::Polls {
                        pid: process.pid,
                        cpu_ticks: process.cpu_ticks,
                    };
                }
                _ => {}
            }
        }
    }
    read
}

/// Whether a wait ends by itself after a while.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timeout {
    None,
    Some,
}

/// The name of the program in the foreground of `leader`'s terminal (its /proc comm): the one
/// blocked reading the terminal, the deepest if several are, else the foreground group's
/// leader. `vim` when `git commit` runs `vim` in git's group, or when `bash -c 'cd x && vim'`
/// leaves vim in the shell's.
#[must_use]
pub(crate) fn foreground_program(leader: i32) -> Option<String> {
    let shell = proc_scan::stat(leader)?;
    let foreground = shell.terminal_group;
    if foreground <= 0 {
        return None;
    }
    let tree = proc_scan::session_tree(shell, MAX_PROCESSES);
    // The tree lists parents before their children: the last reader is the deepest.
    let reader = tree
        .iter()
        .rev()
        .filter(|process| process.group == foreground && process.state == 'S')
        .find(|process| {
            threads(process.pid).any(|thread| reads_terminal(process.pid, thread).is_some())
        });
    let pid = reader.map_or(foreground, |process| process.pid);
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    // A process names itself (prctl): nothing of it may steer a terminal the name is shown on.
    let name: String = comm
        .trim_end_matches('\n')
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    (!name.is_empty()).then_some(name)
}

/// A system call a thread sleeps in, from /proc/PID/task/TID/syscall.
#[derive(Debug, PartialEq, Eq)]
struct Blocked {
    number: i64,
    args: [u64; 6],
}

fn parse_syscall(text: &str) -> Option<Blocked> {
    let mut fields = text.split_whitespace();
    let number = fields.next()?.parse().ok()?;
    let mut args = [0; 6];
    for arg in &mut args {
        *arg = u64::from_str_radix(fields.next()?.trim_start_matches("0x"), 16).ok()?;
    }
    Some(Blocked { number, args })
}

/// Whether the thread sleeps reading one of the process's terminal descriptors, and with what
/// timeout: in `read`, or waiting for one to be readable in `select`, `poll` or `epoll` on
/// nothing but terminals and files of its own. A wait that also watches a socket or a
/// terminal's master side is a relay (`ssh`, `script`, `docker run -it`): it passes keys on as
/// they come, it asks nothing.
fn reads_terminal(pid: i32, thread: i32) -> Option<Timeout> {
    let blocked = std::fs::read_to_string(format!("/proc/{pid}/task/{thread}/syscall"))
        .ok()
        .as_deref()
        .and_then(parse_syscall)?;
    let [first, second, _, fourth, fifth, _] = blocked.args;
    // A timeout given by a pointer (none when null) or in ms (none when negative).
    let pointer = |at: u64| {
        if at == 0 {
            Timeout::None
        } else {
            Timeout::Some
        }
    };
    // The ms are a C int in the register's low half: negative (its sign bit set) for none.
    let millis = |ms: u64| {
        if ms & 0x8000_0000 == 0 {
            Timeout::Some
        } else {
            Timeout::None
        }
    };
    // The call first: most threads sleep in none of these, and their files are not read.
    let (wait, timeout) = match blocked.number {
        libc::SYS_read | libc::SYS_readv | libc::SYS_pread64 => (Wait::Read(first), Timeout::None),
        libc::SYS_pselect6 => (Wait::Select(first, second), pointer(fifth)),
        libc::SYS_ppoll => (Wait::Poll(first, second), pointer(blocked.args[2])),
        libc::SYS_epoll_pwait => (Wait::Epoll(first), millis(fourth)),
        libc::SYS_epoll_pwait2 => (Wait::Epoll(first), pointer(fourth)),
        // The older calls, which only some architectures have.
        #[cfg(target_arch = "x86_64")]
        libc::SYS_select => (Wait::Select(first, second), pointer(fifth)),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_poll => (Wait::Poll(first, second), millis(blocked.args[2])),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_epoll_wait => (Wait::Epoll(first), millis(fourth)),
        _ => return None,
    };
    let files = Files::of(pid);
    if files.terminals.is_empty() {
        return None;
    }
    let watched = match wait {
        Wait::Read(fd) => {
            return i32::try_from(fd)
                .is_ok_and(|fd| files.terminals.contains(&fd))
                .then_some(timeout);
        }
        Wait::Select(count, set) => select_set(pid, count, set),
        Wait::Poll(fds, count) => poll_set(pid, fds, count),
        Wait::Epoll(epoll) => epoll_set(pid, epoll),
    };
    (watched.iter().any(|fd| files.terminals.contains(fd))
        && !watched.iter().any(|fd| files.relays.contains(fd)))
    .then_some(timeout)
}

/// What a thread sleeps in, with the arguments that say on what.
enum Wait {
    Read(u64),
    Select(u64, u64),
    Poll(u64, u64),
    Epoll(u64),
}

/// The process's descriptors open on a terminal (a pseudo-terminal, or `/dev/tty`), and those
/// a relay passes keys to (a socket, a terminal's master side).
struct Files {
    terminals: Vec<i32>,
    relays: Vec<i32>,
}

impl Files {
    fn of(pid: i32) -> Self {
        let mut files = Self {
            terminals: Vec::new(),
            relays: Vec::new(),
        };
        for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let Some(fd) = entry.file_name().to_str().and_then(|fd| fd.parse().ok()) else {
                continue;
            };
            let Ok(target) = std::fs::read_link(entry.path()) else {
                continue;
            };
            let target = target.to_string_lossy();
            if target == "/dev/ptmx" || target == "/dev/pts/ptmx" || target.starts_with("socket:") {
                files.relays.push(fd);
            } else if target.starts_with("/dev/pts/") || target == "/dev/tty" {
                files.terminals.push(fd);
            }
        }
        files
    }
}

fn memory(pid: i32, address: u64, length: usize) -> Option<Vec<u8>> {
    let file = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut bytes = vec![0; length];
    file.read_exact_at(&mut bytes, address).ok()?;
    Some(bytes)
}

/// `select(nfds, readfds, …)`: the descriptors in the set read.
fn select_set(pid: i32, count: u64, set: u64) -> Vec<i32> {
    if set == 0 {
        return Vec::new();
    }
    let count = count.min(1024);
    let Ok(words) = usize::try_from(count.div_ceil(64)) else {
        return Vec::new();
    };
    let Some(bytes) = memory(pid, set, words * 8) else {
        return Vec::new();
    };
    (0..count)
        .filter_map(|fd| {
            let at = usize::try_from(fd).ok()?;
            let set = bytes[at / 8] & (1 << (at % 8)) != 0;
            set.then(|| i32::try_from(fd).ok()).flatten()
        })
        .collect()
}

/// `poll(fds, nfds, …)`: the descriptors polled for input.
fn poll_set(pid: i32, fds: u64, count: u64) -> Vec<i32> {
    const POLLIN: i16 = 1;
    let Ok(count) = usize::try_from(count.min(MAX_POLLED)) else {
        return Vec::new();
    };
    let Some(bytes) = memory(pid, fds, count * 8) else {
        return Vec::new();
    };
    bytes
        .chunks_exact(8)
        .filter_map(|entry| {
            let fd = i32::from_ne_bytes([entry[0], entry[1], entry[2], entry[3]]);
            let events = i16::from_ne_bytes([entry[4], entry[5]]);
            (events & POLLIN != 0).then_some(fd)
        })
        .collect()
}

/// `epoll_wait(epfd, …)`: the descriptors in the epoll set, for input (the kernel lists the
/// set in /proc/PID/fdinfo/EPFD).
fn epoll_set(pid: i32, epoll: u64) -> Vec<i32> {
    const EPOLLIN: u32 = 1;
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{epoll}")) else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            if fields.next() != Some("tfd:") {
                return None;
            }
            let fd = fields.next()?.parse().ok()?;
            let events = fields
                .skip_while(|field| *field != "events:")
                .nth(1)
                .and_then(|events| u32::from_str_radix(events, 16).ok())?;
            (events & EPOLLIN != 0).then_some(fd)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syscall_line_reads_as_number_and_arguments() {
        assert_eq!(
            parse_syscall("0 0x3 0x7f19f70f7000 0x20000 0x7f19 0xffffffff 0x0 0x7ffc 0x7f19"),
            Some(Blocked {
                number: 0,
                args: [3, 0x7f19_f70f_7000, 0x20000, 0x7f19, 0xffff_ffff, 0]
            })
        );
        assert_eq!(parse_syscall("running"), None);
    }
}
