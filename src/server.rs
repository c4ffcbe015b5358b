//! The oino server: a core that outlives the windows, behind a per-user Unix socket.
//!
//! One server per socket: it holds an exclusive lock on `NAME.lock` beside the socket for its
//! whole life, so two clients starting servers at once end with one (the loser sees the lock and
//! leaves). The folder is 0700, the socket 0600, and a peer of another uid is refused. Each
//! connection is served by a task of its own, one request at a time; the server ends a while
//! after the last process ended and the last client left, or on `kill_server`.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

use crate::call::{CallOptions, TimeoutPolicy};
use crate::core::{CallRequest, Core, CoreConfig, CoreEvent};
use crate::protocol::{ErrorCode, Hello, MAX_REQUEST_BYTES, PROTOCOL_VERSION, Reply, Request};

/// How long an idle server (no process, no client) stays.
pub const DEFAULT_IDLE_EXIT: Duration = Duration::from_secs(60);
/// Raw bytes an `output` request returns unless it says otherwise.
const DEFAULT_OUTPUT_BYTES: usize = 64 * 1024;

/// Where the socket of session `name` lives: `$XDG_RUNTIME_DIR/oino/NAME.sock`, else
/// `/tmp/oino-UID/NAME.sock`.
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

/// The socket a command uses: `--socket`, else `OINO_SOCKET`, else the session's.
#[must_use]
pub fn choose_socket(socket: Option<PathBuf>, session: Option<&str>) -> PathBuf {
    socket
        .or_else(|| {
            std::env::var_os("OINO_SOCKET")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| session_socket(session.unwrap_or("default")))
}

/// Makes the socket's folder (0700), or checks that an existing one is ours and private.
pub fn prepare_dir(dir: &Path) -> anyhow::Result<()> {
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
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("making {} private", dir.display()))?;
    }
    Ok(())
}

/// How a server run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Served {
    /// Another server holds this socket.
    AlreadyRunning,
    Stopped,
}

/// Serves `socket` until idle for `idle_exit`, `kill_server`, SIGTERM or SIGINT.
pub async fn serve(socket: &Path, idle_exit: Duration) -> anyhow::Result<Served> {
    let dir = socket
        .parent()
        .context("the socket path has no folder")?
        .to_owned();
    prepare_dir(&dir)?;
    let lock_path = socket.with_extension("lock");
    let lock_file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("opening {}", lock_path.display()))?;
    let Ok(_lock) = Flock::lock(lock_file, FlockArg::LockExclusiveNonblock) else {
        return Ok(Served::AlreadyRunning);
    };
    // The lock is ours, so a socket file left here is stale.
    let _ = std::fs::remove_file(socket);
    let listener =
        UnixListener::bind(socket).with_context(|| format!("listening on {}", socket.display()))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    eprintln!(
        "oino server {} listening on {}",
        std::process::id(),
        socket.display()
    );

    let core = Core::new(CoreConfig::default())?;
    // Clients connected, watched: the last one leaving may start the idle time.
    let (clients, mut clients_changed) = watch::channel(0usize);
    let clients = Arc::new(clients);
    let mut events = core.subscribe();
    let (stop_tx, mut stop) = watch::channel(false);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    // Closing the terminal that started it does not end a server.
    let _ignore_hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    // Nothing wakes an idle server but its deadline: the idle time is looked at again only when
    // a client comes or goes, or a process starts or ends.
    let mut idle_deadline = Some(tokio::time::Instant::now() + idle_exit);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let (core, clients, stop_tx) = (core.clone(), Arc::clone(&clients), stop_tx.clone());
                    clients.send_modify(|count| *count += 1);
                    tokio::spawn(async move {
                        if let Err(err) = serve_connection(stream, &core, &stop_tx).await {
                            eprintln!("oino server: a connection ended: {err:#}");
                        }
                        clients.send_modify(|count| *count -= 1);
                    });
                }
                Err(err) => eprintln!("oino server: accept failed: {err}"),
            },
            _ = clients_changed.changed() => {}
            event = events.recv() => {
                if matches!(event, Ok(CoreEvent::OutputChanged { .. })) {
                    continue;
                }
            }
            () = crate::pty::sleep_until_opt(idle_deadline) => break,
            _ = stop.changed() => break,
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
        }
        let busy =
            *clients.borrow() > 0 || core.entries().iter().any(|entry| entry.state.is_running());
        idle_deadline = match (busy, idle_deadline) {
            (true, _) => None,
            (false, None) => Some(tokio::time::Instant::now() + idle_exit),
            (false, deadline) => deadline,
        };
    }
    eprintln!("oino server {} stopping", std::process::id());
    core.shutdown().await;
    let _ = std::fs::remove_file(socket);
    Ok(Served::Stopped)
}

