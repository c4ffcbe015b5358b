//! A PTY and the processes on it: the real [`Tree`] of a spawned call.
//!
//! Signals reach only what is provably the call's: until the shell is reaped (see
//! [`Tree::release`]) its pid, group and session are its own; any other process a search finds
//! is pinned with a pidfd and checked again before it is signalled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use portable_pty::{MasterPty, PtySize};

use super::{PtyError, TREE_KEY_ENV, TermSize, Tree, in_words, pid_as_i32, proc_scan, waiting};

pub(super) struct PtyTree {
    pub(super) pid: u32,
    pub(super) tree_key: String,
    /// A little before the spawn, in /proc's clock ticks (0 when /proc could not say).
    pub(super) spawned_ticks: u64,
    /// Whether the shell has been reaped: from then on its pid may be another process's, and
    /// nothing is signalled. Signals are sent under the read lock, the reap under the write one.
    pub(super) reaped: Arc<RwLock<bool>>,
    /// Tells the waiter it may reap the shell (dropping it does too).
    pub(super) release: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    /// The terminal's master side, until the terminal is closed.
    pub(super) master: Mutex<Option<Box<dyn MasterPty + Send>>>,
    /// The reader holds a chunk it has read and not yet handed over.
    pub(super) reader_holds: Arc<AtomicBool>,
}

