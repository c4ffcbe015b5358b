//! Links kept ready (`link_persist` in the settings): a keeper on this machine starts a
//! transport (`ssh -T HOST oino proxy`) before it is needed, and hands its standard input,
//! output and error to the next command that reaches that far side, over a Unix socket of this
//! user's (`SCM_RIGHTS`); then it starts the next. Such a command pays no ssh connection of its
//! own, only its round trips. The keeper ends once no command took a link for `link_persist`
//! seconds, on a signal, or when its transports keep ending by themselves (three within a
//! minute: commands then start their own, which can say why). One far side has one keeper,
//! whatever the folder, where the transport's words allow. Nothing listens on a network: the socket is in this user's
//! private folder, and hands links to this user's processes alone.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use tokio::io::Interest;
use tokio::net::{UnixListener, UnixStream};

use crate::remote::address::Transport;

/// How long a command waits for a keeper to hand it a link before it starts its own.
const HAND_OVER_WITHIN: Duration = Duration::from_secs(2);
/// How long a command waits for the far side to answer over a link handed to it: one kept
/// for long may have gone stale without a word (its connection's peer vanished).
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// How often the keeper looks at its transports and at the time since the last hand-over.
const LOOK_EVERY: Duration = Duration::from_millis(500);
/// How old a spare grows before it is started again: an idle ssh connection may be cut by a
/// firewall without a word.
const SPARE_AGE: Duration = Duration::from_secs(120);
/// What a command says of a link once it asked the far side over it: it answered.
const ANSWERED: u8 = b'1';
/// ... it did not.
const UNANSWERED: u8 = b'0';
/// How long after a hand-over the next transport starts.
const NEXT_AFTER: Duration = Duration::from_millis(100);
/// Transports that fail one after the other (a command could not use one), or spares that end
/// by themselves within [`DEATHS_WITHIN`] of each other, that end the keeper.
const QUICK_ENDS: u32 = 3;
/// The span over which spares ending by themselves are counted: a transport that dies some
/// seconds after its start is started again a few times, not for ever.
const DEATHS_WITHIN: Duration = Duration::from_secs(60);
/// How long after a keeper gave up no other is started for the same links.
const GIVE_UP_FOR: Duration = Duration::from_secs(600);

