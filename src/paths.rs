//! Folders and files that no other user can touch: the runtime folder with the socket and its
//! lock, the state folder with the logs, the settings read at start.
//!
//! A folder oino makes or adopts is opened without following a symlink (`O_NOFOLLOW |
//! O_DIRECTORY`), checked through that descriptor (`fstat`: owner, mode) and changed only through
//! it (`fchmod`): a path checked and then used by name could have been swapped in between. An
//! unsafe folder is refused in words that say what is wrong and what to do (tmux refuses a
//! socket folder with "unsafe permissions"). Files in a checked folder are opened the same way
//! and never through a link, so a planted `x.lock -> precious` is refused, not truncated.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What a folder must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Folder {
    /// oino's own (runtime, state, logs): the user's, and 0700 (made so when looser).
    Own,
    /// One the user chose for a socket (`--socket`): the user's, and nobody else may write in
    /// it (a shared folder such as /tmp would let another user plant links or replace files).
    Chosen,
}

/// A folder or file oino will not use, and why, with what to do about it.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}; {remedy}", path = .path.display())]
pub struct UnsafePath {
    /// The folder or file refused.
    pub path: PathBuf,
    /// Whether it is unsafe, or could only not be made.
    pub cause: Cause,
    /// What is wrong with it, in words.
    pub problem: String,
    /// What to do about it.
    pub remedy: String,
}

/// Whether a path was refused as unsafe or could only not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// It is there, and another user could have put it there or could change it.
    Unsafe,
    /// It could not be made or opened (no such parent, no permission, a read-only disk): another
    /// place may serve.
    Unusable,
}

/// The name of the user with `uid`, as `name (uid N)`, or `uid N` when it has none.
#[must_use]
pub(crate) fn user_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(user)) => format!("{} (uid {uid})", user.name),
        _ => format!("uid {uid}"),
    }
}

fn my_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// What is wrong with a path, before it is named and given a remedy.
type Problem = (Cause, String);

/// Makes `dir` (and its missing parents, 0700) when it is not there, then checks it as `folder`
/// says; an own folder of the user's that others may read is made private through its
/// descriptor. `remedy` says what the user can do when it is refused.
pub(crate) fn checked_dir(dir: &Path, folder: Folder, remedy: &str) -> Result<(), UnsafePath> {
    make_dir(dir)
        .and_then(|()| open_dir(dir))
        .and_then(|handle| check_dir(&handle, folder))
        .map_err(|(cause, problem)| UnsafePath {
            path: dir.to_owned(),
            cause,
            problem,
            remedy: remedy.to_owned(),
        })
}

/// Makes `dir` and its missing parents, 0700; a `dir` that is there already is left as it is.
fn make_dir(dir: &Path) -> Result<(), Problem> {
    let unusable = |problem: String| (Cause::Unusable, problem);
    if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        // The parents are the user's own places (~/.local/state, a runtime dir): made when
        // missing, private, and not checked beyond that, as tmux does.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|err| {
                unusable(format!("cannot make its parent folder: {}", describe(&err)))
            })?;
    }
    // mkdir never follows a link at the last component: a planted one makes it fail, and
    // the open after it says what is there.
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(unusable(format!("cannot make it: {}", describe(&err)))),
    }
}

/// Opens the folder `dir` without following a symlink; when it cannot, says what is there.
fn open_dir(dir: &Path) -> Result<File, Problem> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir);
    opened.map_err(|err| {
        let problem = match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                "it is a symbolic link, where oino keeps a folder of its own (a link there may \
                 have been planted to send oino's files elsewhere)"
                    .to_owned()
            }
            Ok(meta) if !meta.is_dir() => "it is not a folder".to_owned(),
            // Closed to us (0700) by another user: theirs, and said so.
            Ok(meta) if meta.uid() != my_uid() => owned_by_another(meta.uid()),
            _ => {
                return (
                    Cause::Unusable,
                    format!("cannot open it: {}", describe(&err)),
                );
            }
        };
        (Cause::Unsafe, problem)
    })
}

