//! Links kept ready (`link_persist`): a keeper starts the transport ahead and hands it to the
//! next command that reaches the far side, to this user's commands alone; it ends once no
//! command took one for the time set, or when its transports cannot start.

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::hosts::{Sides, text};
use crate::support::{output_within, temp_dir, wait_until_blocking};
use crate::users::Stranger;

/// Where the keeper of the transport `argv` listens: `link-HASH.sock` beside the near socket,
/// HASH the FNV-1a of its words, each ended by a zero byte.
fn keeper_socket(near_socket: &Path, argv: &[&str]) -> PathBuf {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in argv.iter().flat_map(|word| word.bytes().chain([0])) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    near_socket.with_file_name(format!("link-{hash:016x}.sock"))
}

/// A settings file that keeps links ready for `seconds`.
fn persisting(label: &str, seconds: u64) -> PathBuf {
    let file = temp_dir(label).join("config.toml");
    std::fs::write(&file, format!("link_persist = {seconds}\n")).expect("settings");
    file
}

/// Ends the keeper at `socket` by removing its socket (it looks twice a second), and waits
/// until no keeper of a transport holding `needle` runs.
fn end_keeper(socket: &Path, needle: &str) {
    let _ = std::fs::remove_file(socket);
    wait_until_blocking("the keeper ends", || !keeper_runs(needle));
}

/// Whether a keeper of a transport whose words hold `needle` runs.
fn keeper_runs(needle: &str) -> bool {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return false;
    };
    processes.flatten().any(|process| {
        std::fs::read(process.path().join("cmdline")).is_ok_and(|cmdline| {
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.contains("keep-link") && cmdline.contains(needle)
        })
    })
}

#[test]
fn a_command_takes_the_link_kept_ready_and_needs_no_transport_of_its_own() {
    let sides = Sides::new("ready-take");
    let gate = temp_dir("ready-take-gate").join("open");
    let starts = temp_dir("ready-take-starts").join("starts");
    std::fs::write(&gate, "").expect("the gate");
    // The transport starts only while the gate is open, and says so once it passed it.
    let script = format!(
        "test -e {} || {{ echo gate closed >&2; exit 255; }}; echo start >> {}; exec {}",
        gate.display(),
        starts.display(),
        sides.via()
    );
    let argv = ["sh", "-c", &script];
    let via = shell_words::join(argv);
    let config = persisting("ready-take-config", 60);
    let oino = |args: &[&str]| {
        let mut command = sides.near.oino(&["--via", &via]);
        command.args(args).env("OINO_CONFIG", &config);
        command
    };
    // The first command is handed a descriptor its starter waits on (a harness's pipe): the
    // keeper it starts, which outlives it, must hold none of it.
    let fifo = temp_dir("ready-take-fifo").join("fd3");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let mut held = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&fifo)
        .expect("the fifo's reading end");
    let first = oino(&["run", "--", "echo one"]);
    let mut with_fd3 = Command::new("sh");
    with_fd3
        .args(["-c", "exec 3>\"$1\"; shift; exec \"$@\"", "sh"])
        .arg(&fifo)
        .arg(first.get_program())
        .args(first.get_args())
        .envs(
            first
                .get_envs()
                .filter_map(|(name, value)| Some((name, value?))),
        );
    let first = output_within("the first run", &mut with_fd3);
    assert_eq!(text(&first.stdout), "one\n", "{}", text(&first.stderr));
    wait_until_blocking("nobody holds the first command's descriptor 3", || {
        matches!(std::io::Read::read(&mut held, &mut [0; 8]), Ok(0))
    });
    // The first command started its own transport, and a keeper, which starts one ahead.
    let socket = keeper_socket(&sides.near.socket, &argv);
    wait_until_blocking("a link is kept ready", || {
        socket.exists()
            && std::fs::read_to_string(&starts).is_ok_and(|started| started.lines().count() == 2)
    });
    // No transport can start now: what reaches the far side goes over the link kept ready.
    std::fs::remove_file(&gate).expect("closing the gate");
    let second = output_within("the second run", &mut oino(&["run", "--", "echo two"]));
    assert_eq!(text(&second.stdout), "two\n", "{}", text(&second.stderr));
    assert_eq!(sides.far_entries().len(), 2, "both ran on the far side");
    // The keeper's next transports end at once: it gives up, and the socket goes with it.
    wait_until_blocking("the keeper gives up", || !socket.exists());
    wait_until_blocking("the keeper is gone", || {
        !keeper_runs(&gate.display().to_string())
    });
    // A command then starts its own transport, whose own words say why it failed; no keeper is
    // started for a far side out of reach.
    let third = output_within("the third run", &mut oino(&["run", "--", "echo three"]));
    assert!(!third.status.success());
    assert!(
        text(&third.stderr).contains("gate closed"),
        "{}",
        text(&third.stderr)
    );
    assert!(!keeper_runs(&gate.display().to_string()));
}

/// Python, run as the stranger: listens at `path` and hands the first client the ends of
/// pipes of its own, as a keeper would; says how many bytes came to the pipe a client would
/// write its requests to.
const FAKE_KEEPER: &str = r#"
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen()
print("listening", flush=True)
requests_r, requests_w = os.pipe()
replies_r, replies_w = os.pipe()
said_r, said_w = os.pipe()
client, _ = s.accept()
print("accepted", flush=True)
try:
    socket.send_fds(client, [b"L"], [requests_w, replies_r, said_r])
