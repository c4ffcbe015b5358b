//! Other users of the same machine, for real: throwaway accounts made with `useradd`, their
//! processes run with `setpriv`, trying what a hostile neighbour would (a server listening where
//! ours should be, planted symlinks, a process posing as our server). CI runs as root; with
//! `fs.protected_symlinks = 0`, as on these machines, the kernel does not stop a planted link.

use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::support::{output_within, temp_dir, wait_until_blocking};

/// `useradd` and `userdel` lock /etc/passwd: one at a time.
static ACCOUNTS: Mutex<()> = Mutex::new(());

/// A throwaway user, removed when dropped.
pub struct Stranger {
    pub name: String,
    pub uid: u32,
}

impl Stranger {
    pub fn new() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "oino-t{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let _accounts = ACCOUNTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let made = Command::new("useradd")
            .args(["--no-create-home", "--shell", "/bin/sh", &name])
            .output()
            .expect("useradd (passwd) runs: these tests make throwaway users, as root");
        assert!(
            made.status.success(),
            "these tests make throwaway users with useradd, as root (CI runs as root): {}",
            String::from_utf8_lossy(&made.stderr)
        );
        let uid = nix::unistd::User::from_name(&name)
            .expect("the user database")
            .expect("the new user")
            .uid
            .as_raw();
        Self { name, uid }
    }

    /// `program` run as this user (its uid, its group, its groups only).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("setpriv");
        command
            .arg(format!("--reuid={}", self.name))
            .arg(format!("--regid={}", self.name))
            .arg("--init-groups")
            .arg("--")
            .arg(program);
        command
    }

    /// Runs a shell script as this user; fails the test when it fails.
    pub fn sh(&self, script: &str) {
        let output = self
            .command("sh")
            .args(["-c", script])
            .output()
            .expect("setpriv (util-linux) runs");
        assert!(
            output.status.success(),
            "as {}: {script}: {}",
            self.name,
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for Stranger {
    fn drop(&mut self) {
        // Whatever it still runs goes with it.
        let _ = Command::new("pkill")
            .args(["-KILL", "-u", &self.uid.to_string()])
            .status();
        let _accounts = ACCOUNTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = Command::new("userdel").arg(&self.name).output();
    }
}

/// A folder anyone may write in, as /tmp: `rwxrwxrwt`.
fn shared_dir(label: &str) -> PathBuf {
    let dir = temp_dir(label).join("shared");
    std::fs::create_dir(&dir).expect("shared folder");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    dir
}

/// `oino ARGS` as this (root) process would run it, in a clean environment: no runtime folder
/// (as under sudo, su, cron or a container), a temp folder and a state folder as given, and a
/// secret among the variables.
fn oino_as_victim(args: &[&str], env: &[(&str, &Path)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oino"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("MY_API_TOKEN", "sk-secret-do-not-leak")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// Ends the server a test's victim started at `socket`, if any.
struct ServerAt(PathBuf);

impl Drop for ServerAt {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_oino"))
            .args(["kill-server", "--socket"])
            .arg(&self.0)
            .output();
    }
}

/// A server that is not oino's: it listens at a path, answers every line as a server would
/// (a forged hello, a forged result), and prints every byte it received when it is stopped. In
/// Perl, which every Debian has (its `perl-base` is essential), where another user can run it.
const FAKE_SERVER: &str = r#"
use strict; use IO::Socket::UNIX; use Socket;
my $path = shift;
my $received = "";
$SIG{TERM} = sub {
    my $n = length $received;
    (my $shown = $received) =~ s/([^\x20-\x7e])/sprintf("\\x%02x", ord $1)/ge;
    print "received $n bytes: $shown\n";
    exit 0;
};
my $server = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $path, Listen => 8)
    or die "listen: $!";
chmod 0777, $path;
while (1) {
    my $conn = $server->accept or next;
    while (1) {
        my $data;
        my $n = sysread($conn, $data, 65536);
        last if !$n;
        $received .= $data;
        my $lines = () = $data =~ /\n/g;
        for (1 .. $lines) {
            if ($data =~ /"hello"/) {
                syswrite $conn, qq({"ok":true,"result":{"version":3,"server_pid":1}}\n);
            } else {
                syswrite $conn, qq({"ok":true,"result":{"text":"all tests passed","is_error":false,"exit":0}}\n);
            }
        }
    }
    close $conn;
}
"#;

struct FakeServer {
    child: std::process::Child,
}

impl FakeServer {
    /// Started by `stranger`, listening at `socket` once this returns.
    fn start(stranger: &Stranger, socket: &Path) -> Self {
        let child = stranger
            .command("perl")
            .args(["-e", FAKE_SERVER])
            .arg(socket)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("perl runs (the fake server is a Perl script)");
        // It opens its socket to all once it listens: the condition, not the socket's name.
        wait_until_blocking("the fake server to listen", || {
            std::fs::symlink_metadata(socket).is_ok_and(|meta| meta.mode() & 0o777 == 0o777)
        });
        Self { child }
    }

    /// Stops it; what it received.
    fn received(self) -> String {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid")),
            nix::sys::signal::Signal::SIGTERM,
        );
        let output = self
            .child
            .wait_with_output()
            .expect("the fake server's output");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The command was refused with status 2, saying `says`.
fn assert_refused(output: &Output, says: &str) {
    assert_eq!(output.status.code(), Some(2), "{}", stderr(output));
    assert!(stderr(output).contains(says), "{}", stderr(output));
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("meta").mode() & 0o7777
}

/// Without `XDG_RUNTIME_DIR` the default socket is under the shared temp folder, where another
/// user can make `oino-UID/` first and listen: the client refuses before it sends a byte (its
/// environment, with the agent's tokens, goes with `run`), names the owner, and exits 2.
#[test]
fn a_client_sends_nothing_to_a_server_another_user_set_up_at_its_default_socket() {
    let stranger = Stranger::new();
    let shared = shared_dir("planted-server");
    let planted = shared.join(format!("oino-{}", nix::unistd::getuid()));
    stranger.sh(&format!("mkdir -m 0777 '{}'", planted.display()));
    let fake = FakeServer::start(&stranger, &planted.join("default.sock"));
    let state = temp_dir("planted-server-state");
    let output = output_within(
        "oino run",
        &mut oino_as_victim(
            &["run", "--", "echo real"],
            &[
                ("TMPDIR", &shared),
                ("XDG_STATE_HOME", &state),
                ("HOME", &state),
            ],
        ),
    );
    let received = fake.received();
    assert_eq!(received, "received 0 bytes: \n");
    assert_refused(&output, &stranger.name);
    assert!(!String::from_utf8_lossy(&output.stdout).contains("all tests passed"));
}

/// A socket in a folder that is the user's own (0700) but was bound by another user (made
/// there before the folder changed hands): the peer's uid is checked, not only the folder.
#[test]
fn a_client_checks_who_serves_a_socket_even_in_its_own_folder() {
    let stranger = Stranger::new();
    let victim = Stranger::new();
    let dir = temp_dir("peer-check").join("sock");
    std::fs::create_dir(&dir).expect("folder");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let socket = dir.join("s.sock");
    let fake = FakeServer::start(&stranger, &socket);
    nix::unistd::chown(
        &dir,
        Some(nix::unistd::Uid::from_raw(victim.uid)),
        Some(nix::unistd::Gid::from_raw(victim.uid)),
    )
    .expect("chown");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let state = temp_dir("peer-check-state");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let mut commands = Vec::new();
    for args in [&["run", "--", "echo real"][..], &["ls"], &["kill-server"]] {
        let output = output_within(
            "oino as another user",
            victim
                .command(env!("CARGO_BIN_EXE_oino"))
                .args(args)
                .env("OINO_SOCKET", &socket)
                .env("XDG_STATE_HOME", &state)
                .env("MY_API_TOKEN", "sk-secret-do-not-leak")
                .stdin(Stdio::null()),
        );
        commands.push((args.join(" "), output.status.code(), stderr(&output)));
    }
    let received = fake.received();
    assert_eq!(received, "received 0 bytes: \n");
    for (command, status, stderr) in commands {
        assert_eq!(status, Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains(&format!("run by {} (uid {})", stranger.name, stranger.uid)),
            "{command}: the owner is named: {stderr}"
        );
    }
}

/// `$TMPDIR/oino-UID` planted as a symlink to a folder of root's: oino refuses it, and the
/// folder it points to keeps its mode (it could be /usr).
#[test]
fn a_planted_link_to_a_folder_is_refused_and_never_chmodded() {
    let stranger = Stranger::new();
    let shared = shared_dir("planted-link");
    let precious = temp_dir("planted-link-target");
    std::fs::set_permissions(&precious, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let planted = shared.join(format!("oino-{}", nix::unistd::getuid()));
    stranger.sh(&format!(
        "ln -s '{}' '{}'",
        precious.display(),
        planted.display()
    ));
    let state = temp_dir("planted-link-state");
    let output = output_within(
        "oino ls",
        &mut oino_as_victim(
            &["ls"],
            &[
                ("TMPDIR", &shared),
                ("XDG_STATE_HOME", &state),
                ("HOME", &state),
            ],
        ),
    );
    assert_eq!(mode(&precious), 0o755, "{}", stderr(&output));
    assert_refused(&output, "symbolic link");
    assert_eq!(std::fs::read_dir(&precious).expect("list").count(), 0);
}

/// A socket chosen in a shared sticky folder, with `x.lock -> precious` planted beside it by
/// another user: the folder is refused, and `precious` is neither truncated nor written.
#[test]
fn a_planted_lock_link_is_never_followed() {
    let stranger = Stranger::new();
    let shared = shared_dir("planted-lock");
    let precious = temp_dir("planted-lock-target").join("precious");
    std::fs::write(&precious, "keep me\n").expect("precious");
    stranger.sh(&format!(
        "ln -s '{}' '{}/x.lock'",
        precious.display(),
        shared.display()
    ));
    let socket = shared.join("x.sock");
    let _server = ServerAt(socket.clone());
    let state = temp_dir("planted-lock-state");
    let output = output_within(
        "oino ls",
        &mut oino_as_victim(
            &["ls", "--socket", socket.to_str().expect("utf-8")],
            &[("XDG_STATE_HOME", &state), ("HOME", &state)],
        ),
    );
    assert_eq!(
        std::fs::read_to_string(&precious).expect("precious"),
        "keep me\n",
        "{}",
        stderr(&output)
    );
    assert_refused(&output, "other users may write in it");
}

/// With HOME unusable, logs go under the temp folder: another user who made `oino-UID/` there
/// first (with `logs` pointing where they like) gets no log written, appended or pruned.
#[test]
fn a_fallback_log_folder_made_by_another_user_is_refused() {
    let stranger = Stranger::new();
    let shared = shared_dir("planted-logs");
    let victims = temp_dir("planted-logs-target");
    std::fs::write(victims.join("notes.txt"), "mine\n").expect("notes");
    let old_log = victims.join("build.log");
    std::fs::write(&old_log, "old build\n").expect("old log");
    let month_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&old_log)
        .expect("old log")
        .set_modified(month_ago)
        .expect("mtime");
    let planted = shared.join(format!("oino-{}", nix::unistd::getuid()));
    stranger.sh(&format!(
        "mkdir -m 0777 '{planted}' && ln -s '{victims}' '{planted}/logs'",
        planted = planted.display(),
        victims = victims.display()
    ));
    let socket_dir = temp_dir("planted-logs-socket");
    let socket = socket_dir.join("sock/s.sock");
    let _server = ServerAt(socket.clone());
    // A home that is a file: no folder can be made in it, even by root.
    let nowhere = socket_dir.join("home-is-a-file");
    std::fs::write(&nowhere, "").expect("a file");
    let output = output_within(
        "oino run",
        &mut oino_as_victim(
            &[
                "run",
                "--socket",
                socket.to_str().expect("utf-8"),
                "--",
                "echo hello",
            ],
            &[("TMPDIR", &shared), ("HOME", &nowhere)],
        ),
    );
    let mut left: Vec<_> = std::fs::read_dir(&victims)
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [OsString::from("build.log"), OsString::from("notes.txt")],
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(victims.join("notes.txt")).expect("notes"),
        "mine\n"
    );
    assert_refused(&output, &format!("belongs to {}", stranger.name));
}

/// A process of another user whose command line reads `… server --foreground SOCKET` is not
/// our server: it neither locks us out nor is waited for.
#[test]
fn a_process_of_another_user_posing_as_the_server_locks_nobody_out() {
    let stranger = Stranger::new();
    let props = temp_dir("posing-server");
    std::fs::set_permissions(&props, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(props.join("server"), "read _\n").expect("script");
    let socket = temp_dir("posing-server-socket").join("sock/s.sock");
    let _server = ServerAt(socket.clone());
    let mut poser = stranger
        .command("sh")
        .args(["server", "--foreground"])
        .arg(&socket)
        .current_dir(&props)
        .stdin(Stdio::piped())
        .spawn()
        .expect("sh");
    let state = temp_dir("posing-server-state");
    let output = output_within(
        "oino run",
        &mut oino_as_victim(
            &[
                "run",
                "--socket",
                socket.to_str().expect("utf-8"),
                "--",
                "echo served",
            ],
            &[("XDG_STATE_HOME", &state), ("HOME", &state)],
        ),
    );
    let _ = poser.kill();
    let _ = poser.wait();
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned()
        ),
        (Some(0), "served\n".to_owned()),
        "{}",
        stderr(&output)
    );
}

/// A project in a folder others may write in: an `.env` or a project file another user put
/// there (or could change) would set variables of, or run commands as, whoever starts it. Each
/// is refused, naming its owner, and nothing starts.
#[test]
fn a_project_file_or_env_file_another_user_planted_is_refused() {
    let stranger = Stranger::new();
    let shared = shared_dir("planted-env");
    let state = temp_dir("planted-env-state");
    let socket = state.join("sock/s.sock");
    let _server = ServerAt(socket.clone());
    std::fs::write(
        shared.join("oino.toml"),
        "[processes.web]\ncmd = \"echo [$INJECTED]\"\n",
    )
    .expect("oino.toml");
    stranger.sh(&format!(
        "echo INJECTED=pwned > '{}/.env'",
        shared.display()
    ));
    let up = |dir: &Path| {
        output_within(
            "oino up",
            oino_as_victim(
                &["up", "--socket", socket.to_str().expect("utf-8")],
                &[("XDG_STATE_HOME", &state), ("HOME", &state)],
            )
            .current_dir(dir),
        )
    };
    let output = up(&shared);
    assert_refused(&output, &format!("belongs to {}", stranger.name));
    assert!(stderr(&output).contains(".env"), "{}", stderr(&output));
    assert!(
        !socket.exists(),
        "a server was started: {}",
        stderr(&output)
    );

    // A project file of theirs, found in a folder of its own, the same.
    let theirs = shared.join("theirs");
    stranger.sh(&format!(
        "mkdir '{dir}' && printf 'procs:\\n  x:\\n    shell: echo owned\\n' > '{dir}/mprocs.yaml'",
        dir = theirs.display()
    ));
    let output = up(&theirs);
    assert_refused(&output, &format!("belongs to {}", stranger.name));
    assert!(
        stderr(&output).contains("mprocs.yaml"),
        "{}",
        stderr(&output)
    );

    // Ours, but anyone may change it: refused too, with what to do.
    std::fs::remove_file(shared.join(".env")).expect("gone");
    std::fs::write(shared.join(".env"), "INJECTED=no\n").expect(".env");
    std::fs::set_permissions(shared.join(".env"), std::fs::Permissions::from_mode(0o666))
        .expect("chmod");
    let output = up(&shared);
    assert_refused(&output, "anyone may change it");
}

/// A link another user planted in a shared folder chooses which of the victim's own files is
/// read: `.env` to another project's secrets, `oino.toml` to another project. Each is refused,
/// naming the link and its owner, and nothing starts (the files it leads to are the victim's
/// own, so the owner check of the file alone let them through).
#[test]
fn a_link_another_user_planted_to_a_file_of_ours_is_refused() {
    let stranger = Stranger::new();
    let shared = shared_dir("planted-link");
    let state = temp_dir("planted-link-state");
    let socket = state.join("sock/s.sock");
    let _server = ServerAt(socket.clone());
    // The victim's other project, private, with its secrets.
    let private = temp_dir("planted-link-private");
    std::fs::write(private.join("prod.env"), "INJECTED=prod-secret\n").expect("prod.env");
    std::fs::write(
        private.join("oino.toml"),
        "[processes.deploy]\ncmd = \"echo deploying to prod\"\n",
    )
    .expect("oino.toml");
    let project = shared.join("project");
    std::fs::create_dir(&project).expect("the project");
    std::fs::set_permissions(&project, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    std::fs::write(
        project.join("oino.toml"),
        "[processes.web]\ncmd = \"echo [$INJECTED]\"\n",
    )
    .expect("oino.toml");
    stranger.sh(&format!(
        "ln -s '{}/prod.env' '{}/.env'",
        private.display(),
        project.display()
    ));
    let up = |dir: &Path| {
        output_within(
            "oino up",
            oino_as_victim(
                &["up", "--socket", socket.to_str().expect("utf-8")],
                &[("XDG_STATE_HOME", &state), ("HOME", &state)],
            )
            .current_dir(dir),
        )
    };
    let output = up(&project);
    assert_refused(&output, &format!("is a link made by {}", stranger.name));
    assert!(stderr(&output).contains(".env"), "{}", stderr(&output));
    assert!(
        !socket.exists(),
        "a server was started: {}",
        stderr(&output)
    );
    // A project file that is a link of theirs to another project of ours.
    let other = shared.join("other");
    std::fs::create_dir(&other).expect("a folder");
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    stranger.sh(&format!(
        "ln -s '{}/oino.toml' '{}/oino.toml'",
        private.display(),
        other.display()
    ));
    let output = up(&other);
    assert_refused(&output, &format!("is a link made by {}", stranger.name));
    assert!(
        !socket.exists(),
        "a server was started: {}",
        stderr(&output)
    );
    // A link of the victim's own is followed, as before.
    std::fs::remove_file(project.join(".env")).expect("their link goes");
    std::os::unix::fs::symlink(private.join("prod.env"), project.join(".env")).expect("ours");
    let output = up(&project);
    assert!(output.status.success(), "{}", stderr(&output));
}