/// A transport's standard input, output and error, as a keeper hands them over.
pub(crate) struct ReadyLink {
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Where the keeper of the links of `identity` listens: beside this machine's server socket
/// (in its checked folder).
fn socket_named(identity: &str) -> PathBuf {
    let here = crate::remote::socket::choose_socket(None, None);
    here.with_file_name(format!("link-{identity}.sock"))
}

/// The transport's identity, which names its keeper: what decides where it leads, its words,
/// its environment (a `DOCKER_HOST`, an `SSH_AUTH_SOCK`) and, where it may matter, the folder
/// it starts in (a `--via ./door`, `docker compose exec`), so that a command is never handed a
/// link to another far side, and one far side has one keeper whatever the folder where it can.
/// 16 hexadecimal digits (FNV-1a: the same from every oino build, so that each finds the
/// others' keeper).
fn identity(transport: &Transport) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut add = |bytes: &[u8]| {
        for byte in bytes.iter().chain(&[0]) {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for word in &transport.argv {
        add(word.as_bytes());
    }
    add(b"");
    if folder_counts(transport)
        && let Ok(folder) = std::env::current_dir()
    {
        add(folder.as_os_str().as_bytes());
    }
    // In order, but for those that change from one shell, terminal or command to the next and
    // lead nowhere.
    let mut variables: Vec<_> = std::env::vars_os()
        .filter(|(name, _)| !leads_nowhere(name))
        .collect();
    variables.sort();
    for (name, value) in variables {
        add(name.as_bytes());
        add(value.as_bytes());
    }
    format!("{hash:016x}")
}

/// Whether the folder a command starts in may change where `transport` leads: for any command
/// of `--via` (a `./door`, `docker compose exec` reading the folder's project), but for ssh to
/// a host only when its words name a file by a relative path (`-F ./config`, `-i key`).
fn folder_counts(transport: &Transport) -> bool {
    if !transport.is_host {
        return true;
    }
    let relative = |word: &str| !word.starts_with('/') && !word.starts_with('~');
    let mut words = transport.argv.iter().peekable();
    while let Some(word) = words.next() {
        let file = match word.as_str() {
            "-F" | "-i" | "-E" | "-S" => words.peek().map(|file| file.as_str()),
            _ => ["-F", "-i", "-E", "-S"]
                .iter()
                .find_map(|option| word.strip_prefix(option))
                .filter(|file| !file.is_empty()),
        };
        let path_like = word.contains('/') && relative(word);
        if path_like || file.is_some_and(relative) {
            return true;
        }
    }
    false
}

/// Whether the variable `name` has no say in where a transport leads: it changes from one
/// command, shell or terminal tab to the next (the folder is counted apart), or a keeper does
/// not get it.
fn leads_nowhere(name: &std::ffi::OsStr) -> bool {
    const NOWHERE: [&str; 11] = [
        "_",
        "OLDPWD",
        "PWD",
        "SHLVL",
        "TMUX_PANE",
        "WINDOWID",
        "KITTY_WINDOW_ID",
        "WEZTERM_PANE",
        "ALACRITTY_WINDOW_ID",
        "TERM_SESSION_ID",
        "ITERM_SESSION_ID",
    ];
    let name = name.to_string_lossy();
    NOWHERE.contains(&name.as_ref()) || not_for_a_keeper(&name)
}

/// Whether the variable `name` is left out of a keeper's environment: oino's own of a call
/// (the keeper outlives whatever command started it), or of a shell's completion (the keeper
/// would answer as one).
fn not_for_a_keeper(name: &str) -> bool {
    [
        crate::pty::CALL_ID_ENV,
        crate::pty::TREE_KEY_ENV,
        crate::pty::OWNER_ENV,
        crate::core::survivors::PROCESS_ENV,
        "OINO_COMPLETE",
    ]
    .contains(&name)
        || name.starts_with("_CLAP_")
}

/// A link from `transport`'s keeper, if one runs and is this user's; `None` otherwise (the
/// caller then starts a keeper with [`start_keeper`], and a transport of its own this time).
pub(crate) async fn take(transport: &Transport) -> Option<(ReadyLink, Report)> {
    let identity = identity(transport);
    let socket = socket_named(&identity);
    // Only in a folder of this user's, at a socket of this user's (never through a link
    // another user planted there, to a keeper of this user's for another far side), from a
    // keeper of this user's that says it keeps this transport: another's could hand over a
    // link to a server of its own.
    let dir = socket.parent()?;
    if !dir.exists() || crate::remote::socket::prepare_dir(dir).is_err() {
        return None;
    }
    let meta = std::fs::symlink_metadata(&socket).ok()?;
    let me = nix::unistd::getuid().as_raw();
    if !std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()) || meta.uid() != me {
        return None;
    }
    let stream = UnixStream::connect(&socket).await.ok()?;
    if stream.peer_cred().ok()?.uid() != me {
        return None;
    }
    let (said, link) = tokio::time::timeout(HAND_OVER_WITHIN, receive(&stream))
        .await
        .ok()??;
    (said == identity.as_bytes()).then_some((link, Report(stream)))
}

/// Where a command says whether the far side answered over the link it took: a keeper whose
/// links go unanswered (a far side gone, its ssh hanging) gives up rather than hand out more.
pub(crate) struct Report(UnixStream);

impl Report {
    pub(crate) fn answered(&self, answered: bool) {
        let _ = self
            .0
            .try_write(&[if answered { ANSWERED } else { UNANSWERED }]);
    }
}

/// What a keeper sends: its transport's identity, and the link.
async fn receive(stream: &UnixStream) -> Option<(Vec<u8>, ReadyLink)> {
    loop {
        stream.readable().await.ok()?;
        let received = stream.try_io(Interest::READABLE, || {
            let mut said = [0u8; 16];
            let mut space = nix::cmsg_space!([RawFd; 3]);
            let mut slices = [std::io::IoSliceMut::new(&mut said)];
            let message = recvmsg::<()>(
                stream.as_raw_fd(),
                &mut slices,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            )
            .map_err(std::io::Error::from)?;
            let mut fds = Vec::new();
            for control in message.cmsgs() {
                if let ControlMessageOwned::ScmRights(rights) = control {
                    for fd in rights {
                        // SAFETY: the kernel made this descriptor for this process just now;
                        // nothing else owns it.
                        #[allow(unsafe_code)]
                        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                        fds.push(fd);
                    }
                }
            }
            let length = message.bytes;
            Ok((said[..length].to_vec(), fds))
        });
        match received {
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return None,
            Ok((said, fds)) => {
                let [stdin, stdout, stderr]: [OwnedFd; 3] = fds.try_into().ok()?;
                let link = ReadyLink {
                    stdin,
                    stdout,
                    stderr,
                };
                return Some((said, link));
            }
        }
    }
}

/// Starts the keeper of `transport`'s links in the background, for `persist` after the last
/// link it hands over. One that cannot start is no error: commands start their own transports.
pub(crate) fn start_keeper(transport: &Transport, persist: Duration) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let identity = identity(transport);
    if gave_up_lately(&socket_named(&identity)) {
        return;
    }
    // Through the runtime, which reaps it once it ends (an interface outlives many keepers).
    let mut command = tokio::process::Command::new(exe);
    for (name, _) in std::env::vars_os() {
        if not_for_a_keeper(&name.to_string_lossy()) {
            command.env_remove(&name);
        }
    }
    let _ = command
        .arg("keep-link")
        .arg("--persist")
        .arg(persist.as_secs().to_string())
        // Its identity as this command sees it: the keeper's environment is not quite this one.
        .arg("--identity")
        .arg(identity)
        .arg("--")
        .args(&transport.argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// `oino keep-link`: keeps a link through `argv` ready at the socket of `identity` (see
/// [`identity`]) until none was taken for `persist`. Another keeper of the same links already
/// running ends this one.
pub async fn keep(argv: Vec<String>, identity: String, persist: Duration) -> anyhow::Result<()> {
    if identity.len() != 16 || !identity.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        anyhow::bail!("--identity takes 16 hexadecimal digits, as the commands give it");
    }
    // Out of the starting command's session: no terminal, no signal of its.
    let _ = nix::unistd::setsid();
    let socket = socket_named(&identity);
    crate::remote::socket::prepare_socket_dir(&socket)?;
    let lock_path = socket.with_extension("lock");
    let lock = crate::paths::open_own_file(&lock_path, false)?;
    let Ok(lock) = Flock::lock(lock, FlockArg::LockExclusiveNonblock) else {
        return Ok(());
    };
    let (listener, id) = listen(&socket)?;
    let kept = Keeper {
        argv,
        identity,
        persist,
        listener,
    }
    .run(&socket, id)
    .await;
    if file_id(&socket) == Some(id) {
        let _ = std::fs::remove_file(&socket);
    }
    if kept? {
        mark_gave_up(&socket);
    }
    // Not left behind, one for each folder and environment: removed while it is held (a keeper
    // starting meanwhile that locks the removed file makes a socket of its own, and the one
    // whose socket is replaced ends).
    let _ = std::fs::remove_file(&lock_path);
    drop(lock);
    Ok(())
}

/// Says for the commands, which then start no keeper for a while, that the keeper at `socket`
/// gave up: its transports could not log in without a word from a person, and each attempt may
/// count against the user (fail2ban, `MaxStartups`).
fn mark_gave_up(socket: &Path) {
    if let Ok(mark) = crate::paths::open_own_file(&socket.with_extension("gave-up"), false) {
        // Opening an existing file leaves its time: it is set.
        let _ = mark.set_modified(std::time::SystemTime::now());
    }
}

/// Whether a keeper of the links at `socket` gave up on its transports lately.
fn gave_up_lately(socket: &Path) -> bool {
    std::fs::symlink_metadata(socket.with_extension("gave-up")).is_ok_and(|meta| {
        meta.is_file()
            && meta.uid() == nix::unistd::getuid().as_raw()
            && meta
                .modified()
                .is_ok_and(|at| at.elapsed().is_ok_and(|age| age < GIVE_UP_FOR))
    })
}

/// Listens at `socket`, made 0600 under a name of its own before it takes its place (the
/// server's way); the socket's file id, to tell whether it is still this keeper's.
fn listen(socket: &Path) -> anyhow::Result<(UnixListener, (u64, u64))> {
    let fresh = socket.with_extension(format!("sock.{}", std::process::id()));
    if std::fs::symlink_metadata(&fresh)
        .is_ok_and(|meta| std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()))
    {
        let _ = std::fs::remove_file(&fresh);
    }
    let listener =
        UnixListener::bind(&fresh).with_context(|| format!("listening on {}", socket.display()))?;
    let placed = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    let placed =
        std::fs::set_permissions(&fresh, placed).and_then(|()| std::fs::rename(&fresh, socket));
    if let Err(err) = placed {
        let _ = std::fs::remove_file(&fresh);
        return Err(anyhow::Error::new(err).context(format!("listening on {}", socket.display())));
    }
    let id = file_id(socket).context("the socket went as it was made")?;
    Ok((listener, id))
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|meta| (meta.dev(), meta.ino()))
}

