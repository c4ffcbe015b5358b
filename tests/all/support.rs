//! Helpers shared by the integration tests: a core with its own log folder, waits with
//! deadlines, and a look at /proc.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use oino::core::{CallRequest, Core, CoreConfig, EntryState};
use oino::pty::{CALL_ID_ENV, proc_scan};

/// A generous bound for anything that should take well under a second on an idle machine.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A folder of its own for one test.
pub fn temp_dir(label: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "oino-test-{}-{label}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A core whose logs go to a temp folder.
pub fn test_core(label: &str) -> Core {
    Core::new(CoreConfig {
        log_dir: Some(temp_dir(label)),
        kill_grace: Duration::from_secs(1),
        ..CoreConfig::default()
    })
    .expect("core")
}

/// A call id no other test (or other oino) uses.
pub fn unique_id(label: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "{label}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

pub fn request(id: &str, command: &str) -> CallRequest {
    CallRequest {
        id: Some(id.to_owned()),
        ..CallRequest::new(command)
    }
}

/// Live processes carrying `OINO_CALL_ID=id`.
pub fn processes_of(id: &str) -> Vec<i32> {
    proc_scan::with_env(CALL_ID_ENV, id)
}

/// Waits until `condition` holds, checking every few milliseconds, at most `DEADLINE`.
pub async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `wait_until` for tests without a runtime: checks every 20 ms, at most `DEADLINE`.
pub fn wait_until_blocking(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + DEADLINE;
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads an entry's output from `from` until it has ended and everything is read.
pub async fn read_to_end(core: &Core, id: &str, from: u64) -> String {
    let state = core.wait(id, Some(DEADLINE)).await.expect("entry");
    assert_ne!(state, EntryState::Running, "{id} did not end in time");
    let mut offset = from;
    let mut text = String::new();
    loop {
        let slice = core.output(id, Some(offset), 1 << 20).expect("output");
        if slice.next_offset == offset {
            return text;
        }
        text.push_str(&slice.text);
        offset = slice.next_offset;
    }
}

/// A socket of its own for a test's server, which is ended when the guard goes.
pub struct ServerGuard {
    pub socket: PathBuf,
    pub state: PathBuf,
}

impl ServerGuard {
    pub fn new(label: &str) -> Self {
        let dir = temp_dir(label);
        Self {
            socket: dir.join("sock/test.sock"),
            state: dir.join("state"),
        }
    }

    /// `oino ARGS` against this server.
    pub fn oino(&self, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_oino"));
        command
            .args(args)
            .env("OINO_SOCKET", &self.socket)
            .env("XDG_STATE_HOME", &self.state);
        command
    }
}

impl ServerGuard {
    /// Starts a task named `name` running `command` (a call detached at once); fails the test
    /// when it does not start.
    pub fn task(&self, name: &str, command: &str) {
        let started = output_within(
            "a task",
            &mut self.oino(&[
                "run",
                "--detach-after",
                "0.01",
                "--name",
                name,
                "--",
                command,
            ]),
        );
        assert!(
            started.status.success(),
            "{}",
            String::from_utf8_lossy(&started.stderr)
        );
    }

    /// The id of the newest entry whose command is `command`.
    pub fn id_of(&self, command: &str) -> String {
        let listed = self.oino(&["ls", "--json"]).output().expect("oino ls");
        let entries: Vec<serde_json::Value> =
            serde_json::from_slice(&listed.stdout).expect("a JSON list");
        entries
            .iter()
            .rev()
            .find(|entry| entry["command"] == command)
            .and_then(|entry| entry["id"].as_str())
            .unwrap_or_else(|| panic!("no entry runs {command}: {entries:?}"))
            .to_owned()
    }
}

/// A manual page (roff) as man(1) renders it at `width` columns.
pub fn rendered_man(page: &[u8], width: u16) -> String {
    let mut man = std::process::Command::new("man")
        .args(["-l", "-"])
        .env("MANWIDTH", width.to_string())
        .env("MANPAGER", "cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("man is missing: scripts/test installs it (Debian package man-db)");
    std::io::Write::write_all(&mut man.stdin.take().expect("stdin"), page).expect("write the page");
    let rendered = man.wait_with_output().expect("man");
    assert!(rendered.status.success(), "{rendered:?}");
    String::from_utf8_lossy(&rendered.stdout).into_owned()
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = self.oino(&["kill-server"]).output();
    }
}

/// A 1 MiB tmpfs mounted at a folder and filled up: a full disk there. Unmounted when dropped.
pub struct FullDisk {
    dir: PathBuf,
}

impl FullDisk {
    pub fn at(dir: &std::path::Path) -> Self {
        std::fs::create_dir_all(dir).expect("the folder to mount on");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir)
            .output()
            .expect("mount runs");
        assert!(
            mounted.status.success(),
            "this test mounts a 1 MiB tmpfs to fill it (CI runs as root): {}",
            String::from_utf8_lossy(&mounted.stderr)
        );
        let disk = Self {
            dir: dir.to_owned(),
        };
        let mut filler = std::fs::File::create(dir.join("filler")).expect("filler");
        let block = vec![0u8; 64 * 1024];
        while std::io::Write::write_all(&mut filler, &block).is_ok() {}
        disk
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .status();
    }
}

/// The pid of the server serving `socket`, found by its command line.
pub fn server_pid(socket: &std::path::Path) -> Option<i32> {
    let socket = socket.to_str()?;
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|dir| {
        let pid: i32 = dir.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(dir.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
        (args.get(1) == Some(&b"server".as_slice()) && args.contains(&socket.as_bytes()))
            .then_some(pid)
    })
}

/// Kills the server of `socket` outright (`kill -9`), as a crash would; its pid.
pub fn kill_server_outright(socket: &std::path::Path) -> i32 {
    let pid = server_pid(socket).expect("the server's pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill -9 the server");
    pid
}

/// A process's peak resident memory, in KiB (`VmHWM`).
pub fn peak_memory_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("the process's status")
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// Waits (with the deadline) until `child` has exited; its status.
pub fn wait_for_exit(what: &str, child: &mut std::process::Child) -> std::process::ExitStatus {
    let mut status = None;
    wait_until_blocking(what, || {
        status = child.try_wait().expect("wait");
        status.is_some()
    });
    status.expect("an exit status")
}

/// Runs `command` to its end, as `Command::output` does, but kills it and fails the test when
/// it has not ended within the deadline.
pub fn output_within(what: &str, command: &mut std::process::Command) -> std::process::Output {
    output_before(what, command, DEADLINE)
}

/// [`output_within`] with a deadline of `limit`, for a run that waits on several deadlines of
/// its own.
pub fn output_before(
    what: &str,
    command: &mut std::process::Command,
    limit: Duration,
) -> std::process::Output {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("{what}: cannot start: {err}"));
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "{what} did not end within {} s; its standard error: {}",
                limit.as_secs(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// How many live processes run exactly `argv` (zombies included until reaped: a process whose
/// command line is empty is one, and is not counted).
pub fn running(argv: &[&str]) -> usize {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|arg| [arg.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc").map_or(0, |processes| {
        processes
            .flatten()
            .filter(|process| {
                std::fs::read(process.path().join("cmdline")).is_ok_and(|words| words == wanted)
            })
            .count()
    })
}
