//! Links kept ready (`link_persist`): a keeper starts the transport ahead and hands it to the
//! next command that reaches the far side, to this user's commands alone; it ends once no
//! command took one for the time set, or when its transports cannot start.

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::hosts::{Sides, text};
use crate::support::{output_within, temp_dir, wait_until_blocking};
use crate::users::Stranger;

/// The socket of the one keeper beside `near_socket`, once it listens.
fn keeper_socket(near_socket: &Path) -> PathBuf {
    let dir = near_socket.parent().expect("a folder");
    let mut found = None;
    wait_until_blocking("a keeper listens", || {
        found = std::fs::read_dir(dir).ok().and_then(|entries| {
            entries.flatten().map(|entry| entry.path()).find(|path| {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                name.starts_with("link-") && name.ends_with(".sock")
            })
        });
        found.is_some()
    });
    found.expect("found")
}

/// Where the keeper of the transport `argv` listens for a command started in `folder` with
/// the environment `variables` (and no other): `link-HASH.sock` beside the near socket, HASH
/// the FNV-1a of the words, an empty word, the folder, then each variable's name and value
/// in order (each ended by a zero byte; `_`, `OLDPWD`, `PWD` and `SHLVL` left out).
fn keeper_socket_for(
    near_socket: &Path,
    argv: &[&str],
    folder: &Path,
    variables: &[(&str, &str)],
) -> PathBuf {
    let mut words: Vec<&[u8]> = argv.iter().map(|word| word.as_bytes()).collect();
    words.push(b"");
    words.push(folder.as_os_str().as_encoded_bytes());
    let mut variables = variables.to_vec();
    variables.sort_unstable();
    for (name, value) in &variables {
        words.extend([name.as_bytes(), value.as_bytes()]);
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in words.iter().flat_map(|word| word.iter().chain(&[0])) {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
    }
    near_socket.with_file_name(format!("link-{hash:016x}.sock"))
}

/// A settings file that keeps links ready for `seconds`.
fn persisting(label: &str, seconds: u64) -> PathBuf {
    let file = temp_dir(label).join("config.toml");
    std::fs::write(&file, format!("link_persist = {seconds}\n")).expect("settings");
    file
}

/// `oino --via VIA ARGS` from the near side of `sides`, links kept ready for a minute.
fn kept_ready<'a>(sides: &'a Sides, label: &str, via: String) -> impl Fn(&[&str]) -> Command + 'a {
    let config = persisting(&format!("{label}-config"), 60);
    move |args| {
        let mut command = sides.near.oino(&["--via", &via]);
        command.args(args).env("OINO_CONFIG", &config);
        command
    }
}

/// `--via` running `script` in `sh`.
fn through_sh(script: &str) -> String {
    shell_words::join(["sh", "-c", script])
}

/// Ends the keeper at `socket` by removing its socket (it looks twice a second), and waits
/// until no keeper of a transport holding `needle` runs.
fn end_keeper(socket: &Path, needle: &str) {
    let _ = std::fs::remove_file(socket);
    wait_until_blocking("the keeper ends", || !keeper_runs(needle));
}

/// Whether a keeper of a transport whose words hold `needle` runs.
fn keeper_runs(needle: &str) -> bool {
    !processes(|words| words.contains("keep-link") && words.contains(needle)).is_empty()
}

