//! What can go wrong in the core, and the stable [`ErrorCode`] each failure has on the wire.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::tasks::TaskError;
use super::types::{MAX_COMMAND_BYTES, MAX_ID_CHARS};
use crate::pty::PtyError;

/// What the core refuses or fails at, in words for a person; [`CoreError::code`] gives its wire
/// code and [`CoreError::data`] what a front end acts on.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The PTY layer refused or failed: a missing folder, a PTY or bash that would not start, an
    /// environment too large, a process that ended.
    #[error(transparent)]
    Pty(#[from] PtyError),
    /// A task name was refused.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// No call or task has that key.
    #[error("no call or task `{0}`")]
    NotFound(String),
    /// It has ended, so it cannot be detached.
    #[error("call `{0}` is not running: only a running call can be detached")]
    NotRunning(String),
    /// It is a task already.
    #[error("`{0}` is already a background task")]
    AlreadyTask(String),
    /// A restart killed it, but it did not end: the new call was not started.
    #[error("`{0}` did not end when killed, so it was not started again: try once more")]
    WouldNotEnd(String),
    /// The core is ending its processes: nothing new starts.
    #[error("oino is ending its processes: nothing new starts now")]
    ShuttingDown,
    /// A project from a client fails the checks a project file gets (a name, a pattern, what
    /// `after` names).
    #[error("the project cannot be started: {0}")]
    BadProject(String),
    /// `only` names no process of the project.
    #[error("{} has no process `{name}`: it has {names}", file.display())]
    NoSuchProcess {
        /// The name asked for.
        name: String,
        /// The project file.
        file: PathBuf,
        /// Its processes' names, comma-separated.
        names: String,
    },
    /// The id is a call's id or a task's name already.
    #[error("the id `{0}` is taken (a call's id, or a task's name): choose another id")]
    DuplicateId(String),
    /// A call id that reads as a task id (`t` and a number).
    #[error("call id `{0}` reads as a task id (`t` and a number): choose another id")]
    TaskLikeId(String),
    /// A call id that is not 1 to 64 letters, digits, `-`, `_` or `.`.
    #[error("invalid call id {0:?}: use 1 to {MAX_ID_CHARS} letters, digits, `-`, `_` or `.`")]
    InvalidId(String),
    /// The command is empty.
    #[error("the command is empty: give a command to run")]
    EmptyCommand,
    /// This process's folder cannot be told (it was removed, or is out of reach).
    #[error("cannot tell this folder: {0}")]
    NoFolder(String),
    /// A folder whose path is not UTF-8: the protocol's JSON cannot carry it.
    #[error(
        "the folder {0:?} is not UTF-8, which oino cannot pass to its server: run the command \
         from a folder whose path is UTF-8"
    )]
    NotUtf8Folder(PathBuf),
    /// A command longer than `bash -c` takes: its length in bytes.
    #[error(
        "the command is {0} bytes, more than `bash -c` takes ({MAX_COMMAND_BYTES}): write it to a \
         file and run the file"
    )]
    CommandTooLong(usize),
    /// No log can be kept in that folder.
    #[error("cannot keep a log in {dir}: {message}")]
    Log {
        /// The logs' folder.
        dir: PathBuf,
        /// Why, in words.
        message: String,
    },
    /// Left running by a server that died: it can only be killed.
    #[error(
        "`{key}` was left running by a server that died (pid {server_pid}): its terminal went \
         with that server, so it cannot be read or typed into, only killed"
    )]
    Orphaned {
        /// The key asked for.
        key: String,
        /// The pid of the server that died.
        server_pid: u32,
    },
    /// The logs' folder is not safe from other users, or cannot be made.
    #[error("cannot keep logs: {0}")]
    UnsafeFolder(#[from] crate::paths::UnsafePath),
    /// The entry's log could not be read.
    #[error("cannot read the log of `{id}`: {message}")]
    ReadLog {
        /// The key asked for.
        id: String,
        /// Why, in words.
        message: String,
    },
    /// A request past a limit that cannot be clamped (a count that would start work).
    #[error("{what} is past the limit of {limit}: send less at a time")]
    PastLimit {
        /// What was asked, in words.
        what: String,
        /// The limit, in words with its unit.
        limit: String,
    },
    /// It ended long ago and is no longer kept; its log is still on disk.
    #[error(
        "`{key}` ended and is no longer kept (only the newest {kept} ended ones are): its output \
         is in {}",
        log_path.display()
    )]
    Forgotten {
        /// The key asked for.
        key: String,
        /// How many ended entries of its kind (calls, or tasks) are kept.
        kept: usize,
        /// Its log: its output is still there.
        log_path: PathBuf,
    },
}