/// Serves one client, a request at a time.
async fn serve_connection(
    stream: UnixStream,
    core: &Core,
    stop: &watch::Sender<bool>,
) -> anyhow::Result<()> {
    let peer = stream.peer_cred()?;
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = Vec::new();
    let uid = nix::unistd::getuid().as_raw();
    if peer.uid() != uid {
        // The refusal answers the first request, so that the client reads it.
        let _ = (&mut reader)
            .take(MAX_REQUEST_BYTES as u64)
            .read_until(b'\n', &mut line)
            .await;
        let refusal = Reply::failure(
            ErrorCode::Forbidden,
            format!(
                "refused: this oino server belongs to uid {uid}, and you are uid {}",
                peer.uid()
            ),
        );
        send(&mut write, &refusal).await?;
        return Ok(());
    }
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_REQUEST_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return Ok(());
        }
        if line.len() > MAX_REQUEST_BYTES {
            let too_long = Reply::failure(
                ErrorCode::TooLarge,
                format!(
                    "the request is longer than {MAX_REQUEST_BYTES} bytes: send less at a time"
                ),
            );
            send(&mut write, &too_long).await?;
            // The rest of that line cannot be read as a request.
            return Ok(());
        }
        let reply = match serde_json::from_slice::<Request>(&line) {
            Ok(Request::KillServer {}) => {
                send(&mut write, &Reply::success("stopping")).await?;
                stop.send_replace(true);
                return Ok(());
            }
            Ok(Request::Subscribe {}) => {
                let events = core.subscribe();
                send(&mut write, &Reply::success("subscribed")).await?;
                return stream_events(events, &mut write).await;
            }
            Ok(request @ Request::Run { .. }) => {
                match run(core, request, &mut reader, &mut write).await? {
                    Some(reply) => reply,
                    None => return Ok(()),
                }
            }
            Ok(request) => handle(core, request).await,
            Err(err) if line.ends_with(b"\n") => Reply::failure(
                ErrorCode::BadRequest,
                format!("not a request: {err}; send one JSON object a line, see docs/protocol.md"),
            ),
            Err(_) => Reply::failure(
                ErrorCode::BadRequest,
                "the request was cut short: end each request with a newline",
            ),
        };
        send(&mut write, &reply).await?;
    }
}

/// Writes the core's events to a subscriber until it goes. A subscriber that falls behind is
/// told so (`{"event": "lagged"}`) and should list the entries again.
async fn stream_events(
    mut events: tokio::sync::broadcast::Receiver<crate::core::CoreEvent>,
    write: &mut tokio::net::unix::OwnedWriteHalf,
) -> anyhow::Result<()> {
    loop {
        let line = match events.recv().await {
            Ok(event) => serde_json::to_vec(&event)?,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                br#"{"event":"lagged"}"#.to_vec()
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
        };
        // A subscriber that went away is not an error.
        if write.write_all(&line).await.is_err() || write.write_all(b"\n").await.is_err() {
            return Ok(());
        }
    }
}

async fn send(write: &mut tokio::net::unix::OwnedWriteHalf, reply: &Reply) -> anyhow::Result<()> {
    write.write_all(reply.as_bytes()).await?;
    write.write_all(b"\n").await?;
    Ok(())
}

/// Runs a call to its result for a client that waits; with `started`, says first that it exists.
/// `None` when the client left before the result: its call was ended, since nobody would read
/// what it did (a call detached before that lives on as a task).
async fn run(
    core: &Core,
    request: Request,
    reader: &mut BufReader<tokio::net::unix::OwnedReadHalf>,
    write: &mut tokio::net::unix::OwnedWriteHalf,
) -> anyhow::Result<Option<Reply>> {
    let failed = |err: crate::core::CoreError| Reply::from_error(&err);
    let Request::Run {
        command,
        id,
        cwd,
        timeout_ms,
        on_timeout,
        max_bytes,
        title,
        env,
        started,
    } = request
    else {
        return Ok(Some(Reply::failure(
            ErrorCode::BadRequest,
            "not a run request",
        )));
    };
    let on_timeout = match on_timeout.as_deref() {
        None | Some("kill") => TimeoutPolicy::Kill,
        Some("detach") => TimeoutPolicy::Detach,
        Some(other) => {
            return Ok(Some(Reply::failure(
                ErrorCode::BadRequest,
                format!("on_timeout `{other}` is unknown: use `kill` or `detach`"),
            )));
        }
    };
    let request = CallRequest {
        id,
        cwd,
        env,
        title,
        options: CallOptions {
            timeout: timeout_ms.map(Duration::from_millis),
            on_timeout,
            max_result_bytes: max_bytes.unwrap_or(crate::output::DEFAULT_MAX_RESULT_BYTES),
            ..CallOptions::default()
        },
        ..CallRequest::new(command)
    };
    let handle = match core.start(request) {
        Ok(handle) => handle,
        Err(err) => return Ok(Some(failed(err))),
    };
    let id = handle.id.clone();
    let result = handle.result();
    tokio::pin!(result);
    let acknowledged = if started {
        let entry = core.entry(&id).map_or_else(failed, Reply::success);
        send(write, &entry).await.is_ok()
    } else {
        true
    };
    if acknowledged {
        // The end of the connection, seen without reading a request that may follow.
        let client_left = async { matches!(reader.fill_buf().await, Ok([]) | Err(_)) };
        tokio::select! {
            biased;
            result = &mut result => return Ok(Some(Reply::success(result))),
            left = client_left => if !left {
                // The client sent more meanwhile: it is still there, and waits.
                return Ok(Some(Reply::success(result.await)));
            }
        }
    }
    // Unless it became a task just now: that one lives on.
    if core
        .entry(&id)
        .is_ok_and(|entry| entry.kind == crate::core::EntryKind::Call)
    {
        let _ = core.kill(&id).await;
    }
    result.await;
    Ok(None)
}

