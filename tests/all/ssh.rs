//! `--host` over a real OpenSSH: a server of the test's own on the loopback address, with a
//! throwaway host key and client key, reached by `ssh -F` with a configuration of its own (the
//! `ssh_command` setting). The far side is this user with another runtime folder.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::hosts::text;
use crate::support::{ServerGuard, output_within, temp_dir, wait_until_blocking};

/// An sshd on 127.0.0.1 whose sessions reach the far server (`OINO_SOCKET` set for them, and a
/// home of their own: the user's shell start-up files are not the test's), and the settings
/// that make `oino --host far` use it.
struct Sshd {
    daemon: Child,
    dir: PathBuf,
    far: ServerGuard,
    near: ServerGuard,
}

fn sshd_program() -> &'static str {
    ["/usr/sbin/sshd", "/usr/bin/sshd"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("the ssh tests need OpenSSH's server: apt-get install openssh-server")
}

fn keygen(file: &Path) {
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(file)
        .status()
        .expect("the ssh tests need ssh-keygen (openssh-client)");
    assert!(made.success(), "ssh-keygen failed");
}

impl Sshd {
    fn start(label: &str) -> Self {
        let dir = temp_dir(label);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        keygen(&dir.join("host_key"));
        keygen(&dir.join("id"));
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).expect("authorized");
        // sshd's privilege separation folder, which a machine without a running sshd lacks.
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd (the tests run as root)");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let far = ServerGuard::new(&format!("{label}-far"));
        let bin = Path::new(env!("CARGO_BIN_EXE_oino")).parent().expect("bin");
        let d = dir.display();
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\n\
                 PermitRootLogin yes\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\n\
                 SetEnv HOME={d} PATH={}:/usr/bin:/bin OINO_SOCKET={} XDG_STATE_HOME={}\n",
                bin.display(),
                far.socket.display(),
                far.state.display()
            ),
        )
        .expect("sshd_config");
        let user = nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .expect("this user's name")
            .name;
        std::fs::write(
            dir.join("ssh_config"),
            format!(
                "Host far\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  \
                 IdentityFile {d}/id\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  \
                 UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  BatchMode yes\n"
            ),
        )
        .expect("ssh_config");
        std::fs::write(
            dir.join("config.toml"),
            format!("ssh_command = \"ssh -F {d}/ssh_config\"\n"),
        )
        .expect("settings");
        let log = std::fs::File::create(dir.join("sshd.log")).expect("log");
        let sshd = Command::new(sshd_program())
            .args(["-D", "-e", "-f"])
            .arg(dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sshd");
        let near = ServerGuard::new(&format!("{label}-near"));
        let sshd = Self {
            daemon: sshd,
            dir,
            far,
            near,
        };
        wait_until_blocking("sshd to let the test in", || {
            Command::new("ssh")
                .arg("-F")
                .arg(sshd.dir.join("ssh_config"))
                .args(["far", "true"])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        });
        sshd
    }

    /// `oino --host far ARGS`, its ssh configured by the settings.
    fn oino(&self, args: &[&str]) -> Command {
        let mut command = self.near.oino(&["--host", "far"]);
        command
            .args(args)
            .env("OINO_CONFIG", self.dir.join("config.toml"));
        command
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

#[test]
fn run_ls_logs_detach_and_kill_go_through_ssh() {
    let ssh = Sshd::start("ssh-commands");
    let ran = output_within(
        "run",
        &mut ssh.oino(&["run", "--", "echo over ssh; echo $OINO_SOCKET"]),
    );
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    assert_eq!(
        text(&ran.stdout),
        format!("over ssh\n{}\n", ssh.far.socket.display()),
        "it ran on the far side, as the far side's user"
    );

    let started = output_within(
        "a long call",
        &mut ssh.oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "ticker",
            "--",
            "for i in $(seq 1 300); do echo tick-$i; sleep 0.1; done",
        ]),
    );
    assert!(started.status.success(), "{}", text(&started.stderr));
    let listed = output_within("ls", &mut ssh.oino(&["ls"]));
    assert!(
        text(&listed.stdout).contains("ticker"),
        "{}",
        text(&listed.stdout)
    );

    // `logs -f` follows it over the link; a kill from another client ends it, and the
    // follower sees the end.
    let follower = ssh
        .oino(&["logs", "-f", "ticker"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("logs -f");
    // A call waited for over ssh, detached by another client over ssh.
    let waiter = ssh
        .oino(&["run", "--", "echo detach me; sleep 600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("a waiting run");
    let mut id = String::new();
    wait_until_blocking("the call to wait for", || {
        let listed = output_within("far ls", &mut ssh.far.oino(&["ls", "--json"]));
        let entries: Vec<serde_json::Value> =
            serde_json::from_slice(&listed.stdout).unwrap_or_default();
        id = entries
            .iter()
            .find(|entry| {
                entry["command"] == "echo detach me; sleep 600" && entry["bytes"].as_u64() > Some(0)
            })
            .and_then(|entry| entry["id"].as_str())
            .unwrap_or_default()
            .to_owned();
        !id.is_empty()
    });
    let detached = output_within(
        "detach",
        &mut ssh.oino(&["detach", &id, "--name", "parked"]),
    );
    assert!(detached.status.success(), "{}", text(&detached.stderr));
    let released = waiter.wait_with_output().expect("the waiter ends");
    assert!(
        text(&released.stdout).contains("detach me\n\n\n[Detached to background task"),
        "{}",
        text(&released.stdout)
    );
    let parked = output_within("kill parked", &mut ssh.oino(&["kill", "parked"]));
    assert!(parked.status.success(), "{}", text(&parked.stderr));
    let killed = output_within("kill", &mut ssh.oino(&["kill", "ticker"]));
    assert!(killed.status.success(), "{}", text(&killed.stderr));
    let tail = follower.wait_with_output().expect("logs -f ends");
    assert!(
        text(&tail.stdout).contains("tick-"),
        "{}",
        text(&tail.stdout)
    );

    let far: Vec<serde_json::Value> = serde_json::from_slice(
        &output_within("far ls", &mut ssh.far.oino(&["ls", "--json"])).stdout,
    )
    .expect("json");
    let ticker = far
        .iter()
        .find(|entry| entry["name"] == "ticker")
        .expect("ticker");
    assert_eq!(ticker["state"], "killed", "{ticker}");
    assert!(!ssh.near.socket.exists(), "nothing ran on the near side");
}

#[test]
fn a_call_whose_ssh_dies_goes_on_and_is_found_again() {
    let ssh = Sshd::start("ssh-dropped");
    let command = "echo started; sleep 600";
    let client = ssh
        .oino(&["run", "--", command])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("oino run");
    let running = || {
        let listed = output_within("far ls", &mut ssh.far.oino(&["ls", "--json"]));
        let entries: Vec<serde_json::Value> =
            serde_json::from_slice(&listed.stdout).unwrap_or_default();
        entries
            .into_iter()
            .find(|entry| entry["command"] == command && entry["state"] == "running")
    };
    wait_until_blocking("the call runs on the far side", || {
        ssh.far.socket.exists() && running().is_some()
    });
    // The link drops: the client's ssh is killed outright.
    let ssh_pids: Vec<i32> = std::fs::read_to_string(format!(
        "/proc/{}/task/{}/children",
        client.id(),
        client.id()
    ))
    .unwrap_or_default()
    .split_whitespace()
    .filter_map(|pid| pid.parse().ok())
    .collect();
    assert!(!ssh_pids.is_empty(), "the client runs ssh");
    for pid in ssh_pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let out = client.wait_with_output().expect("the client ends");
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("the link to far dropped"), "{stderr}");
    assert!(stderr.contains("oino --host far logs -f"), "{stderr}");
    // sshd notices the closed connection and ends the session; the call lives on, as a task.
    wait_until_blocking("the call to be a task on the far side", || {
        running().is_some_and(|entry| entry["kind"] == "task")
    });
    let id = running().and_then(|entry| entry["id"].as_str().map(str::to_owned));
    let id = id.expect("the call goes on");
    let logs = output_within("logs", &mut ssh.oino(&["logs", "--since", "0", &id]));
    assert!(
        text(&logs.stdout).contains("started"),
        "{}",
        text(&logs.stdout)
    );
    let killed = output_within("kill", &mut ssh.oino(&["kill", &id]));
    assert!(killed.status.success(), "{}", text(&killed.stderr));
}

#[test]
fn one_interface_shows_this_machine_and_the_host_and_links_it_again_when_ssh_dies() {
    let ssh = Sshd::start("ssh-fleet");
    let started = output_within(
        "a far task",
        &mut ssh.oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "far-ticker",
            "--",
            "for i in $(seq 1 3000); do echo tick-$i; sleep 0.1; done",
        ]),
    );
    assert!(started.status.success(), "{}", text(&started.stderr));
    // Every ssh of this test's configuration is killed outright (the shell that runs pkill
    // does not start with `ssh`).
    let script = format!(
        "run --title near-job sleep 600\n\
         wait-for far-ticker --timeout 20\n\
         key G\n\
         wait-for tick-\n\
         snapshot\n\
         run --id cut pkill -KILL -f '^ssh -F {}/ssh_config'\n\
         wait-exit cut\n\
         wait-for far is linked again --timeout 30\n\
         key G\n\
         wait-for tick-\n\
         key x\n\
         key y\n\
         wait-for killed `far-ticker`\n",
        ssh.dir.display()
    );
    let out = crate::fleet::play(
        ssh.near
            .oino(&["headless", "--server", "--size", "110x24", "--host", "far"])
            .env("OINO_CONFIG", ssh.dir.join("config.toml")),
        &script,
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    let (here, far) = stdout.split_once("■ far").expect("the host's heading");
    assert!(
        here.contains("■ this machine") && here.contains("near-job"),
        "{stdout}"
    );
    assert!(far.contains("far-ticker"), "{stdout}");
    // The kill after the link came back reached the far server.
    let listed = output_within("far ls", &mut ssh.far.oino(&["ls", "--json"]));
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).expect("json");
    let ticker = entries
        .iter()
        .find(|entry| entry["name"] == "far-ticker")
        .expect("the task");
    assert_eq!(ticker["state"], "killed", "{ticker}");
    assert!(
        entries.iter().all(|entry| entry["title"] != "near-job"),
        "{entries:?}"
    );
}

