//! What the kernel's process tables (`/proc`) say of one process, read here only: the other
//! layers ask for what they need (a command line, an environment, an owner) and never read
//! `/proc` themselves.

use std::path::PathBuf;

/// The pids of every process.
#[must_use]
pub fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

/// Its arguments, each ended by a NUL.
#[must_use]
pub fn cmdline(pid: i32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/cmdline")).ok()
}

/// Its working folder.
#[must_use]
pub fn cwd(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// Its environment as it started, `NAME=VALUE` each ended by a NUL (readable for processes of
/// this user only).
#[must_use]
pub(crate) fn environ(pid: i32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ")).ok()
}

/// The uid that owns its entry (its effective uid).
#[must_use]
pub fn owner(pid: i32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}"))
        .ok()
        .map(|meta| meta.uid())
}

/// Its real and effective uids.
#[must_use]
pub(crate) fn uids(pid: i32) -> Option<(u32, u32)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let ids = status.lines().find_map(|line| line.strip_prefix("Uid:"))?;
    let mut ids = ids.split_whitespace().map(str::parse);
    Some((ids.next()?.ok()?, ids.next()?.ok()?))
}

/// The descriptors this process has open.
#[must_use]
pub(crate) fn own_descriptors() -> Vec<i32> {
    std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_as_itself() {
        let me = i32::try_from(std::process::id()).expect("a pid");
        let uid = nix::unistd::getuid().as_raw();
        assert!(pids().contains(&std::process::id()));
        assert_eq!(owner(me), Some(nix::unistd::geteuid().as_raw()));
        assert_eq!(uids(me).map(|(real, _)| real), Some(uid));
        assert_eq!(cwd(me), std::env::current_dir().ok());
        let args = cmdline(me).expect("a command line");
        assert!(args.ends_with(b"\0"), "{args:?}");
        assert!(environ(me).is_some());
        assert!(own_descriptors().contains(&0) || own_descriptors().contains(&1));
    }
}
