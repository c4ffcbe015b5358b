//! The oino server: a core that outlives the windows, behind a per-user Unix socket.
//!
//! One server per socket: it holds an exclusive lock on `NAME.lock` beside the socket for its
//! whole life, so two clients starting servers at once end with one (the loser sees the lock and
//! leaves). The folder is 0700, the socket 0600, and a peer of another uid is refused. Each
//! connection is served by a task of its own, one request at a time; the server ends a while
//! after the last process ended and the last client left, or on `kill_server`.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

use crate::core::project::ProcessPhase;
use crate::core::{Core, CoreConfig, CoreEvent};
use crate::remote::protocol::{ErrorCode, MAX_REQUEST_BYTES, Reply};
use crate::remote::socket::{elder_server, lock_holder, lock_path, prepare_dir};

mod connection;

/// How long an idle server (no process, no client) stays.
pub(crate) const DEFAULT_IDLE_EXIT: Duration = Duration::from_secs(60);

/// Closes every descriptor but standard input, output and error, so that a server started by a
/// client holds none of the client's (a pipe a harness waits on, make's jobserver, bats' fd 3).
/// Called first thing, before anything of the server's own is open.
pub(crate) fn close_inherited_descriptors() {
    let inherited = crate::pty::procfs::own_descriptors();
    let inherited = inherited.into_iter().filter(|fd| *fd > 2);
    // The listing's own descriptor is closed by now: closing its number again does nothing.
    for fd in inherited {
        let _ = nix::unistd::close(fd);
    }
}

/// How a server run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Served {
    /// Another server holds this socket's lock (its pid, when it wrote it there).
    AlreadyRunning {
        /// The pid of the server that has it; `None` when its lock file does not say.
        holder: Option<u32>,
    },
    /// It served until it stopped: idle, `kill_server`, a signal, or its socket taken by another.
    Stopped,
}

/// A file's identity: a path removed and made again is another file.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|meta| (meta.dev(), meta.ino()))
}

/// The exclusive lock a server holds on `SOCKET.lock` for its whole life.
struct ServerLock {
    _lock: Flock<File>,
    id: (u64, u64),
}

impl ServerLock {
    /// Takes the lock, and writes this server's pid in it; `None` when another server holds it.
    fn take(socket: &Path) -> anyhow::Result<Option<Self>> {
        let path = lock_path(socket);
        // Never through a link, and only a file of this user's in the checked folder: the pid
        // written below then truncates nothing else.
        let file = crate::paths::open_own_file(&path, false)
            .with_context(|| format!("opening the server's lock {}", path.display()))?;
        let id = (file.metadata()?.dev(), file.metadata()?.ino());
        let Ok(mut lock) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else {
            return Ok(None);
        };
        lock.set_len(0)?;
        writeln!(lock, "{}", std::process::id())?;
        Ok(Some(Self { _lock: lock, id }))
    }

    /// Whether the lock file at its path is still the one held (not removed or replaced).
    fn in_place(&self, socket: &Path) -> bool {
        file_id(&lock_path(socket)) == Some(self.id)
    }
}

/// The listening socket, and the means to notice that its path was removed.
struct Listening {
    socket: PathBuf,
    lock: ServerLock,
    listener: Option<UnixListener>,
    id: Option<(u64, u64)>,
    /// One descriptor kept back, to refuse a client in words when all others are used.
    spare: Option<File>,
    /// Clients are being refused for want of descriptors (said once per episode).
    starved: bool,
}

impl Listening {
    /// Takes the socket for this server, or says which server has it: one whose socket (or
    /// folder) was just removed makes it again at once, and goes first even when its lock went
    /// with the folder, since it keeps its processes.
    fn take(socket: &Path) -> anyhow::Result<Result<Self, Served>> {
        if let Some(holder) = elder_server(socket) {
            return Ok(Err(Served::AlreadyRunning {
                holder: Some(holder),
            }));
        }
        let Some(lock) = ServerLock::take(socket)? else {
            return Ok(Err(Served::AlreadyRunning {
                holder: lock_holder(socket),
            }));
        };
        Self::bind(socket, lock).map(Ok)
    }

