//! Where a server lives and who serves there: the socket's path, its private folder, the lock
//! beside it, and the log of a server started in the background. Shared by the server and its
//! clients.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::pty::proc_scan;

/// Where the socket of session `name` lives: `$XDG_RUNTIME_DIR/oino/NAME.sock`, else
/// `$TMPDIR/oino-UID/NAME.sock` (`/tmp` without `TMPDIR`).
#[must_use]
pub fn session_socket(name: &str) -> PathBuf {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|value| !value.is_empty())
        .map_or_else(
            || std::env::temp_dir().join(format!("oino-{}", nix::unistd::getuid())),
            |runtime| PathBuf::from(runtime).join("oino"),
        );
    dir.join(format!("{name}.sock"))
}

/// The socket a command uses: `--socket`, else the session `-s` names, else `OINO_SOCKET`, else
/// the default session's. What is said on the command line wins over the environment.
#[must_use]
pub fn choose_socket(socket: Option<PathBuf>, session: Option<&str>) -> PathBuf {
    socket
        .or_else(|| session.map(session_socket))
        .or_else(|| {
            std::env::var_os("OINO_SOCKET")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| session_socket("default"))
}

/// Makes the socket's folder (0700), or checks that an existing one is ours; oino's own folder
/// (and one it made) is kept private, while a folder of the user's that a chosen socket is put
/// in keeps its mode (the socket itself is 0600).
pub fn prepare_dir(dir: &Path) -> anyhow::Result<()> {
    let made_here = !dir.exists();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating the socket folder {}", dir.display()))?;
    let meta = std::fs::metadata(dir)?;
    let uid = nix::unistd::getuid().as_raw();
    if meta.uid() != uid {
        anyhow::bail!(
            "the socket folder {} belongs to uid {}, not to you (uid {uid}): choose another \
             with --socket",
            dir.display(),
            meta.uid()
        );
    }
    let oino_own = session_socket("default").parent() == Some(dir);
    if (made_here || oino_own) && meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("making {} private", dir.display()))?;
    }
    Ok(())
}

/// Where the lock of the server at `socket` is.
#[must_use]
pub fn lock_path(socket: &Path) -> PathBuf {
    socket.with_extension("lock")
}

/// The pid of a live oino server of `socket` other than this process: the one its lock names,
/// else one found among the processes (its lock may have been removed with its folder). Looked at
/// without touching the lock, which a server starting meanwhile may be taking.
#[must_use]
pub fn lock_holder(socket: &Path) -> Option<u32> {
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
    let named = std::fs::read_to_string(lock_path(socket))
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
        .filter(|pid| serves(*pid, socket));
    named.or_else(|| {
        std::fs::read_dir("/proc")
            .ok()?
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .find(|pid| serves(*pid, socket) && counts(*pid))
    })
}

/// Whether process `pid` (not this one) is `oino server --foreground` for `socket`: the server
/// itself, not `oino server` starting one in the background (which names the socket too).
fn serves(pid: u32, socket: &Path) -> bool {
    if pid == std::process::id() {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
    args.get(1) == Some(&&b"server"[..])
        && args.contains(&&b"--foreground"[..])
        && args.contains(&socket.as_os_str().as_encoded_bytes())
}

/// Where a server started in the background writes its log.
#[must_use]
pub fn server_log(socket: &Path) -> PathBuf {
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
    let name = format!("{stem}-{:08x}", hash >> 32);
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
