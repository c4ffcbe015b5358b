//! The core's one door: each request's handler, used by the server for its clients and by a
//! front end's link to a core in its own process, so that a request means the same either way
//! and is written once.

use std::future::Future;
use std::time::Duration;

use crate::core::{Core, CoreError};
pub use crate::remote::protocol::requests::Handle;
use crate::remote::protocol::requests::{self, ByCore, Request};
use crate::remote::protocol::{ErrorCode, Reply, Travel};

/// Raw bytes an `output` request returns unless it says otherwise.
const DEFAULT_OUTPUT_BYTES: usize = 64 * 1024;

/// The reply line to a request the core answers; `None` for those its connection answers. The
/// arms come from the table of requests: each kind the core answers goes to its [`Handle`].
pub async fn answer(core: &Core, request: Request) -> Option<Reply> {
    /// The arm of every kind: its handler, its reply as a line.
    struct Arms<'a>(&'a Core);
    impl<'a> ByCore for Arms<'a> {
        type Out = std::pin::Pin<Box<dyn Future<Output = Reply> + Send + 'a>>;
        fn answer<A: Handle>(self, request: A) -> Self::Out {
            Box::pin(reply(self.0, request))
        }
    }
    request.by_core(Arms(core)).ok()?.await.into()
}

async fn reply<A: Handle>(core: &Core, request: A) -> Reply {
    match request.handle(core).await {
        Ok(reply) => Reply::success(reply.to_wire()),
        Err(err) => Reply::from_error(&err),
    }
}

/// The answer to `hello`: this server's version and pid, or why the client's version will not do.
#[must_use]
pub fn hello(request: &requests::Hello) -> Reply {
    use crate::remote::protocol::PROTOCOL_VERSION;
    if request.version == PROTOCOL_VERSION {
        return Reply::success(crate::remote::protocol::wire::Hello {
            version: PROTOCOL_VERSION,
            server_pid: std::process::id(),
            oino: env!("CARGO_PKG_VERSION").to_owned(),
        });
    }
    let runs = format!(
        "runs oino {} (protocol {PROTOCOL_VERSION})",
        env!("CARGO_PKG_VERSION")
    );
    Reply::refusal(
        ErrorCode::Version,
        &format!(
            "this server {runs}, and the client speaks protocol {}: use an oino of the same \
             version, or `oino kill-server` and start again",
            request.version
        ),
        Some(crate::remote::protocol::wire::ErrorData {
            runs: Some(runs),
            ..Default::default()
        }),
    )
}

impl Handle for requests::List {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        Ok(core.entries())
    }
}

impl Handle for requests::Entry {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        core.entry(&self.key)
    }
}

impl Handle for requests::Detach {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        let reason = self
            .reason
            .as_deref()
            .unwrap_or("detached by `oino detach`");
        core.detach(&self.key, self.name.as_deref(), reason).await
    }
}

impl Handle for requests::Output {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        let max_bytes = self.max_bytes.unwrap_or(DEFAULT_OUTPUT_BYTES);
        core.output(&self.key, self.since, max_bytes)
    }
}

impl Handle for requests::WaitOutput {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        let timeout = Duration::from_millis(self.timeout_ms);
        core.wait_output(&self.key, self.offset, timeout).await
    }
}

impl Handle for requests::Wait {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        core.wait(&self.key, self.timeout_ms.map(Duration::from_millis))
            .await
    }
}

impl Handle for requests::Kill {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        core.kill_counted(&self.key).await
    }
}

impl Handle for requests::Project {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        let project = Travel::from_wire(self.project);
        core.start_project(&project, &self.env, self.only.as_deref())
    }
}

impl Handle for requests::Down {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        core.stop_project(&Travel::from_wire(self.project), &self.only)
            .await
    }
}

impl Handle for requests::Up {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        let project = Travel::from_wire(self.project);
        core.apply_project(&project, &self.env, &self.only).await
    }
}

impl Handle for requests::Restart {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        core.restart(&self.key, Travel::from_wire(self.size)).await
    }
}

impl Handle for requests::Send {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        let key = self.key.clone();
        core.write(&key, self.into_bytes()).await?;
        Ok("sent".to_owned())
    }
}

impl Handle for requests::Start {
    /// A call whose waiter is the core itself: an interface watches its pane.
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        let handle = core.start(self.into_call())?;
        let entry = core.entry(&handle.id);
        tokio::spawn(handle.result());
        entry
    }
}

impl Handle for requests::Snapshot {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        core.snapshot(&self.key, Travel::from_wire(self.size), 0)
    }
}

impl Handle for requests::Resize {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        core.resize(&self.key, Travel::from_wire(self.size))?;
        Ok("resized".to_owned())
    }
}

impl Handle for requests::HistoryPage {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        core.history_page(&self.key, self.lines_back, self.rows)
    }
}

impl Handle for requests::FindLine {
    async fn handle(self, core: &Core) -> Result<Self::Reply, CoreError> {
        let pattern = crate::output::Matcher::new(&self.query);
        core.find_line(&self.key, self.from, self.newer, pattern)
            .await
    }
}
