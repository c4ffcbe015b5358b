//! One error out of a link, whichever side the core is on: the core refused (its wire code, what
//! is wrong in words, and data a front end acts on), the server could not be reached (nothing was
//! sent), it went away while a call ran, or the connection failed otherwise. Each front end words
//! its own advice from the code.

use std::path::PathBuf;

use crate::core::{CoreError, ErrorCode, ErrorData};
use crate::remote::client::Refused;

/// A failure of a request through a [`super::Link`].
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The core turned it down.
    #[error("{message}")]
    Refused {
        /// Its wire code: what a front end decides by.
        code: ErrorCode,
        /// What is wrong, in words for a person.
        message: String,
        /// What a front end may act on: the key, a forgotten entry's log, a dead server's pid.
        data: ErrorData,
    },
    /// The server could not be reached, so the request was never sent: trying it again on
    /// another server cannot run anything twice.
    #[error("{0:#}")]
    NotSent(anyhow::Error),
    /// The server went away while a client waited for a call's result.
    #[error(transparent)]
    ServerGone(#[from] ServerGone),
    /// The connection failed otherwise (the server went away, an answer that does not read).
    #[error("{0:#}")]
    Lost(anyhow::Error),
}

impl LinkError {
    /// The kind of failure, when the core said it.
    #[must_use]
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// What the core gave beside the words (nothing for failures it did not say).
    #[must_use]
    pub fn data(&self) -> ErrorData {
        match self {
            Self::Refused { data, .. } => data.clone(),
            _ => ErrorData::default(),
        }
    }

    /// An error of a client of the server: its refusal, or a connection that failed.
    #[must_use]
    pub(crate) fn from_client(err: anyhow::Error) -> Self {
        match err.downcast::<Refused>() {
            Ok(refused) => Self::Refused {
                code: refused.code,
                message: refused.message,
                data: refused.data,
            },
            Err(err) => Self::Lost(err),
        }
    }
}

impl From<CoreError> for LinkError {
    fn from(err: CoreError) -> Self {
        Self::Refused {
            code: err.code(),
            data: err.data(),
            message: err.to_string(),
        }
    }
}

/// The kind of failure an error is and its data, wherever it came from: a link's, a client's
/// refusal, or the core's. `None` for anything else (a server gone, an I/O error).
#[must_use]
pub fn refusal(err: &anyhow::Error) -> Option<(ErrorCode, ErrorData)> {
    err.chain().find_map(|cause| {
        if let Some(err) = cause.downcast_ref::<LinkError>() {
            return err.code().map(|code| (code, err.data()));
        }
        if let Some(refused) = cause.downcast_ref::<Refused>() {
            return Some((refused.code, refused.data.clone()));
        }
        cause
            .downcast_ref::<CoreError>()
            .map(|err| (err.code(), err.data()))
    })
}

/// The kind of failure an error is (see [`refusal`]).
#[must_use]
pub fn error_code(err: &anyhow::Error) -> Option<ErrorCode> {
    refusal(err).map(|(code, _)| code)
}

/// The server went away (killed, crashed) while a client waited for a call's result: its
/// command may run on, and the output it wrote is in its log.
#[derive(Debug, thiserror::Error)]
#[error(
    "the oino server ended before `{id}` finished (it was killed, or crashed): its command may \
     still run. A new server lists what it left running as `{id}.left` (`oino ls`), and `oino \
     kill {id}.left` ends it"
)]
pub struct ServerGone {
    /// The call whose waiter lost its server.
    pub id: String,
    /// The call's log: what it wrote is there.
    pub log_path: PathBuf,
}