/// Checks the open folder `handle` as `folder` says, through its descriptor: the user's, and
/// private (made so when it is oino's own) or at least closed to others' writes.
fn check_dir(handle: &File, folder: Folder) -> Result<(), Problem> {
    let refuse = |problem: String| (Cause::Unsafe, problem);
    let meta = handle
        .metadata()
        .map_err(|err| refuse(format!("cannot look at it: {}", describe(&err))))?;
    if meta.uid() != my_uid() {
        return Err(refuse(owned_by_another(meta.uid())));
    }
    let mode = meta.mode() & 0o7777;
    match folder {
        Folder::Own if mode & 0o077 != 0 => handle
            .set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(|err| {
                refuse(format!(
                    "its mode is {mode:04o} and cannot be made 0700: {}",
                    describe(&err)
                ))
            }),
        Folder::Chosen if mode & 0o022 != 0 => Err(refuse(format!(
            "other users may write in it (mode {mode:04o}), so they could replace the socket or \
             plant links beside it"
        ))),
        Folder::Own | Folder::Chosen => Ok(()),
    }
}

/// Why a folder of `owner`, who is not this user, is refused.
fn owned_by_another(owner: u32) -> String {
    format!(
        "it belongs to {}, not to you ({}), so another user controls what is in it",
        user_name(owner),
        user_name(my_uid())
    )
}

/// A file oino keeps in a checked folder (a lock, a server's log), opened for reading and
/// writing (`append` for appending), made 0600 when missing; never through a symlink, and only
/// a regular file of the user's with no other name (a hard link is another file's name).
pub(crate) fn open_own_file(path: &Path, append: bool) -> Result<File, UnsafePath> {
    let refuse = |problem: String| UnsafePath {
        path: path.to_owned(),
        cause: Cause::Unsafe,
        problem,
        remedy: "remove it, and oino makes its own".to_owned(),
    };
    let file = OpenOptions::new()
        .read(true)
        .write(!append)
        .append(append)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| {
            refuse(if err.raw_os_error() == Some(libc::ELOOP) {
                "it is a symbolic link, where oino keeps a file of its own".to_owned()
            } else {
                format!("cannot open it: {}", describe(&err))
            })
        })?;
    let meta = file
        .metadata()
        .map_err(|err| refuse(format!("cannot look at it: {}", describe(&err))))?;
    if !meta.is_file() {
        return Err(refuse("it is not a regular file".to_owned()));
    }
    if meta.uid() != my_uid() {
        return Err(refuse(format!(
            "it belongs to {}, not to you",
            user_name(meta.uid())
        )));
    }
    if meta.nlink() != 1 {
        return Err(refuse(format!(
            "it has {} names (hard links): writing it would write another file",
            meta.nlink()
        )));
    }
    Ok(file)
}

/// A new file at `path`, 0600: never one that is there already, nor through a symlink.
pub(crate) fn create_new_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Opens a file of oino's for reading, never through a symlink (nor waiting on a FIFO).
pub(crate) fn open_for_reading(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
}

/// The largest settings or project file read.
pub(crate) const MAX_SETTINGS_BYTES: u64 = 1 << 20;