    fn bind(socket: &Path, lock: ServerLock) -> anyhow::Result<Self> {
        let mut listening = Self {
            socket: socket.to_owned(),
            lock,
            listener: None,
            id: None,
            spare: File::open("/dev/null").ok(),
            starved: false,
        };
        listening.listen()?;
        Ok(listening)
    }

    /// Listens at the path afresh: anything there is stale, since the lock is ours. The socket
    /// is bound under a name of its own, made 0600 (the folder is checked: nobody else can
    /// change a name in it), and only then moved to its path, so that it is never there with
    /// another mode. (The umask would do it too, but it is the whole process's: a call spawned
    /// meanwhile would inherit it.)
    fn listen(&mut self) -> anyhow::Result<()> {
        let _ = std::fs::remove_file(&self.socket);
        let fresh = self
            .socket
            .with_extension(format!("sock.{}", std::process::id()));
        // One left by a server of this pid that died: a socket, never another kind of file.
        if std::fs::symlink_metadata(&fresh)
            .is_ok_and(|meta| std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()))
        {
            let _ = std::fs::remove_file(&fresh);
        }
        let listener = UnixListener::bind(&fresh)
            .with_context(|| format!("listening on {}", self.socket.display()))?;
        let placed = std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| std::fs::rename(&fresh, &self.socket));
        if let Err(err) = placed {
            let _ = std::fs::remove_file(&fresh);
            return Err(
                anyhow::Error::new(err).context(format!("listening on {}", self.socket.display()))
            );
        }
        self.id = file_id(&self.socket);
        self.listener = Some(listener);
        Ok(())
    }

    /// Stops listening, and removes the socket when it is still this server's.
    fn close(&mut self) {
        if self.is_listening() && file_id(&self.socket) == self.id {
            let _ = std::fs::remove_file(&self.socket);
        }
        self.listener = None;
    }

    /// Whether clients can still reach this server.
    fn is_listening(&self) -> bool {
        self.listener.is_some()
    }

    async fn accept(&self) -> std::io::Result<UnixStream> {
        match &self.listener {
            Some(listener) => listener.accept().await.map(|(stream, _)| stream),
            None => std::future::pending().await,
        }
    }

    /// The socket's path changed (removed, its folder removed): make it again while this
    /// server holds the lock; if another server took the lock meanwhile, stop listening.
    fn check(&mut self, watch: &mut SocketWatch) {
        if !self.is_listening()
            || file_id(&self.socket) == self.id && self.lock.in_place(&self.socket)
        {
            return;
        }
        let Some(dir) = self.socket.parent() else {
            return;
        };
        if let Err(err) = prepare_dir(dir) {
            eprintln!("oino server: the socket's folder is gone and cannot be made again: {err:#}");
            return;
        }
        watch.rewatch();
        if !self.lock.in_place(&self.socket) {
            match ServerLock::take(&self.socket) {
                Ok(Some(lock)) => self.lock = lock,
                Ok(None) => {
                    eprintln!(
                        "oino server: another server (pid {}) now serves {}: this one takes no \
                         new clients and ends once its clients and processes are done",
                        lock_holder(&self.socket)
                            .map_or_else(|| "?".to_owned(), |pid| pid.to_string()),
                        self.socket.display()
                    );
                    self.listener = None;
                    return;
                }
                Err(err) => {
                    eprintln!("oino server: cannot take the lock again: {err:#}");
                    return;
                }
            }
        }
        match self.listen() {
            Ok(()) => eprintln!(
                "oino server: {} was removed: listening there again",
                self.socket.display()
            ),
            Err(err) => eprintln!("oino server: cannot listen again: {err:#}"),
        }
    }

    /// Out of descriptors: refuses the next client in words with the one kept back, and says so
    /// in the log once.
    async fn refuse_for_want_of_descriptors(&mut self, err: &std::io::Error) {
        if !self.starved {
            self.starved = true;
            eprintln!(
                "oino server: out of file descriptors ({err}): new clients are refused until \
                 some close (the limit is `ulimit -n`)"
            );
        }
        let Some(listener) = &self.listener else {
            return;
        };
        if self.spare.take().is_some() {
            if let Ok(Ok((stream, _))) =
                tokio::time::timeout(Duration::from_millis(100), listener.accept()).await
            {
                let refusal = Reply::failure(
                    ErrorCode::Busy,
                    "the oino server has run out of file descriptors: close some of its clients \
                     (or raise its `ulimit -n`), then try again",
                );
                // The refusal answers the first request, so that the client reads it (a client
                // sends it at once: one that does not is not waited for).
                let _ = tokio::time::timeout(
                    Duration::from_millis(20),
                    answer_first_request(stream, &refusal),
                )
                .await;
            }
            self.spare = File::open("/dev/null").ok();
        }
        if self.spare.is_none() {
            // Not even that: wait a little rather than spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A client was accepted: descriptors are there again.
    fn fed(&mut self) {
        if std::mem::take(&mut self.starved) {
            eprintln!("oino server: file descriptors are available again: serving new clients");
        }
    }
}

/// The signals that end a server (SIGTERM, SIGINT); SIGHUP is ignored: closing the terminal that
/// started it does not end a server.
struct Signals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
    _hangup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
            _hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for one that ends the server.
    async fn stop(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}

/// Notices changes in the socket's folder: inotify, read by a thread of its own, or a look every
/// few seconds without it.
struct SocketWatch {
    dir: PathBuf,
    changes: Option<tokio::sync::mpsc::Receiver<()>>,
    /// Without inotify, when to look next (kept across the server loop's turns).
    next_look: tokio::time::Instant,
}

/// How often the socket is looked at when inotify cannot tell.
const SOCKET_POLL: Duration = Duration::from_secs(2);

impl SocketWatch {
    fn new(socket: &Path) -> Self {
        let mut watch = Self {
            dir: socket.parent().map(Path::to_owned).unwrap_or_default(),
            changes: None,
            next_look: tokio::time::Instant::now() + SOCKET_POLL,
        };
        watch.rewatch();
        watch
    }

    /// Watches the folder (again: it may have been made anew). The thread of a former watch
    /// ends with it: removing a folder removes its watch.
    fn rewatch(&mut self) {
        let watched = Inotify::init(InitFlags::IN_CLOEXEC).and_then(|inotify| {
            inotify.add_watch(
                &self.dir,
                AddWatchFlags::IN_DELETE
                    | AddWatchFlags::IN_MOVED_FROM
                    | AddWatchFlags::IN_MOVED_TO
                    | AddWatchFlags::IN_CREATE
                    | AddWatchFlags::IN_DELETE_SELF
                    | AddWatchFlags::IN_MOVE_SELF,
            )?;
            Ok(inotify)
        });
        let Ok(inotify) = watched else {
            self.changes = None;
            return;
        };
        let (tell, changes) = tokio::sync::mpsc::channel(1);
        let started = std::thread::Builder::new()
            .name("oino-socket-watch".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                while let Ok(events) = inotify.read_events() {
                    // A full channel already says that something changed.
                    if let Err(tokio::sync::mpsc::error::TrySendError::Closed(())) =
                        tell.try_send(())
                    {
                        return;
                    }
                    if events
                        .iter()
                        .any(|event| event.mask.contains(AddWatchFlags::IN_IGNORED))
                    {
                        return;
                    }
                }
            });
        self.changes = started.is_ok().then_some(changes);
    }

    /// Waits until something in the folder changed (or the next look, without inotify).
    async fn changed(&mut self) {
        let Some(changes) = &mut self.changes else {
            tokio::time::sleep_until(self.next_look).await;
            self.next_look = tokio::time::Instant::now() + SOCKET_POLL;
            return;
        };
        if changes.recv().await.is_none() {
            // The watch ended (its folder went): look now, and every few seconds until rewatched.
            self.changes = None;
        }
    }
}

