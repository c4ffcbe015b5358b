//! Starting a call's shell on its PTY without copying the server: `posix_spawn` (a `vfork`-like
//! clone in glibc) in place of `fork`. A fork of the server copies its page tables, and both sides
//! then fault on every page they write until the child has exec'd: measured, that was the largest
//! part of what a quick call cost beyond a bare PTY.
//!
//! The child does what a terminal's shell needs, in this order: a new session (`setsid`), then
//! the PTY opened by its path as standard input, output and error (a session leader without a
//! terminal acquires the first it opens: the PTY becomes its controlling terminal, as
//! `TIOCSCTTY` would make it), no other descriptor, default signal handling and no blocked
//! signal, its folder. When any of that fails here, the caller falls back to the PTY crate's
//! fork. It needs glibc 2.34 or later (`addclosefrom_np`; `addchdir_np` is from 2.29).

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// Spawns `program` with `args` (the first is its `argv[0]`) and `env` on the terminal at
/// `tty` (a PTY's slave side), in `cwd`; returns its pid.
pub(crate) fn spawn_on_tty(
    program: &Path,
    args: &[&OsStr],
    env: &[(OsString, OsString)],
    tty: &Path,
    cwd: &Path,
) -> std::io::Result<libc::pid_t> {
    let program = c_string(program.as_os_str().as_bytes().to_vec())?;
    let tty = c_string(tty.as_os_str().as_bytes().to_vec())?;
    let cwd = c_string(cwd.as_os_str().as_bytes().to_vec())?;
    let c_args: Vec<CString> = args
        .iter()
        .map(|arg| c_string(arg.as_bytes().to_vec()))
        .collect::<Result<_, _>>()?;
    let c_env: Vec<CString> = env
        .iter()
        .map(|(name, value)| {
            let mut pair = name.clone().into_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            c_string(pair)
        })
        .collect::<Result<_, _>>()?;
    let argv_ptrs = null_terminated(&c_args);
    let envp_ptrs = null_terminated(&c_env);

    // posix_spawn has no safe binding in the crates oino uses.
    // SAFETY: the attribute and action objects are initialised before use and destroyed once,
    // on every path; every pointer handed over points into a CString or a vector that outlives
    // the call.
    #[allow(unsafe_code)]
    unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        check(libc::posix_spawn_file_actions_init(&raw mut actions))?;
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        if let Err(err) = check(libc::posix_spawnattr_init(&raw mut attr)) {
            libc::posix_spawn_file_actions_destroy(&raw mut actions);
            return Err(err);
        }
        let result = (|| {
            a_fresh_session(&mut attr)?;
            on_the_terminal_in_its_folder(&mut actions, &tty, &cwd)?;
            let mut pid: libc::pid_t = 0;
            check(libc::posix_spawn(
                &raw mut pid,
                program.as_ptr(),
                &raw const actions,
                &raw const attr,
                argv_ptrs.as_ptr(),
                envp_ptrs.as_ptr(),
            ))?;
            Ok(pid)
        })();
        libc::posix_spawnattr_destroy(&raw mut attr);
        libc::posix_spawn_file_actions_destroy(&raw mut actions);
        result
    }
}

fn c_string(bytes: Vec<u8>) -> std::io::Result<CString> {
    CString::new(bytes).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
}

/// The pointers of `strings`, then a null: an `argv` or an `envp`.
fn null_terminated(strings: &[CString]) -> Vec<*mut libc::c_char> {
    strings
        .iter()
        .map(|string| string.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect()
}

/// A libc status as a result.
fn check(code: libc::c_int) -> std::io::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(code))
    }
}

/// The child's attributes: a new session, every signal at its default, none blocked.
///
/// # Safety
/// `attr` was initialised by `posix_spawnattr_init` and not destroyed yet.
#[allow(unsafe_code)]
unsafe fn a_fresh_session(attr: &mut libc::posix_spawnattr_t) -> std::io::Result<()> {
    let all = every_signal()?;
    // SAFETY: `attr` is initialised (this function's contract); the sets live through the calls.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut none);
        check(libc::posix_spawnattr_setsigdefault(attr, &raw const all))?;
        check(libc::posix_spawnattr_setsigmask(attr, &raw const none))?;
        #[allow(clippy::cast_possible_truncation)] // The flags are small constants.
        let flags = libc::POSIX_SPAWN_SETSID
            | (libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK) as libc::c_short;
        check(libc::posix_spawnattr_setflags(attr, flags))
    }
}