impl Tree for PtyTree {
    fn resize(&self, size: TermSize) -> Result<(), PtyError> {
        let master = self.master.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(master) = master.as_ref() else {
            return Ok(());
        };
        master
            .resize(PtySize {
                rows: size.rows,
                cols: size.cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|err| PtyError::Resize(in_words(&err)))
    }

    fn terminal_hung_up(&self) -> bool {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        self.with_master(|fd| {
            let mut fds = [PollFd::new(fd, PollFlags::empty())];
            matches!(poll(&mut fds, PollTimeout::ZERO), Ok(1))
                && fds[0]
                    .revents()
                    .is_some_and(|events| events.contains(PollFlags::POLLHUP))
        })
        .unwrap_or(false)
    }

    fn output_pending(&self) -> bool {
        self.reader_holds.load(Ordering::Acquire)
            || self
                .with_master(|fd| rustix::io::ioctl_fionread(fd).is_ok_and(|bytes| bytes > 0))
                .unwrap_or(false)
    }

    fn close_terminal(&self) {
        self.master
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn release(&self) {
        self.release
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn is_reaped(&self) -> bool {
        *self.reaped_guard()
    }

    fn signal(&self, signal: Signal) {
        let reaped = self.reaped_guard();
        if *reaped {
            return;
        }
        // Unreaped, the shell's pid is still its own: so is the group it leads. ESRCH only
        // means the group is already empty.
        let group = Pid::from_raw(pid_as_i32(self.pid));
        let _ = killpg(group, signal);
        // The lock is held already: taking it again could wait behind the reaper for ever.
        // A scan shared with other trees' signals may be up to `proc_scan::TABLE_REUSE` old
        // and miss a process forked since: a kill sends SIGKILL again each round (see
        // `ProcessControl::kill_trees`).
        for member in self.scan_tree(recently()) {
            self.signal_member(member, signal);
        }
    }

    fn reading_terminal(&self) -> waiting::TerminalRead {
        let reaped = self.reaped_guard();
        if *reaped {
            return waiting::TerminalRead::No;
        }
        waiting::reading_terminal(pid_as_i32(self.pid))
    }

    fn foreground_program(&self) -> Option<String> {
        let reaped = self.reaped_guard();
        (!*reaped)
            .then(|| waiting::foreground_program(pid_as_i32(self.pid)))
            .flatten()
    }

    fn alive(&self) -> bool {
        let reaped = self.reaped_guard();
        // A recent scan may say alive; only a scan begun now may say gone.
        !*reaped
            && (!self.scan_tree(recently()).is_empty()
                || !self.scan_tree(Instant::now()).is_empty())
    }

    fn size(&self) -> usize {
        let reaped = self.reaped_guard();
        if *reaped {
            0
        } else {
            self.scan_tree(recently()).len()
        }
    }

    fn on_pty(&self) -> Option<&PtyTree> {
        Some(self)
    }
}

impl PtyTree {
    /// For each tree, whether any process of it is alive: one scan of /proc for them all.
    pub(super) fn alive_trees(trees: &[&Self]) -> Vec<bool> {
        let guards: Vec<_> = trees.iter().map(|tree| tree.reaped_guard()).collect();
        let mut alive: Vec<bool> = vec![false; trees.len()];
        let looked: Vec<usize> = (0..trees.len()).filter(|&at| !*guards[at]).collect();
        if looked.is_empty() {
            return alive;
        }
        for process in proc_scan::keyed_processes(Instant::now()).iter() {
            for &at in &looked {
                if !alive[at] && trees[at].is_listed_member(process) {
                    alive[at] = true;
                }
            }
        }
        alive
    }

    /// Signals one process found by a tree search, if it still is that process and ours.
    pub(super) fn signal_member(&self, member: proc_scan::ProcessStat, signal: Signal) {
        proc_scan::signal_pinned(member, |now| self.is_member(now), signal);
    }

    /// Runs `body` on the master's descriptor, while it is open.
    // portable-pty gives the master only as a raw descriptor; borrowing it is the one unsafe
    // step, and the lock held meanwhile keeps it open.
    #[allow(unsafe_code)]
    fn with_master<T>(&self, body: impl FnOnce(std::os::fd::BorrowedFd<'_>) -> T) -> Option<T> {
        let master = self.master.lock().unwrap_or_else(PoisonError::into_inner);
        let fd = master.as_ref().and_then(|master| master.as_raw_fd())?;
        // SAFETY: the master is kept open by the lock held for this whole borrow.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        Some(body(fd))
    }

    /// Whether the shell is reaped, held: while held, it cannot be reaped (its pid stays its).
    fn reaped_guard(&self) -> std::sync::RwLockReadGuard<'_, bool> {
        self.reaped.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a process, as /proc shows it now, belongs to this tree. While the shell is not
    /// reaped its pid is its own, so its group and session are this tree's; a process that left
    /// both is known by this spawn's key (only one started since the spawn can carry it).
    fn is_member(&self, process: &proc_scan::ProcessStat) -> bool {
        self.belongs(process, || {
            proc_scan::environ_value(process.pid, TREE_KEY_ENV)
        })
    }

    /// As [`PtyTree::is_member`], for a process of a shared scan, whose key was read then.
    fn is_listed_member(&self, process: &proc_scan::Keyed) -> bool {
        self.belongs(&process.stat, || process.key.clone())
    }

    /// The rule of both: the group, the session, or the key (`key` read only when needed).
    fn belongs(
        &self,
        process: &proc_scan::ProcessStat,
        key: impl FnOnce() -> Option<Arc<str>>,
    ) -> bool {
        let leader = pid_as_i32(self.pid);
        process.group == leader
            || process.session == leader
            || (process.started >= self.spawned_ticks
                && key().as_deref() == Some(self.tree_key.as_str()))
    }

    /// Live processes in the shell's group or session, or carrying this spawn's key, as a scan
    /// begun at `since` or later saw them: call with the reap lock held, the shell not reaped.
    pub(super) fn scan_tree(&self, since: Instant) -> Vec<proc_scan::ProcessStat> {
        proc_scan::keyed_processes(since)
            .iter()
            .filter(|process| self.is_listed_member(process))
            .map(|process| process.stat)
            .collect()
    }
}

/// The start of the scans a look that cannot end on them may share.
fn recently() -> Instant {
    Instant::now()
        .checked_sub(proc_scan::TABLE_REUSE)
        .unwrap_or_else(Instant::now)
}
