//! Where a server lives and who serves there: the socket's path, its private folder, the lock
//! beside it, and the log of a server started in the background. Shared by the server and its
//! clients.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::paths::{Folder, UnsafePath, checked_dir};
use crate::pty::proc_scan;

/// Where the socket of session `name` lives: `$XDG_RUNTIME_DIR/oino/NAME.sock`, else
/// `$TMPDIR/oino-UID/NAME.sock` (`/tmp` without `TMPDIR`).
#[must_use]
pub(crate) fn session_socket(name: &str) -> PathBuf {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|value| !value.is_empty())
        .map_or_else(
            || std::env::temp_dir().join(format!("oino-{}", nix::unistd::getuid())),
            |runtime| PathBuf::from(runtime).join("oino"),
        );
    dir.join(format!("{name}.sock"))
}

/// The socket a command uses: `--socket`, else the session `-s` names, else `OINO_SOCKET`, else
/// the default session's. What is said on the command line wins over the environment. A
/// relative path is made absolute, so that its folder is known (and checked).
#[must_use]
pub(crate) fn choose_socket(socket: Option<PathBuf>, session: Option<&str>) -> PathBuf {
    let socket = socket
        .or_else(|| session.map(session_socket))
        .or_else(|| {
            std::env::var_os("OINO_SOCKET")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| session_socket("default"));
    std::path::absolute(&socket).unwrap_or(socket)
}

/// Makes the socket's folder, or checks an existing one: never a symlink, always the user's.
/// oino's own folder (the default sessions') is kept 0700; a folder the user chose for a socket
/// may be readable by others but nobody else may write in it (the socket itself is 0600).
pub(crate) fn prepare_dir(dir: &Path) -> Result<(), UnsafePath> {
    let default = session_socket("default");
    if default.parent() == Some(dir) {
        let remedy = if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|dir| !dir.is_empty()) {
            "remove it (as its owner, or as root), or choose a socket with --socket"
        } else {
            "remove it (as its owner, or as root), set XDG_RUNTIME_DIR to a private folder of \
             yours, or choose a socket with --socket"
        };
        checked_dir(dir, Folder::Own, remedy)
    } else {
        checked_dir(
            dir,
            Folder::Chosen,
            "choose a socket in a folder that only you can write to (--socket ~/oino.sock, say)",
        )
    }
}

/// The socket's folder, checked (see [`prepare_dir`]).
pub(crate) fn prepare_socket_dir(socket: &Path) -> anyhow::Result<()> {
    let dir = socket
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .context("the socket path has no folder")?;
    prepare_dir(dir)?;
    Ok(())
}

/// Where the lock of the server at `socket` is.
#[must_use]
pub(crate) fn lock_path(socket: &Path) -> PathBuf {
    socket.with_extension("lock")
}

/// The pid of a live oino server of `socket` other than this process: the one its lock names,
/// else one found among the processes (its lock may have been removed with its folder). Looked at
/// without touching the lock, which a server starting meanwhile may be taking.
#[must_use]
pub(crate) fn lock_holder(socket: &Path) -> Option<u32> {
    server_of(socket, |_| true)
}

/// Like [`lock_holder`], but a server found among the processes counts only if it started before
/// this one: of servers starting together, exactly one (the eldest) goes on to take the lock.
pub(super) fn elder_server(socket: &Path) -> Option<u32> {
    let mine = age(std::process::id());
    server_of(socket, |pid| is_elder(age(pid), mine))
}

/// When a process started, with its pid to order two started in one tick; `None` for one gone
/// or a zombie.
type Age = (u64, i32);

fn age(pid: u32) -> Option<Age> {
    let pid = i32::try_from(pid).ok()?;
    Some((proc_scan::stat(pid)?.started, pid))
}

/// Whether a process of age `theirs` started before this one. A process whose age cannot be
/// read is gone, or a zombie: a racer that gave way and exited between two reads of /proc. It
/// serves no one, so it is no elder; counting it one made the eldest give way to it, and no
/// server stayed.
fn is_elder(theirs: Option<Age>, mine: Option<Age>) -> bool {
    matches!((theirs, mine), (Some(theirs), Some(mine)) if theirs < mine)
}