except OSError:
    pass
for fd in (requests_w, replies_r, said_r):
    os.close(fd)
client.close()
print("received", len(os.read(requests_r, 1 << 20)), "bytes", flush=True)
"#;

/// Python, run as the stranger: takes what a keeper at `path` hands over.
const TAKER: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(5)
msg, fds, flags, addr = socket.recv_fds(s, 1, 3)
print("got", len(fds), "descriptors", flush=True)
"#;

/// The system's Python, which another user can run (a user's own, as pyenv's, may be closed).
fn system_python() -> &'static str {
    const PYTHON: &str = "/usr/bin/python3";
    assert!(
        Path::new(PYTHON).exists(),
        "this test runs {PYTHON} as another user: install python3"
    );
    PYTHON
}

#[test]
fn links_are_taken_from_and_handed_to_this_users_processes_alone() {
    let stranger = Stranger::new();
    let far = crate::support::ServerGuard::new("ready-peer-far");
    let via = format!(
        "env OINO_SOCKET={} XDG_STATE_HOME={} {} proxy",
        far.socket.display(),
        far.state.display(),
        env!("CARGO_BIN_EXE_oino")
    );
    let argv: Vec<&str> = via.split(' ').collect();
    // The near socket's folder, open to the stranger while it plants a keeper of its own.
    let dir = temp_dir("ready-peer").join("sock");
    std::fs::create_dir(&dir).expect("folder");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let near_socket = dir.join("s.sock");
    let socket = keeper_socket(&near_socket, &argv);
    let mut fake = stranger
        .command(system_python())
        .args(["-c", FAKE_KEEPER])
        .arg(&socket)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 as the stranger");
    let mut said = std::io::BufReader::new(fake.stdout.take().expect("its output"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut said, &mut line).expect("the fake keeper listens");
    assert_eq!(line, "listening\n");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");

    let config = persisting("ready-peer-config", 60);
    let ran = output_within(
        "a run that finds another user's keeper",
        Command::new(env!("CARGO_BIN_EXE_oino"))
            .args(["--via", &via, "run", "--", "echo real"])
            .env("OINO_SOCKET", &near_socket)
            .env("XDG_STATE_HOME", temp_dir("ready-peer-state"))
            .env("OINO_CONFIG", &config)
            .env("MY_API_TOKEN", "sk-secret-do-not-leak")
            .stdin(Stdio::null()),
    );
    assert_eq!(text(&ran.stdout), "real\n", "{}", text(&ran.stderr));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut said, &mut rest).expect("what the fake keeper saw");
    let _ = fake.wait();
    assert_eq!(
        rest, "accepted\nreceived 0 bytes\n",
        "nothing went to its link"
    );

    // This user's own keeper now listens there; the stranger, let in, is handed nothing.
    wait_until_blocking("this user's keeper listens", || {
        std::fs::symlink_metadata(&socket).is_ok_and(|meta| {
            std::os::unix::fs::MetadataExt::uid(&meta) == nix::unistd::getuid().as_raw()
        })
    });
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let taken = output_within(
        "the stranger asks the keeper for a link",
        stranger
            .command(system_python())
            .args(["-c", TAKER])
            .arg(&socket),
    );
    assert_eq!(
        text(&taken.stdout),
        "got 0 descriptors\n",
        "{}",
        text(&taken.stderr)
    );
    end_keeper(&socket, &far.socket.display().to_string());
}

#[test]
fn a_link_kept_ready_that_never_answers_is_let_go_and_the_command_goes_on() {
    let sides = Sides::new("ready-stale");
    let dir = temp_dir("ready-stale-files");
    let (gate, silent) = (dir.join("open"), dir.join("silent"));
    std::fs::write(&gate, "").expect("the gate");
    // With the gate closed, a transport takes every request and answers none, its output open
    // (a connection whose far end vanished without a word).
    let script = format!(
        "if test -e {}; then exec {}; else echo silent >> {}; exec cat 3>&1 >/dev/null; fi",
        gate.display(),
        sides.via(),
        silent.display()
    );
    let argv = ["sh", "-c", &script];
    let via = shell_words::join(argv);
    let config = persisting("ready-stale-config", 60);
    let oino = |args: &[&str]| {
        let mut command = sides.near.oino(&["--via", &via]);
        command.args(args).env("OINO_CONFIG", &config);
        command
    };
    let socket = keeper_socket(&sides.near.socket, &argv);
    let first = output_within("the first run", &mut oino(&["run", "--", "echo one"]));
    assert_eq!(text(&first.stdout), "one\n", "{}", text(&first.stderr));
    wait_until_blocking("a link is kept ready", || socket.exists());
    // The link kept ready now is a good one; the next, started once it is taken, is silent.
    std::fs::remove_file(&gate).expect("closing the gate");
    let second = output_within("the second run", &mut oino(&["run", "--", "echo two"]));
    assert_eq!(text(&second.stdout), "two\n", "{}", text(&second.stderr));
    wait_until_blocking("a silent link is kept ready", || silent.exists());
    std::fs::write(&gate, "").expect("opening the gate");
    let third = output_within("the third run", &mut oino(&["run", "--", "echo three"]));
    assert_eq!(text(&third.stdout), "three\n", "{}", text(&third.stderr));
    assert_eq!(
        sides.far_entries().len(),
        3,
        "each ran once, on the far side"
    );
    end_keeper(&socket, &silent.display().to_string());
}