/// The signals that end a keeper: SIGTERM, SIGINT and SIGHUP.
struct EndingSignals([tokio::signal::unix::Signal; 3]);

impl EndingSignals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self([
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
            signal(SignalKind::hangup())?,
        ]))
    }

    async fn received(&mut self) {
        let [terminate, interrupt, hangup] = &mut self.0;
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
            _ = hangup.recv() => {}
        }
    }
}

struct Keeper {
    /// The transport: a program and its arguments.
    argv: Vec<String>,
    /// Said with each link handed over: a client takes only a link of the transport it asked.
    identity: String,
    persist: Duration,
    listener: UnixListener,
}

/// A transport started ahead, and when.
struct Spare {
    child: std::process::Child,
    started: Instant,
}

impl Spare {
    fn start(transport: &[String]) -> anyhow::Result<Self> {
        let (program, args) = transport
            .split_first()
            .context("the transport command is empty")?;
        let child = std::process::Command::new(program)
            .args(args)
            // Without a terminal, ssh would ask for a password in a window of its own: never
            // from a keeper, which nobody watches.
            .env("SSH_ASKPASS_REQUIRE", "never")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        Ok(Self {
            child,
            started: Instant::now(),
        })
    }

    fn has_ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Ends it, whatever it does.
    fn end(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Hands its standard input, output and error to the client at `stream`; this keeper keeps
    /// none of them, so that the transport ends with the client's use of it.
    fn hand_over(&mut self, stream: &UnixStream, identity: &str) -> std::io::Result<()> {
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            self.child.stdin.take(),
            self.child.stdout.take(),
            self.child.stderr.take(),
        ) else {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        };
        let fds = [stdin.as_raw_fd(), stdout.as_raw_fd(), stderr.as_raw_fd()];
        sendmsg::<()>(
            stream.as_raw_fd(),
            &[std::io::IoSlice::new(identity.as_bytes())],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::MSG_NOSIGNAL,
            None,
        )?;
        Ok(())
    }
}