/// Why a settings or project file could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadFileError {
    #[error("{}", describe(.0))]
    Io(#[from] std::io::Error),
    #[error("it is not a regular file (a {0}): give the path of a file")]
    NotRegular(&'static str),
    #[error("it is {size} bytes, more than the {limit} a file of settings may have")]
    TooLarge { size: u64, limit: u64 },
    #[error("{0}")]
    Unsafe(String),
}

/// The most links followed in one path, as the kernel follows them (`ELOOP` past it).
const MAX_LINKS: usize = 40;

/// The first symbolic link on the way to `path` (in its folders, at its end, and on the way to
/// what each link names) that belongs to another user than this one and root, with its owner:
/// one planted in a shared folder would choose which of this user's files is read (a `.env`
/// linked to another project's). The kernel's `fs.protected_symlinks` refuses such a link in a
/// sticky folder; many containers set it to 0.
fn planted_link(path: &Path) -> Option<(PathBuf, u32)> {
    fn walk(path: &Path, links: &mut usize) -> Option<(PathBuf, u32)> {
        let path = std::path::absolute(path).ok()?;
        let mut prefix = PathBuf::new();
        for part in path.components() {
            prefix.push(part);
            let Ok(meta) = std::fs::symlink_metadata(&prefix) else {
                return None;
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            if meta.uid() != my_uid() && meta.uid() != 0 {
                return Some((prefix, meta.uid()));
            }
            *links += 1;
            let target = std::fs::read_link(&prefix).ok()?;
            if *links > MAX_LINKS {
                return None;
            }
            let named = prefix.parent().unwrap_or(Path::new("/")).join(target);
            if let Some(planted) = walk(&named, links) {
                return Some(planted);
            }
        }
        None
    }
    walk(path, &mut 0)
}

/// Refuses `path` when a link of another user's leads to it (see [`planted_link`]).
pub(crate) fn no_planted_link(path: &Path) -> Result<(), ReadFileError> {
    match planted_link(path) {
        Some((link, owner)) => Err(ReadFileError::Unsafe(format!(
            "{} is a link made by {}, not by you ({}): another user chooses which file it \
             is; remove it, or use a file of yours",
            link.display(),
            user_name(owner),
            user_name(my_uid())
        ))),
        None => Ok(()),
    }
}

/// The bytes of a settings, project or environment file: a regular file (a symlink to one is
/// fine: the user points at it, unless another user made the link) of at most `limit` bytes,
/// this user's (or root's) and not one anyone may change: what it says runs as this user, so
/// another user must not decide it (a `.env` planted in a shared folder). A FIFO or a device is
/// refused without waiting on it.
pub(crate) fn read_regular_file(path: &Path, limit: u64) -> Result<Vec<u8>, ReadFileError> {
    no_planted_link(path)?;
    // Non-blocking: opening a FIFO nobody writes to would wait forever.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    // Looked at again once open: a link swapped in while it was opened is refused, and so is
    // a path that now names another file than the one opened.
    no_planted_link(path)?;
    if std::fs::metadata(path)
        .map(|now| (now.dev(), now.ino()))
        .ok()
        != Some((meta.dev(), meta.ino()))
    {
        return Err(ReadFileError::Unsafe(
            "it changed while it was opened: open it again once nobody changes it".into(),
        ));
    }
    let kind = meta.file_type();
    if !kind.is_file() {
        use std::os::unix::fs::FileTypeExt;
        return Err(ReadFileError::NotRegular(if kind.is_dir() {
            "folder"
        } else if kind.is_fifo() {
            "named pipe"
        } else if kind.is_char_device() || kind.is_block_device() {
            "device"
        } else if kind.is_socket() {
            "socket"
        } else {
            "special file"
        }));
    }
    // Checked on the descriptor read from: what is read is what was checked.
    if meta.uid() != my_uid() && meta.uid() != 0 {
        return Err(ReadFileError::Unsafe(format!(
            "it belongs to {}, not to you ({}): another user decides what it says; use a file \
             of yours",
            user_name(meta.uid()),
            user_name(my_uid())
        )));
    }
    if meta.mode() & 0o002 != 0 {
        return Err(ReadFileError::Unsafe(format!(
            "anyone may change it (mode {:04o}): `chmod o-w` it first",
            meta.mode() & 0o7777
        )));
    }
    if meta.len() > limit {
        return Err(ReadFileError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    let mut bytes = Vec::new();
    // It may grow while read: never more than the limit.
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadFileError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// An I/O error in words a person reads (`permission denied`), never Rust's debug form.
#[must_use]
pub(crate) fn describe(err: &std::io::Error) -> String {
    let Some(code) = err.raw_os_error() else {
        return err.to_string();
    };
    let what = nix::errno::Errno::from_raw(code).desc().to_lowercase();
    match code {
        libc::EMFILE | libc::ENFILE => {
            format!("{what}: too many files are open (raise `ulimit -n`, or end some processes)")
        }
        libc::ENOSPC | libc::EDQUOT => format!("{what}: free some space, then try again"),
        _ => what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("oino-paths-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).expect("meta").mode() & 0o7777
    }

    #[test]
    fn an_own_folder_is_made_private_and_a_loose_one_of_ours_is_made_private_again() {
        let dir = scratch("own");
        let own = dir.join("a/b/oino");
        checked_dir(&own, Folder::Own, "").expect("made");
        assert_eq!(mode(&own), 0o700);
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        checked_dir(&own, Folder::Own, "").expect("checked");
        assert_eq!(mode(&own), 0o700);
        std::fs::remove_dir_all(dir).expect("clean");
    }

    #[test]
    fn a_symlink_is_refused_and_what_it_points_to_is_left_alone() {
        let dir = scratch("link");
        let target = dir.join("target");
        std::fs::create_dir(&target).expect("target");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let link = dir.join("oino-0");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        for folder in [Folder::Own, Folder::Chosen] {
            let err = checked_dir(&link, folder, "do this").expect_err("refused");
            assert!(err.to_string().contains("symbolic link"), "{err}");
            assert!(err.to_string().ends_with("; do this"), "{err}");
        }
        assert_eq!(mode(&target), 0o755);
        std::fs::remove_dir_all(dir).expect("clean");
    }

    #[test]
    fn a_chosen_folder_others_may_write_in_is_refused_and_kept_as_it_is() {
        let dir = scratch("shared");
        let shared = dir.join("shared");
        std::fs::create_dir(&shared).expect("shared");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        let err = checked_dir(&shared, Folder::Chosen, "").expect_err("refused");
        assert!(err.to_string().contains("mode 1777"), "{err}");
        assert_eq!(mode(&shared), 0o1777);
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        checked_dir(&shared, Folder::Chosen, "").expect("a folder of one's own, readable");
        assert_eq!(mode(&shared), 0o755);
        std::fs::remove_dir_all(dir).expect("clean");
    }

    #[test]
    fn an_own_file_is_never_opened_through_a_link() {
        let dir = scratch("files");
        let precious = dir.join("precious");
        std::fs::write(&precious, "keep me").expect("precious");
        let lock = dir.join("x.lock");
        std::os::unix::fs::symlink(&precious, &lock).expect("symlink");
        let err = open_own_file(&lock, false).expect_err("a symlink");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        std::fs::remove_file(&lock).expect("rm");
        std::fs::hard_link(&precious, &lock).expect("hard link");
        let err = open_own_file(&lock, true).expect_err("a hard link");
        assert!(err.to_string().contains("2 names"), "{err}");
        assert_eq!(std::fs::read_to_string(&precious).expect("read"), "keep me");
        std::fs::remove_file(&lock).expect("rm");
        open_own_file(&lock, false).expect("a new file");
        assert_eq!(mode(&lock), 0o600);
        assert!(create_new_file(&lock).is_err(), "there already");
        std::fs::remove_dir_all(dir).expect("clean");
    }

    #[test]
    fn settings_are_read_from_regular_files_only_and_bounded() {
        let dir = scratch("read");
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let started = std::time::Instant::now();
        let err = read_regular_file(&fifo, MAX_SETTINGS_BYTES).expect_err("a fifo");
        assert!(err.to_string().contains("named pipe"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let err =
            read_regular_file(Path::new("/dev/zero"), MAX_SETTINGS_BYTES).expect_err("a device");
        assert!(err.to_string().contains("device"), "{err}");
        let big = dir.join("big");
        std::fs::write(&big, vec![b'#'; 2 << 20]).expect("big");
        let err = read_regular_file(&big, MAX_SETTINGS_BYTES).expect_err("too large");
        assert!(err.to_string().contains("more than the 1048576"), "{err}");
        let small = dir.join("small");
        std::fs::write(&small, "a = 1\n").expect("small");
        let link = dir.join("link");
        std::os::unix::fs::symlink(&small, &link).expect("symlink");
        assert_eq!(
            read_regular_file(&link, MAX_SETTINGS_BYTES).expect("read"),
            b"a = 1\n"
        );
        let err = read_regular_file(&dir.join("none"), MAX_SETTINGS_BYTES).expect_err("missing");
        assert_eq!(err.to_string(), "no such file or directory");
        std::fs::remove_dir_all(dir).expect("clean");
    }

    #[test]
    fn errors_read_as_words() {
        let err = std::io::Error::from_raw_os_error(libc::EMFILE);
        assert_eq!(
            describe(&err),
            "too many open files: too many files are open (raise `ulimit -n`, or end some \
             processes)"
        );
        assert!(!describe(&err).contains("Os {"));
    }
}