/// Starts a call whose waiter is the server (an interface watches its pane); answers its entry.
fn start(core: &Core, request: CallRequest) -> Reply {
    match core.start(request) {
        Ok(handle) => {
            let entry = core.entry(&handle.id);
            tokio::spawn(handle.result());
            entry.map_or_else(|err| Reply::from_error(&err), Reply::success)
        }
        Err(err) => Reply::from_error(&err),
    }
}

/// Answers one request.
async fn handle(core: &Core, request: Request) -> Reply {
    let failed = |err: crate::core::CoreError| Reply::from_error(&err);
    match request {
        Request::Hello { version } if version == PROTOCOL_VERSION => Reply::success(Hello {
            version: PROTOCOL_VERSION,
            server_pid: std::process::id(),
        }),
        Request::Hello { version } => Reply::failure(
            ErrorCode::Version,
            format!(
                "this server speaks protocol {PROTOCOL_VERSION}, not {version}: use an oino of the \
             same version, or `oino kill-server` and start again"
            ),
        ),
        Request::List {} => Reply::success(core.entries()),
        Request::Entry { key } => core.entry(&key).map_or_else(failed, Reply::success),
        Request::Detach { key, name, reason } => core
            .detach(
                &key,
                name.as_deref(),
                reason.as_deref().unwrap_or("detached by `oino detach`"),
            )
            .await
            .map_or_else(failed, Reply::success),
        Request::Output {
            key,
            since,
            max_bytes,
        } => core
            .output(&key, since, max_bytes.unwrap_or(DEFAULT_OUTPUT_BYTES))
            .map_or_else(failed, Reply::success),
        Request::WaitOutput {
            key,
            offset,
            timeout_ms,
        } => core
            .wait_output(&key, offset, Duration::from_millis(timeout_ms))
            .await
            .map_or_else(failed, Reply::success),
        Request::Wait { key, timeout_ms } => core
            .wait(&key, timeout_ms.map(Duration::from_millis))
            .await
            .map_or_else(failed, Reply::success),
        Request::Kill { key } => core.kill(&key).await.map_or_else(failed, Reply::success),
        Request::Send { key, text } => core
            .write(&key, text.into_bytes())
            .await
            .map_or_else(failed, |()| Reply::success("sent")),
        Request::Start {
            command,
            cwd,
            title,
            env,
            size,
        } => start(
            core,
            CallRequest {
                cwd,
                env,
                size,
                title,
                waiter: crate::pty::Waiter::Person,
                ..CallRequest::new(command)
            },
        ),
        Request::Snapshot { key, size } => core
            .snapshot(&key, size, 0)
            .map_or_else(failed, Reply::success),
        Request::Resize { key, size } => core
            .resize(&key, size)
            .map_or_else(failed, |()| Reply::success("resized")),
        Request::HistoryPage {
            key,
            lines_back,
            rows,
        } => core
            .history_page(&key, lines_back, rows)
            .map_or_else(failed, Reply::success),
        Request::FindLine {
            key,
            from,
            newer,
            query,
        } => core
            .find_line(&key, from, newer, |line| {
                crate::app::matches_query(line, &query)
            })
            .map_or_else(failed, Reply::success),
        // Answered by the connection itself.
        Request::Run { .. } => {
            Reply::failure(ErrorCode::BadRequest, "a run is answered by its connection")
        }
        Request::KillServer {} => Reply::success("stopping"),
        Request::Subscribe {} => Reply::success("subscribed"),
    }
}