/// The child's file actions: the terminal as its standard input, output and error (and so,
/// after `setsid`, its controlling terminal), no other descriptor, and its folder.
///
/// # Safety
/// `actions` was initialised by `posix_spawn_file_actions_init` and not destroyed yet.
#[allow(unsafe_code)]
unsafe fn on_the_terminal_in_its_folder(
    actions: &mut libc::posix_spawn_file_actions_t,
    tty: &CString,
    cwd: &CString,
) -> std::io::Result<()> {
    // SAFETY: `actions` is initialised (this function's contract); the paths are the caller's, and outlive
    // the spawn.
    unsafe {
        // After setsid: the first terminal a session leader opens becomes its own.
        check(libc::posix_spawn_file_actions_addopen(
            actions,
            0,
            tty.as_ptr(),
            libc::O_RDWR,
            0,
        ))?;
        check(libc::posix_spawn_file_actions_adddup2(actions, 0, 1))?;
        check(libc::posix_spawn_file_actions_adddup2(actions, 0, 2))?;
        check(libc::posix_spawn_file_actions_addclosefrom_np(actions, 3))?;
        check(libc::posix_spawn_file_actions_addchdir_np(
            actions,
            cwd.as_ptr(),
        ))
    }
}

/// A set of every signal, glibc's own two included: glibc leaves them (32 and 33) out of a full
/// set, and a spawned child then ignores them, through exec, where a forked one has them at
/// their default.
#[allow(unsafe_code)] // The set is filled by libc; its two bits by hand, and checked.
fn every_signal() -> std::io::Result<libc::sigset_t> {
    // SAFETY: a zeroed sigset_t is a valid empty set; the set is a bit mask from its first
    // word (checked below with sigismember).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        let first_word = (&raw mut all).cast::<u64>();
        *first_word |= (1 << 31) | (1 << 32);
        if libc::sigismember(&raw const all, 32) != 1 || libc::sigismember(&raw const all, 33) != 1
        {
            return Err(std::io::Error::other("an unexpected signal set"));
        }
        Ok(all)
    }
}

/// Where `program` is found in the `PATH` of `env`, as the shell that runs it would look:
/// the first executable file of that name.
#[must_use]
pub(crate) fn find_in_path(program: &str, env: &[(OsString, OsString)]) -> Option<PathBuf> {
    let path = env.iter().find(|(name, _)| name == "PATH")?.1.clone();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            candidate.is_file()
                && nix::unistd::access(candidate, nix::unistd::AccessFlags::X_OK).is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spawn itself works here: a call that silently fell back to the fork would be as
    /// slow as before, and no other test would tell.
    #[test]
    fn a_shell_spawned_on_a_terminal_writes_to_it_and_its_status_is_its_own() {
        let pair = portable_pty::native_pty_system()
            .openpty(portable_pty::PtySize::default())
            .expect("a PTY");
        let tty = pair.master.tty_name().expect("the PTY's path");
        let env = vec![(OsString::from("PATH"), OsString::from("/usr/bin:/bin"))];
        let bash = find_in_path("bash", &env).expect("bash in /usr/bin or /bin");
        let script = "[ \"$(ps -o tty= -p $$)\" != '?' ] && echo \"spawned on $(tty)\"; exit 7";
        let pid = spawn_on_tty(
            &bash,
            &[OsStr::new("bash"), OsStr::new("-c"), OsStr::new(script)],
            &env,
            &tty,
            Path::new("/"),
        )
        .expect("posix_spawn on the PTY");
        drop(pair.slave);
        let mut output = String::new();
        let mut reader = pair.master.try_clone_reader().expect("a reader");
        // The PTY's end of file comes as EIO once the shell is gone.
        let _ = std::io::Read::read_to_string(&mut reader, &mut output);
        let status = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None).expect("wait");
        assert_eq!(
            status,
            nix::sys::wait::WaitStatus::Exited(nix::unistd::Pid::from_raw(pid), 7)
        );
        assert_eq!(output.trim_end(), format!("spawned on {}", tty.display()));
    }

    #[test]
    fn a_terminal_that_cannot_be_opened_is_an_error_for_the_caller_to_fall_back_on() {
        let env = vec![(OsString::from("PATH"), OsString::from("/usr/bin:/bin"))];
        let bash = find_in_path("bash", &env).expect("bash in /usr/bin or /bin");
        let spawned = spawn_on_tty(
            &bash,
            &[OsStr::new("bash"), OsStr::new("-c"), OsStr::new("true")],
            &env,
            Path::new("/dev/pts/no-such-terminal"),
            Path::new("/"),
        );
        assert_eq!(
            spawned.map_err(|err| err.kind()),
            Err(std::io::ErrorKind::NotFound)
        );
        assert_eq!(find_in_path("bash", &[]), None, "no PATH, no bash");
    }
}