#[test]
fn commands_from_ten_folders_share_one_keeper_of_the_hosts_links() {
    let ssh = Sshd::start("ssh-one-keeper");
    let settings = ssh.dir.join("config.toml");
    let text_of = std::fs::read_to_string(&settings).expect("settings");
    std::fs::write(&settings, format!("{text_of}link_persist = 60\n")).expect("settings");
    let keepers = || {
        std::fs::read_dir("/proc").map_or(0, |processes| {
            processes
                .flatten()
                .filter(|process| {
                    std::fs::read(process.path().join("cmdline")).is_ok_and(|words| {
                        let words = String::from_utf8_lossy(&words);
                        words.contains("keep-link") && words.contains(&*ssh.dir.to_string_lossy())
                    })
                })
                .count()
        })
    };
    for n in 0..10 {
        let folder = ssh.dir.join(format!("folder-{n}"));
        std::fs::create_dir_all(&folder).expect("a folder");
        let ran = output_within(
            "a run from another folder",
            ssh.oino(&["run", "--", "true"]).current_dir(&folder),
        );
        assert!(ran.status.success(), "{}", text(&ran.stderr));
        wait_until_blocking("a keeper of the host's links", || keepers() >= 1);
    }
    // One far side, one keeper (there were ten, holding twelve ssh connections).
    assert_eq!(keepers(), 1);
    for socket in std::fs::read_dir(ssh.near.socket.parent().expect("a folder"))
        .expect("the folder")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.to_string_lossy().ends_with(".sock"))
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("link-"))
        })
    {
        let _ = std::fs::remove_file(socket);
    }
    wait_until_blocking("the keeper to end", || keepers() == 0);
}