/// The server named in the lock, else the first server among the processes that `counts`.
fn server_of(socket: &Path, counts: impl Fn(u32) -> bool) -> Option<u32> {
    let mut text = String::new();
    let named = crate::paths::open_for_reading(&lock_path(socket))
        .and_then(|file| file.take(32).read_to_string(&mut text))
        .ok()
        .and_then(|_| text.trim().parse::<u32>().ok())
        .filter(|pid| serves(*pid, socket));
    named.or_else(|| {
        crate::pty::procfs::pids()
            .into_iter()
            .find(|pid| serves(*pid, socket) && counts(*pid))
    })
}

/// Whether process `pid` (not this one) is `oino server --foreground` for `socket`: the server
/// itself, not `oino server` starting one in the background (which names the socket too). Only a
/// process of this user counts: anyone can run a process whose command line reads so.
fn serves(pid: u32, socket: &Path) -> bool {
    if pid == std::process::id() || !is_mine(pid) {
        return false;
    }
    let Some(cmdline) = i32::try_from(pid)
        .ok()
        .and_then(crate::pty::procfs::cmdline)
    else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
    args.get(1) == Some(&&b"server"[..])
        && args.contains(&&b"--foreground"[..])
        && args.contains(&socket.as_os_str().as_encoded_bytes())
}

/// Whether process `pid` runs as this user (its real and effective uid).
fn is_mine(pid: u32) -> bool {
    let uid = nix::unistd::getuid().as_raw();
    i32::try_from(pid).ok().and_then(crate::pty::procfs::uids) == Some((uid, uid))
}

/// The name of the server of `socket`: the socket's name and a hash of its whole path
/// (`default-1a2b3c4d`), for its log and the tag its calls carry.
#[must_use]
pub(crate) fn socket_key(socket: &Path) -> String {
    let stem = socket.file_stem().map_or_else(
        || "default".into(),
        |stem| stem.to_string_lossy().into_owned(),
    );
    // Sockets of one name in two folders are two servers: the whole path (FNV-1a) tells them
    // apart, the name tells a person which one it is.
    let hash = socket
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        });
    // A name of any characters stays one token of the tag (`KEY:PID:START`).
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{stem}-{:08x}", hash >> 32)
}

/// Where a server started in the background writes its log.
#[must_use]
pub fn server_log(socket: &Path) -> PathBuf {
    let name = socket_key(socket);
    // Beside the call logs (the state dir), else beside the socket.
    crate::output::log_dir()
        .ok()
        .and_then(|logs| {
            logs.parent()
                .map(|state| state.join(format!("server-{name}.log")))
        })
        .unwrap_or_else(|| socket.with_extension("log"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_racer_gone_between_two_reads_of_proc_is_no_elder() {
        let dir = std::env::temp_dir().join(format!("oino-elder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        let socket = dir.join("s.sock");
        // A process whose command line reads as `… server SOCKET`, as a racing server's does.
        let script = dir.join("server");
        std::fs::write(&script, "read _").expect("the script");
        let racer = std::process::Command::new("sh")
            .arg("server")
            .arg(&socket)
            .current_dir(&dir)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let racer_pid = racer.id();
        let racer = std::cell::RefCell::new(racer);
        let mine = age(std::process::id());
        // Its command line is read, then it exits (and is reaped) before its age is read.
        let found = server_of(&socket, |pid| {
            if pid == racer_pid {
                let mut racer = racer.borrow_mut();
                let _ = racer.kill();
                let _ = racer.wait();
            }
            is_elder(age(pid), mine)
        });
        assert_eq!(found, None);
        assert!(!is_elder(None, Some((5, 100))));
        assert!(is_elder(Some((5, 99)), Some((5, 100))));
        assert!(!is_elder(Some((1, 1)), None));
        let _ = std::fs::remove_dir_all(dir);
    }
}
