//! A plain child (no terminal: a probe's command) in a process group of its own, ended whole:
//! whatever it leaves running (`sleep 600 & false`, the other side of a pipe) is killed once
//! its shell has ended, when it is given up, or when whoever waits for it goes away.
//!
//! The shell is reaped only after its group was signalled: until then its pid, which is the
//! group's id, cannot be handed to another process, so the signal reaches this group alone.

use std::os::fd::OwnedFd;
use std::process::{Child, Command, ExitStatus, Stdio};

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;

/// A child in a group of its own, not reaped until its group was ended.
pub(crate) struct GroupChild {
    child: Option<Child>,
    pid: Pid,
    /// Readable once the child has exited (a pidfd).
    exited: AsyncFd<OwnedFd>,
}

/// What the child writes, to read while it runs.
pub(crate) struct Outputs {
    /// Its standard output.
    pub stdout: Option<tokio::net::unix::pipe::Receiver>,
    /// Its standard error.
    pub stderr: Option<tokio::net::unix::pipe::Receiver>,
}

impl GroupChild {
    /// Starts `command` in a process group of its own, its standard input on /dev/null and its
    /// output and error piped.
    pub(crate) fn spawn(mut command: Command) -> std::io::Result<(Self, Outputs)> {
        use std::os::unix::process::CommandExt as _;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let outputs = Outputs {
            stdout: child.stdout.take().and_then(receiver),
            stderr: child.stderr.take().and_then(receiver),
        };
        let raw = i32::try_from(child.id()).map_err(std::io::Error::other)?;
        let pidfd = rustix::process::Pid::from_raw(raw)
            .ok_or_else(|| std::io::Error::other("no pid"))
            .and_then(|pid| {
                rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK)
                    .map_err(std::io::Error::from)
            });
        let pid = Pid::from_raw(raw);
        let exited = match pidfd.and_then(watch) {
            Ok(exited) => exited,
            Err(err) => {
                // Not watched, so not kept: ended and reaped now.
                let _ = killpg(pid, Signal::SIGKILL);
                let _ = child.wait();
                return Err(err);
            }
        };
        let child = Some(child);
        Ok((Self { child, pid, exited }, outputs))
    }

    /// Waits until the child has exited, ends what is left of its group, and reaps it: its
    /// status.
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        loop {
            let mut ready = self.exited.readable().await?;
            // Seen, not reaped: the pid stays the group's until the group is ended.
            match waitid(
                Id::Pid(self.pid),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG,
            ) {
                Ok(WaitStatus::StillAlive) => ready.clear_ready(),
                Ok(_) => break,
                Err(err) => return Err(err.into()),
            }
        }
        self.end_group();
        let status = match &mut self.child {
            Some(child) => child.wait(),
            None => Err(std::io::Error::other("reaped already")),
        };
        self.child = None;
        status
    }

    /// Ends every process of the group, while the child is not reaped.
    fn end_group(&self) {
        if self.child.is_some() {
            let _ = killpg(self.pid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupChild {
    /// Given up (a timeout, a stop): the whole group ends, and the child is reaped.
    fn drop(&mut self) {
        self.end_group();
        if let Some(mut child) = self.child.take()
            && !matches!(child.try_wait(), Ok(Some(_)))
        {
            // Killed just now: it ends at once, on a thread of its own all the same.
            let _ = std::thread::Builder::new()
                .name("oino-reap".into())
                .stack_size(64 * 1024)
                .spawn(move || child.wait());
        }
    }
}

/// The reactor's watch of a pidfd: readable once its process has exited.
// Registering a descriptor is unsafe only for one that could be closed while registered; this
// one is owned by the watch, and closed by it alone, after its registration ends.
#[allow(unsafe_code)]
fn watch(pidfd: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the pidfd moves into the AsyncFd, which deregisters it before closing it.
    unsafe { AsyncFd::register(pidfd) }.map_err(|refused| refused.into_parts().1)
}

/// A pipe of the child's, to read without blocking.
fn receiver(pipe: impl Into<OwnedFd>) -> Option<tokio::net::unix::pipe::Receiver> {
    tokio::net::unix::pipe::Receiver::from_owned_fd(pipe.into()).ok()
}