/// Serves `socket` until idle for `idle_exit`, `kill_server`, SIGTERM or SIGINT.
pub async fn serve(
    socket: &Path,
    idle_exit: Duration,
    config: CoreConfig,
) -> anyhow::Result<Served> {
    let dir = socket
        .parent()
        .context("the socket path has no folder")?
        .to_owned();
    prepare_dir(&dir)?;
    let mut listening = match Listening::take(socket)? {
        Ok(listening) => listening,
        Err(served) => return Ok(served),
    };
    let mut socket_watch = SocketWatch::new(socket);
    eprintln!(
        "oino server {} listening on {}",
        std::process::id(),
        socket.display()
    );

    let core = start_core(socket, config)?;
    // Clients connected, watched: the last one leaving may start the idle time.
    let (clients, mut clients_changed) = watch::channel(0usize);
    let clients = Arc::new(clients);
    let mut events = core.subscribe();
    let (stop_tx, mut stop) = watch::channel(false);
    let mut signals = Signals::new()?;
    // Nothing wakes an idle server but its deadline: the idle time is looked at again only when
    // a client comes or goes, or a process starts or ends.
    let mut idle_deadline = Some(tokio::time::Instant::now() + idle_exit);
    loop {
        tokio::select! {
            accepted = listening.accept() => match accepted {
                Ok(stream) => {
                    listening.fed();
                    serve_client(stream, &core, &clients, &stop_tx);
                }
                Err(err) if matches!(
                    err.raw_os_error().map(Errno::from_raw),
                    Some(Errno::EMFILE | Errno::ENFILE)
                ) => listening.refuse_for_want_of_descriptors(&err).await,
                Err(err) => {
                    eprintln!("oino server: accept failed: {err}");
                    // Whatever it was, not in a tight loop.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            () = socket_watch.changed() => listening.check(&mut socket_watch),
            _ = clients_changed.changed() => {}
            event = events.recv() => {
                if matches!(event, Ok(CoreEvent::OutputChanged { .. })) {
                    continue;
                }
                log_notice(event.ok());
            }
            () = crate::time::sleep_until_opt(idle_deadline) => break,
            _ = stop.changed() => break,
            () = signals.stop() => break,
        }
        let busy = *clients.borrow() > 0 || has_work(&core);
        // A server nobody can reach any more ends as soon as it is idle.
        let idle_exit = if listening.is_listening() {
            idle_exit
        } else {
            Duration::ZERO
        };
        idle_deadline = next_idle_deadline(busy, idle_deadline, idle_exit);
    }
    eprintln!("oino server {} stopping", std::process::id());
    // A server ending takes no new client: one finds none, rather than one that will never read
    // it, and starts another once this one has let go of its lock.
    listening.close();
    core.shutdown().await;
    Ok(Served::Stopped)
}

/// A project's restarts, give-ups, blocks and file changes go to the server's log too.
fn log_notice(event: Option<CoreEvent>) {
    if let Some(CoreEvent::Project {
        file,
        notice: Some(notice),
    }) = event
    {
        eprintln!(
            "oino server: {}: {}",
            file.display(),
            crate::inert::escaped(&notice)
        );
    }
}

/// Whether something runs, or waits to: a project's process that waits, or waits to start
/// again, counts as a running one.
fn has_work(core: &Core) -> bool {
    core.entries().iter().any(|entry| {
        entry.state.is_running()
            || entry.project.as_ref().is_some_and(|mark| {
                matches!(
                    mark.phase,
                    Some(
                        ProcessPhase::Waiting { .. }
                            | ProcessPhase::Blocked { .. }
                            | ProcessPhase::Restarting { .. }
                    )
                )
            })
    })
}

/// The server's core, tagging its calls with the socket's key; what a server of this socket
/// that died left running is listed, and can be killed.
fn start_core(socket: &Path, mut config: CoreConfig) -> anyhow::Result<Core> {
    let key = crate::remote::socket::socket_key(socket);
    config.owner = Some(crate::core::survivors::owner_tag(&key));
    let core = Core::new(config)?;
    let survivors = core.adopt_survivors(&key);
    if survivors > 0 {
        eprintln!(
            "oino server: {survivors} call(s) left running by a server that died are listed as \
             orphaned; `oino kill ID` ends them"
        );
    }
    Ok(core)
}

/// Serves a client in a task of its own, counted while it is connected.
fn serve_client(
    stream: UnixStream,
    core: &Core,
    clients: &Arc<watch::Sender<usize>>,
    stop: &watch::Sender<bool>,
) {
    let (core, clients, stop) = (core.clone(), Arc::clone(clients), stop.clone());
    clients.send_modify(|count| *count += 1);
    tokio::spawn(async move {
        if let Err(err) = serve_connection(stream, &core, &stop).await {
            eprintln!("oino server: a connection ended: {err:#}");
        }
        clients.send_modify(|count| *count -= 1);
    });
}

/// When an idle server ends: not while it is busy; once idle, `idle_exit` from when it became
/// so (never later than a deadline it has already).
fn next_idle_deadline(
    busy: bool,
    deadline: Option<tokio::time::Instant>,
    idle_exit: Duration,
) -> Option<tokio::time::Instant> {
    let from_now = tokio::time::Instant::now() + idle_exit;
    match (busy, deadline) {
        (true, _) => None,
        (false, None) => Some(from_now),
        (false, Some(deadline)) => Some(deadline.min(from_now)),
    }
}

/// Serves one client: one of another user is refused before anything is read from it.
async fn serve_connection(
    stream: UnixStream,
    core: &Core,
    stop: &watch::Sender<bool>,
) -> anyhow::Result<()> {
    let peer = stream.peer_cred()?;
    let uid = nix::unistd::getuid().as_raw();
    if peer.uid() != uid {
        let (read, mut write) = stream.into_split();
        let mut reader = BufReader::new(read);
        return refuse_another_user(&mut reader, &mut write, uid, peer.uid()).await;
    }
    connection::serve(stream, core, stop).await;
    Ok(())
}

/// Refuses a client of another user: the refusal answers its first request, so that it reads it.
async fn refuse_another_user(
    reader: &mut BufReader<tokio::net::unix::OwnedReadHalf>,
    write: &mut tokio::net::unix::OwnedWriteHalf,
    uid: u32,
    peer: u32,
) -> anyhow::Result<()> {
    let mut line = Vec::new();
    let _ = reader
        .take(MAX_REQUEST_BYTES as u64)
        .read_until(b'\n', &mut line)
        .await;
    let refusal = Reply::failure(
        ErrorCode::Forbidden,
        format!("refused: this oino server belongs to uid {uid}, and you are uid {peer}"),
    );
    write.write_all(&answering(&line, refusal)).await?;
    Ok(())
}

/// `reply` as the answer to the request `line` (naming its id, when it has one).
fn answering(line: &[u8], reply: Reply) -> Vec<u8> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    reply.framed(crate::remote::protocol::decode_request(line).0, false)
}

/// Reads a client's first request (whatever it is), then answers it with `reply` and closes.
pub(super) async fn answer_first_request(stream: UnixStream, reply: &Reply) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = Vec::new();
    BufReader::new(read)
        .take(MAX_REQUEST_BYTES as u64)
        .read_until(b'\n', &mut line)
        .await?;
    write.write_all(&answering(&line, reply.clone())).await
}