/// What a keeper keeps: its spare, the links it handed over, and how they went.
struct Kept {
    spare: Option<Spare>,
    /// When the next spare starts: a moment after a hand-over, so that its ssh does not
    /// compete for the processor with the command that just took a link.
    next_start: Option<tokio::time::Instant>,
    /// Handed over, reaped as they end (the client's use of them ends them).
    handed: Vec<std::process::Child>,
    last_use: Instant,
    /// Transports in a row that a command could not use.
    failures: u32,
    /// When spares ended by themselves, within the last [`DEATHS_WITHIN`].
    deaths: std::collections::VecDeque<Instant>,
}

impl Kept {
    /// Counts a spare that ended by itself; whether the keeper should give up: its transports
    /// keep dying, however long each lived.
    fn died(&mut self) -> bool {
        let now = Instant::now();
        self.deaths.push_back(now);
        while self
            .deaths
            .front()
            .is_some_and(|death| now.duration_since(*death) > DEATHS_WITHIN)
        {
            self.deaths.pop_front();
        }
        self.deaths.len() >= QUICK_ENDS as usize
    }

    /// Counts a transport that failed; whether the keeper should give up.
    fn failed(&mut self) -> bool {
        self.failures += 1;
        self.failures >= QUICK_ENDS
    }

    /// What a command said of the link it took: it answered (`Some(true)`), it did not
    /// (`Some(false)`), or nothing was said (the command left first).
    fn reported(&mut self, answered: Option<bool>) -> bool {
        match answered {
            Some(true) => {
                self.last_use = Instant::now();
                self.failures = 0;
                false
            }
            Some(false) => self.failed(),
            None => false,
        }
    }

    /// The spare, started again when it ended or grew old (an idle ssh connection may be cut
    /// by a firewall without a word); whether the keeper should give up.
    fn look(&mut self, argv: &[String]) -> anyhow::Result<bool> {
        self.handed
            .retain_mut(|child| matches!(child.try_wait(), Ok(None)));
        let Some(spare) = self.spare.as_mut() else {
            return Ok(false);
        };
        if spare.has_ended() {
            if self.died() {
                return Ok(true);
            }
        } else if spare.started.elapsed() <= SPARE_AGE {
            return Ok(false);
        }
        if let Some(old) = self.spare.take() {
            old.end();
        }
        self.spare = Some(Spare::start(argv)?);
        Ok(false)
    }
}

