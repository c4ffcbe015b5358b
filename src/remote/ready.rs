//! Links kept ready (`link_persist` in the settings): a keeper on this machine starts a
//! transport (`ssh -T HOST oino proxy`) before it is needed, and hands its standard input,
//! output and error to the next command that reaches that far side, over a Unix socket of this
//! user's (`SCM_RIGHTS`); then it starts the next. Such a command pays no ssh connection of its
//! own, only its round trips. The keeper ends once no command took a link for `link_persist`
//! seconds, or when its transports keep ending as soon as they start (commands then start
//! their own, which can say why). Nothing listens on a network: the socket is in this user's
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
/// How long after a hand-over the next transport starts.
const NEXT_AFTER: Duration = Duration::from_millis(100);
/// A transport that ends sooner than this after its start ended "at once".
const QUICK_END: Duration = Duration::from_secs(5);
/// Transports ending at once, one after the other, that end the keeper.
const QUICK_ENDS: u32 = 3;
/// How long after a keeper gave up no other is started for the same links.
const GIVE_UP_FOR: Duration = Duration::from_secs(600);

/// A transport's standard input, output and error, as a keeper hands them over.
pub(crate) struct ReadyLink {
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Where the keeper of `transport`'s links listens: beside this machine's server socket (in
/// its checked folder), named by what decides where the transport leads: its words, the
/// folder it starts in and its environment (a `--via ./door`, a `DOCKER_HOST`, an
/// `SSH_AUTH_SOCK`), so that a command is never handed a link to another far side.
#[must_use]
pub(crate) fn socket_of(transport: &Transport) -> PathBuf {
    socket_named(&identity(transport))
}

fn socket_named(identity: &str) -> PathBuf {
    let here = crate::remote::socket::choose_socket(None, None);
    here.with_file_name(format!("link-{identity}.sock"))
}

/// The transport's identity, as 16 hexadecimal digits (FNV-1a: the same from every oino build,
/// so that each finds the others' keeper).
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
    if let Ok(folder) = std::env::current_dir() {
        add(folder.as_os_str().as_bytes());
    }
    // In order; these change from one shell or command to the next, and lead nowhere (the
    // folder is counted above).
    let mut variables: Vec<_> = std::env::vars_os()
        .filter(|(name, _)| !["_", "OLDPWD", "PWD", "SHLVL"].contains(&name.to_str().unwrap_or("")))
        .collect();
    variables.sort();
    for (name, value) in variables {
        add(name.as_bytes());
        add(value.as_bytes());
    }
    format!("{hash:016x}")
}

/// A link from `transport`'s keeper, if one runs and is this user's; `None` otherwise (the
/// caller then starts a keeper with [`start_keeper`], and a transport of its own this time).
pub(crate) async fn take(transport: &Transport) -> Option<ReadyLink> {
    let socket = socket_of(transport);
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
    (said == identity(transport).as_bytes()).then_some(link)
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
    if gave_up_lately(&socket_of(transport)) {
        return;
    }
    // Through the runtime, which reaps it once it ends (an interface outlives many keepers).
    let _ = tokio::process::Command::new(exe)
        // Nothing of a call's: the keeper outlives whatever command started it.
        .env_remove(crate::pty::CALL_ID_ENV)
        .env_remove(crate::pty::TREE_KEY_ENV)
        .env_remove(crate::pty::OWNER_ENV)
        .arg("keep-link")
        .arg("--persist")
        .arg(persist.as_secs().to_string())
        // Its identity as this command sees it: the keeper's environment is not quite this one.
        .arg("--identity")
        .arg(identity(transport))
        .arg("--")
        .args(&transport.argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// `oino keep-link`: keeps a link through `argv` ready at the socket of `identity` (see
/// [`socket_of`]) until none was taken for `persist`. Another keeper of the same links already
/// running ends this one.
pub async fn keep(argv: Vec<String>, identity: String, persist: Duration) -> anyhow::Result<()> {
    if identity.len() != 16 || !identity.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        anyhow::bail!("--identity takes 16 hexadecimal digits, as the commands give it");
    }
    // Out of the starting command's session: no terminal, no signal of its.
    let _ = nix::unistd::setsid();
    let transport = Transport {
        label: argv.join(" "),
        is_host: false,
        argv,
        without_terminal: true,
        persist: None,
    };
    let socket = socket_named(&identity);
    crate::remote::socket::prepare_socket_dir(&socket)?;
    let lock_path = socket.with_extension("lock");
    let lock = crate::paths::open_own_file(&lock_path, false)?;
    let Ok(_lock) = Flock::lock(lock, FlockArg::LockExclusiveNonblock) else {
        return Ok(());
    };
    let (listener, id) = listen(&socket)?;
    let kept = Keeper {
        transport,
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
        // Said for the commands, which start no keeper for a while: its transports could not
        // log in without a word from a person, and each attempt may count against the user
        // (fail2ban, MaxStartups).
        let _ = crate::paths::open_own_file(&socket.with_extension("gave-up"), false);
    }
    Ok(())
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

struct Keeper {
    transport: Transport,
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
    fn start(transport: &Transport) -> anyhow::Result<Self> {
        let (program, args) = transport
            .argv
            .split_first()
            .context("the transport command is empty")?;
        let child = std::process::Command::new(program)
            .args(args)
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

    /// Hands its standard input, output and error to the client at `stream`; this keeper keeps
    /// none of them, so that the transport ends with the client's use of it.
    fn hand_over(
        &mut self,
        stream: &std::os::unix::net::UnixStream,
        identity: &str,
    ) -> std::io::Result<()> {
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

impl Keeper {
    /// Keeps links ready until it should stop; whether it gave up on its transports.
    async fn run(self, socket: &Path, id: (u64, u64)) -> anyhow::Result<bool> {
        let mut gave_up = false;
        let mut spare = Some(Spare::start(&self.transport)?);
        // When the next spare starts: a moment after a hand-over, so that its ssh does not
        // compete for the processor with the command that just took a link.
        let mut next_start = None;
        // Handed over, reaped as they end (the client's use of them ends them).
        let mut handed: Vec<std::process::Child> = Vec::new();
        let mut last_use = Instant::now();
        let mut quick_ends = 0;
        let mut look = tokio::time::interval(LOOK_EVERY);
        loop {
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
                    let Ok((stream, _)) = accepted else { break };
                    let mine = nix::unistd::getuid().as_raw();
                    if stream.peer_cred().map(|cred| cred.uid()).ok() != Some(mine) {
                        continue;
                    }
                    let mut taken = match spare.take() {
                        Some(mut live) => {
                            if live.has_ended() {
                                Spare::start(&self.transport)?
                            } else {
                                live
                            }
                        }
                        None => Spare::start(&self.transport)?,
                    };
                    let handed_over = stream
                        .into_std()
                        .and_then(|stream| {
                            stream.set_nonblocking(false)?;
                            taken.hand_over(&stream, &self.identity)
                        });
                    if handed_over.is_ok() {
                        last_use = Instant::now();
                        quick_ends = 0;
                    }
                    handed.push(taken.child);
                    next_start = Some(tokio::time::Instant::now() + NEXT_AFTER);
                }
                () = start_next => {
                    next_start = None;
                    spare = Some(Spare::start(&self.transport)?);
                }
                _ = look.tick() => {
                    handed.retain_mut(|child| matches!(child.try_wait(), Ok(None)));
                    if let Some(ended) = spare.as_mut()
                        && ended.has_ended()
                    {
                        quick_ends = if ended.started.elapsed() < QUICK_END {
                            quick_ends + 1
                        } else {
                            0
                        };
                        if quick_ends >= QUICK_ENDS {
                            gave_up = true;
                            break;
                        }
                        spare = Some(Spare::start(&self.transport)?);
                    }
                    if last_use.elapsed() >= self.persist || file_id(socket) != Some(id) {
                        break;
                    }
                }
            }
        }
        if let Some(mut spare) = spare {
            let _ = spare.child.kill();
            let _ = spare.child.wait();
        }
        Ok(gave_up)
    }
}