/// The processes whose command lines (words ended by zero bytes) `wanted` accepts: their
/// folders under /proc.
fn processes(wanted: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    processes
        .flatten()
        .map(|process| process.path())
        .filter(|process| {
            std::fs::read(process.join("cmdline"))
                .is_ok_and(|words| wanted(&String::from_utf8_lossy(&words)))
        })
        .collect()
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
    let oino = kept_ready(&sides, "ready-take", through_sh(&script));
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
    let socket = keeper_socket(&sides.near.socket);
    wait_until_blocking("a link is kept ready", || {
        std::fs::read_to_string(&starts).is_ok_and(|started| started.lines().count() == 2)
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
    // Nor, for a while, once one gave up: its transports could not log in by themselves.
    std::fs::write(&gate, "").expect("opening the gate");
    let fourth = output_within("the fourth run", &mut oino(&["run", "--", "echo four"]));
    assert_eq!(text(&fourth.stdout), "four\n", "{}", text(&fourth.stderr));
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
    // The near socket's folder, open to the stranger while it plants a keeper of its own where
    // the victim's command looks for one.
    let dir = temp_dir("ready-peer").join("sock");
    std::fs::create_dir(&dir).expect("folder");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let near_socket = dir.join("s.sock");
    let folder = temp_dir("ready-peer-folder")
        .canonicalize()
        .expect("folder");
    let config = persisting("ready-peer-config", 60);
    let state = temp_dir("ready-peer-state");
    let path = std::env::var("PATH").unwrap_or_default();
    let variables = [
        ("PATH", path.as_str()),
        ("OINO_SOCKET", near_socket.to_str().expect("UTF-8")),
        ("XDG_STATE_HOME", state.to_str().expect("UTF-8")),
        ("OINO_CONFIG", config.to_str().expect("UTF-8")),
        ("MY_API_TOKEN", "sk-secret-do-not-leak"),
    ];
    let socket = keeper_socket_for(&near_socket, &argv, &folder, &variables);
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

    let ran = output_within(
        "a run that finds another user's keeper",
        Command::new(env!("CARGO_BIN_EXE_oino"))
            .args(["--via", &via, "run", "--", "echo real"])
            .env_clear()
            .envs(variables)
            .current_dir(&folder)
            .stdin(Stdio::null()),
    );
    assert_eq!(text(&ran.stdout), "real\n", "{}", text(&ran.stderr));
    // This user's own keeper now listens there (the stranger's socket replaced).
    wait_until_blocking("this user's keeper listens", || {
        std::fs::symlink_metadata(&socket).is_ok_and(|meta| {
            std::os::unix::fs::MetadataExt::uid(&meta) == nix::unistd::getuid().as_raw()
        })
    });
    let _ = fake.kill();
    let _ = fake.wait();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut said, &mut rest).expect("what the fake keeper saw");
    assert_eq!(rest, "", "the command never took the stranger's link");

    // The stranger, let in, is handed nothing by this user's keeper.
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
    let (gate, good, silent) = (dir.join("open"), dir.join("good"), dir.join("silent"));
    std::fs::write(&gate, "").expect("the gate");
    // With the gate closed, a transport takes every request and answers none, its output open
    // (a connection whose far end vanished without a word).
    let script = format!(
        "if test -e {}; then echo good >> {}; exec {}; else echo silent >> {}; \
         exec cat 3>&1 >/dev/null; fi",
        gate.display(),
        good.display(),
        sides.via(),
        silent.display()
    );
    let oino = kept_ready(&sides, "ready-stale", through_sh(&script));
    let first = output_within("the first run", &mut oino(&["run", "--", "echo one"]));
    assert_eq!(text(&first.stdout), "one\n", "{}", text(&first.stderr));
    let socket = keeper_socket(&sides.near.socket);
    wait_until_blocking("a good link is kept ready", || {
        std::fs::read_to_string(&good).is_ok_and(|started| started.lines().count() == 2)
    });
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

#[test]
fn a_command_is_handed_only_a_link_to_its_own_far_side() {
    let near = crate::support::ServerGuard::new("ready-own-near");
    let (a, b) = (
        crate::support::ServerGuard::new("ready-own-a"),
        crate::support::ServerGuard::new("ready-own-b"),
    );
    // One command, two far sides: where it leads is in the environment (as DOCKER_HOST or
    // KUBECONFIG say for a container's).
    let via = format!(
        "sh -c 'exec env OINO_SOCKET=\"$FAR_SOCKET\" XDG_STATE_HOME=\"$FAR_STATE\" {} proxy' \
         ready-own-side",
        env!("CARGO_BIN_EXE_oino")
    );
    let config = persisting("ready-own-config", 60);
    let run_on = |far: &crate::support::ServerGuard, word: &str| {
        let mut command = near.oino(&["--via", &via, "run", "--", &format!("echo {word}")]);
        command
            .env("OINO_CONFIG", &config)
            .env("FAR_SOCKET", &far.socket)
            .env("FAR_STATE", &far.state);
        let ran = output_within("a run", &mut command);
        assert_eq!(
            text(&ran.stdout),
            format!("{word}\n"),
            "{}",
            text(&ran.stderr)
        );
    };
    let sockets = || -> Vec<PathBuf> {
        let dir = near.socket.parent().expect("a folder");
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
            .unwrap_or_default();
        found.retain(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("link-") && name.ends_with(".sock")
        });
        found
    };
    run_on(&a, "a-one");
    let to_a = keeper_socket(&near.socket);
    run_on(&b, "b-one");
    wait_until_blocking("a keeper for each far side", || sockets().len() == 2);
    let to_b = sockets()
        .into_iter()
        .find(|socket| *socket != to_a)
        .expect("b's");
    // A link planted where b's keeper listens, to a's: never followed.
    std::fs::remove_file(&to_b).expect("b's socket");
    std::os::unix::fs::symlink(&to_a, &to_b).expect("symlink");
    run_on(&b, "b-two");
    let commands = |far: &crate::support::ServerGuard| -> Vec<String> {
        let listed = output_within("ls", &mut far.oino(&["ls", "--json"]));
        let entries: Vec<serde_json::Value> =
            serde_json::from_slice(&listed.stdout).expect("a JSON list");
        entries
            .iter()
            .map(|entry| entry["command"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(commands(&a), ["echo a-one"]);
    assert_eq!(commands(&b), ["echo b-one", "echo b-two"]);
    // Keepers end with their socket, one b-two started late included.
    wait_until_blocking("the keepers end", || {
        for socket in sockets() {
            let _ = std::fs::remove_file(socket);
        }
        !keeper_runs("ready-own-side")
    });
}

/// The pids of the `oino proxy` processes whose words hold `needle`, and whether each waits
/// for a request (its thread watching standard output runs).
fn proxies(needle: &str) -> Vec<(u32, bool)> {
    processes(|words| words.contains("\0proxy\0") && words.contains(needle))
        .into_iter()
        .filter_map(|process| {
            let pid: u32 = process.file_name()?.to_str()?.parse().ok()?;
            let waits = std::fs::read_dir(process.join("task")).is_ok_and(|tasks| {
                tasks.flatten().any(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|comm| comm.trim() == "stdout-watch")
                })
            });
            Some((pid, waits))
        })
        .collect()
}

#[test]
fn a_link_kept_ready_never_starts_again_a_far_server_that_was_stopped() {
    let sides = Sides::new("ready-stop");
    let far_socket = sides.far.socket.display().to_string();
    // The proxy named by its socket: its words tell it apart from other tests'.
    let via = format!(
        "env XDG_STATE_HOME={} {} proxy --socket {far_socket}",
        sides.far.state.display(),
        env!("CARGO_BIN_EXE_oino"),
    );
    let oino = kept_ready(&sides, "ready-stop", via);
    let first = output_within("the first run", &mut oino(&["run", "--", "echo one"]));
    assert_eq!(text(&first.stdout), "one\n", "{}", text(&first.stderr));
    let socket = keeper_socket(&sides.near.socket);
    wait_until_blocking("a link is kept ready", || {
        proxies(&far_socket).iter().any(|(_, waits)| *waits)
    });
    let before: Vec<u32> = proxies(&far_socket).iter().map(|(pid, _)| *pid).collect();
    // This machine's server runs too: kill-server through a link waits for the far one alone.
    let here = output_within("a call here", &mut sides.near.oino(&["run", "--", "true"]));
    assert!(here.status.success(), "{}", text(&here.stderr));
    // Stopped through the link kept ready.
    let stopped = output_within("kill-server", &mut oino(&["kill-server"]));
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    assert!(crate::support::server_pid(&sides.near.socket).is_some());
    wait_until_blocking("the far server stopped", || {
        crate::support::server_pid(&sides.far.socket).is_none()
    });
    // The next link kept ready waits for a request, connected to nothing: the server stays
    // stopped.
    wait_until_blocking("the next link is kept ready", || {
        proxies(&far_socket)
            .iter()
            .any(|(pid, waits)| *waits && !before.contains(pid))
    });
    assert_eq!(crate::support::server_pid(&sides.far.socket), None);
    // A command over it starts the far server again, as any command does.
    let second = output_within("the second run", &mut oino(&["run", "--", "echo two"]));
    assert_eq!(text(&second.stdout), "two\n", "{}", text(&second.stderr));
    end_keeper(&socket, &far_socket);
}

#[test]
fn a_keeper_whose_spares_keep_dying_gives_up_however_long_each_lived() {
    let sides = Sides::new("ready-deaths");
    let dir = temp_dir("ready-deaths");
    let (reached, starts) = (dir.join("reached"), dir.join("starts"));
    // The first transport reaches the far side; each after it dies 5.5 s after its start (the
    // keeper counted only deaths within 5 s, and started such a one again for ever).
    let script = format!(
        "echo start >> {starts}; if [ -e {reached} ]; then sleep 5.5; exit 1; fi; \
         touch {reached}; exec {via}",
        starts = starts.display(),
        reached = reached.display(),
        via = sides.via()
    );
    let via = through_sh(&script);
    let oino = kept_ready(&sides, "ready-deaths", via);
    let ran = output_within("a run", &mut oino(&["run", "--", "echo reached"]));
    assert_eq!(text(&ran.stdout), "reached\n", "{}", text(&ran.stderr));
    let needle = reached.display().to_string();
    wait_until_blocking("the keeper to start", || keeper_runs(&needle));
    wait_until_blocking("the keeper to give up", || !keeper_runs(&needle));
    let started = std::fs::read_to_string(&starts)
        .expect("starts")
        .lines()
        .count();
    // The command's own, then three spares that died.
    assert!(started <= 5, "{started} transports started");
    let socket = keeper_socket_for_dir(&sides.near.socket);
    assert!(
        socket
            .iter()
            .any(|path| path.to_string_lossy().ends_with(".gave-up")),
        "the give-up is marked: {socket:?}"
    );
}

/// The keepers' files beside `near_socket`.
fn keeper_socket_for_dir(near_socket: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(near_socket.parent().expect("a folder"))
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| {
                    path.file_name()
                        .is_some_and(|name| name.to_string_lossy().starts_with("link-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_keeper_ended_by_a_signal_leaves_neither_its_socket_nor_its_lock() {
    let sides = Sides::new("ready-signal");
    let marker = temp_dir("ready-signal").join("signal-marker");
    let via = through_sh(&format!(": {}; exec {}", marker.display(), sides.via()));
    let oino = kept_ready(&sides, "ready-signal", via);
    let ran = output_within("a run", &mut oino(&["run", "--", "echo reached"]));
    assert_eq!(text(&ran.stdout), "reached\n", "{}", text(&ran.stderr));
    let needle = marker.display().to_string();
    wait_until_blocking("the keeper to start", || keeper_runs(&needle));
    let socket = keeper_socket(&sides.near.socket);
    for keeper in processes(|words| words.contains("keep-link") && words.contains(&needle)) {
        let pid: i32 = keeper
            .file_name()
            .and_then(|name| name.to_str()?.parse().ok())
            .expect("a pid");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("SIGTERM");
    }
    wait_until_blocking("the keeper to end", || !keeper_runs(&needle));
    assert!(!socket.exists(), "{} was left", socket.display());
    assert!(
        !socket.with_extension("lock").exists(),
        "{} was left",
        socket.with_extension("lock").display()
    );
}