impl Keeper {
    /// Keeps links ready until it should stop; whether it gave up on its transports.
    async fn run(self, socket: &Path, id: (u64, u64)) -> anyhow::Result<bool> {
        let mut kept = Kept {
            spare: Some(Spare::start(&self.argv)?),
            next_start: None,
            handed: Vec::new(),
            last_use: Instant::now(),
            failures: 0,
            deaths: std::collections::VecDeque::new(),
        };
        let (report, mut reports) = tokio::sync::mpsc::unbounded_channel();
        // Ended by a signal too, it cleans up as when it ends by itself: its spare, its socket,
        // its lock.
        let mut ending = EndingSignals::new()?;
        let mut look = tokio::time::interval(LOOK_EVERY);
        let gave_up = loop {
            let next_start = kept.next_start;
            let start_next = async {
                match next_start {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                accepted = self.listener.accept() => {
                    // An error that lasts (out of descriptors) would come back at once: the
                    // commands start their own transports meanwhile.
                    let Ok((stream, _)) = accepted else { break false };
                    let mine = nix::unistd::getuid().as_raw();
                    if stream.peer_cred().map(|cred| cred.uid()).ok() == Some(mine) {
                        self.hand_over(&mut kept, stream, &report)?;
                    }
                }
                () = start_next => {
                    kept.next_start = None;
                    kept.spare = Some(Spare::start(&self.argv)?);
                }
                Some(answered) = reports.recv() => {
                    if kept.reported(answered) {
                        break true;
                    }
                }
                () = ending.received() => break false,
                _ = look.tick() => {
                    if kept.look(&self.argv)? {
                        break true;
                    }
                    if kept.last_use.elapsed() >= self.persist || file_id(socket) != Some(id) {
                        break false;
                    }
                }
            }
        };
        if let Some(spare) = kept.spare {
            spare.end();
        }
        Ok(gave_up)
    }

    /// Hands the spare (or one started now) to the command at `stream`, and listens for what
    /// it says of it once it asked the far side.
    fn hand_over(
        &self,
        kept: &mut Kept,
        stream: UnixStream,
        report: &tokio::sync::mpsc::UnboundedSender<Option<bool>>,
    ) -> anyhow::Result<()> {
        let mut taken = match kept.spare.take() {
            Some(mut live) => {
                if live.started.elapsed() < SPARE_AGE && !live.has_ended() {
                    live
                } else {
                    live.end();
                    Spare::start(&self.argv)?
                }
            }
            None => Spare::start(&self.argv)?,
        };
        if taken.hand_over(&stream, &self.identity).is_ok() {
            let report = report.clone();
            tokio::spawn(async move {
                let mut stream = stream;
                let mut said = [0u8; 1];
                let read = tokio::time::timeout(
                    ANSWER_WITHIN + LOOK_EVERY,
                    tokio::io::AsyncReadExt::read(&mut stream, &mut said),
                )
                .await;
                let _ = report.send(match read {
                    Ok(Ok(1)) => Some(said[0] == ANSWERED),
                    Ok(_) => None,
                    Err(_) => Some(false),
                });
            });
        }
        kept.handed.push(taken.child);
        kept.next_start = Some(tokio::time::Instant::now() + NEXT_AFTER);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keeper_that_gives_up_again_says_so_anew() {
        let dir = std::env::temp_dir().join(format!("oino-gave-up-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("folder");
        let socket = dir.join("link-0123456789abcdef.sock");
        assert!(!gave_up_lately(&socket));
        mark_gave_up(&socket);
        assert!(gave_up_lately(&socket));
        // A mark from long ago is no longer heeded, and a new give-up renews it.
        let mark = std::fs::File::options()
            .write(true)
            .open(socket.with_extension("gave-up"))
            .expect("the mark");
        let long_ago = std::time::SystemTime::now() - GIVE_UP_FOR * 2;
        mark.set_modified(long_ago).expect("set its time");
        assert!(!gave_up_lately(&socket));
        mark_gave_up(&socket);
        assert!(gave_up_lately(&socket));
        std::fs::remove_dir_all(dir).expect("cleaned");
    }

    #[test]
    fn variables_of_a_terminal_a_call_or_a_completion_lead_nowhere() {
        for name in [
            "_",
            "PWD",
            "TMUX_PANE",
            crate::pty::CALL_ID_ENV,
            "_CLAP_COMPLETE_INDEX",
        ] {
            assert!(leads_nowhere(std::ffi::OsStr::new(name)), "{name}");
        }
        for name in ["DOCKER_HOST", "KUBECONFIG", "SSH_AUTH_SOCK", "HOME", "PATH"] {
            assert!(!leads_nowhere(std::ffi::OsStr::new(name)), "{name}");
        }
    }
}