/// What a front end acts on beside a failure's words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorData {
    /// The key of the entry it is about, as it was asked for.
    pub key: Option<String>,
    /// The log of the entry it is about (a forgotten entry's output is still there).
    pub log_path: Option<PathBuf>,
    /// The entry was left running by a server that died (this one's pid): only a kill reaches it.
    pub left_by_server: Option<u32>,
    /// What a server of another protocol runs, as `runs oino 0.1.0 (protocol 11)`.
    pub runs: Option<String>,
}

impl ErrorData {
    /// Whether there is nothing to act on.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// What kind of failure an error is, as clients decide on it. Sent over the socket beside the
/// message (docs/protocol.md): wire API, never renamed or reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No call or task has that id or name.
    NoSuchEntry,
    /// It ended long ago and is no longer listed; its log is still on disk.
    Forgotten,
    /// A call with that id exists.
    DuplicateId,
    /// A task with that name exists.
    DuplicateName,
    /// The name breaks a rule of names.
    InvalidName,
    /// It is not running (it cannot be detached, or typed into).
    NotRunning,
    /// It is a task already.
    AlreadyTask,
    /// Something is too large (a command, a request).
    TooLarge,
    /// The request cannot be done as asked (bad JSON, a missing field, an empty command, a
    /// missing folder).
    BadRequest,
    /// Client and server speak different protocol versions.
    Version,
    /// The server belongs to another user, or a folder or file oino would use is not safe
    /// from other users.
    Forbidden,
    /// The server is out of a resource (file descriptors) for now.
    Busy,
    /// The server could not do it (a PTY, a log).
    Failed,
    /// A code this client does not know (a newer server).
    #[serde(other)]
    Unknown,
}

impl CoreError {
    /// What a front end may act on beside the words.
    #[must_use]
    pub fn data(&self) -> ErrorData {
        match self {
            Self::Forgotten { key, log_path, .. } => ErrorData {
                key: Some(key.clone()),
                log_path: Some(log_path.clone()),
                ..ErrorData::default()
            },
            Self::Orphaned { key, server_pid } => ErrorData {
                key: Some(key.clone()),
                left_by_server: Some(*server_pid),
                ..ErrorData::default()
            },
            Self::NotFound(key) => ErrorData {
                key: Some(key.clone()),
                ..ErrorData::default()
            },
            _ => ErrorData::default(),
        }
    }

    /// The kind of failure, for clients to decide on.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Pty(
                PtyError::MissingCwd(_)
                | PtyError::CwdNotADirectory(_)
                | PtyError::NulByte(_)
                | PtyError::BadVariableName(_),
            )
            | Self::EmptyCommand
            | Self::InvalidId(_)
            | Self::TaskLikeId(_)
            | Self::NoFolder(_)
            | Self::NotUtf8Folder(_)
            | Self::BadProject(_) => ErrorCode::BadRequest,
            Self::Pty(PtyError::InputClosed) | Self::NotRunning(_) | Self::Orphaned { .. } => {
                ErrorCode::NotRunning
            }
            Self::Pty(PtyError::Open(_) | PtyError::Spawn(_) | PtyError::Resize(_))
            | Self::Log { .. }
            | Self::ReadLog { .. }
            | Self::WouldNotEnd(_)
            | Self::ShuttingDown => ErrorCode::Failed,
            Self::Task(TaskError::DuplicateName(_)) => ErrorCode::DuplicateName,
            Self::Task(TaskError::InvalidName { .. }) => ErrorCode::InvalidName,
            Self::NotFound(_) | Self::NoSuchProcess { .. } => ErrorCode::NoSuchEntry,
            Self::Forgotten { .. } => ErrorCode::Forgotten,
            Self::AlreadyTask(_) => ErrorCode::AlreadyTask,
            Self::UnsafeFolder(_) => ErrorCode::Forbidden,
            Self::DuplicateId(_) => ErrorCode::DuplicateId,
            Self::CommandTooLong(_)
            | Self::PastLimit { .. }
            | Self::Pty(PtyError::VariableTooLong { .. } | PtyError::EnvironmentTooLarge { .. }) => {
                ErrorCode::TooLarge
            }
        }
    }
}
