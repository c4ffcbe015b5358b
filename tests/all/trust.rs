//! Never harm, never lose: the real binary tried as a hostile user would (pid reuse, crafted
//! output, split reads, a full disk, few file descriptors, a deleted socket).

use std::process::{Command, Output};

use crate::support::{ServerGuard, temp_dir};

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs a bash script as pid 1 of a new pid namespace with its own /proc, so that pids are
/// handed out to it alone (`ns_last_pid` then says which pid the next process gets).
fn in_pid_namespace(server: &ServerGuard, script: &str) -> Output {
    let output = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "bash", "-c", script])
        .env("OINO", env!("CARGO_BIN_EXE_oino"))
        .env("OINO_SOCKET", &server.socket)
        .env("XDG_STATE_HOME", &server.state)
        .output()
        .expect("unshare (util-linux) runs");
    assert!(
        !stderr(&output).contains("unshare failed"),
        "this test needs a new pid namespace (CI runs as root): {}",
        stderr(&output)
    );
    output
}

/// After `oino run -- true`, a process of another session takes the call's old pid: neither
/// `oino kill` on the ended call nor `kill-server` may touch it.
#[test]
fn a_reused_pid_is_never_signalled() {
    let server = ServerGuard::new("pid-reuse");
    let script = r#"
        set -u
        alive() { [ -e /proc/$1 ] && ! grep -q '^[0-9]* ([^)]*) Z' /proc/$1/stat; }
        "$OINO" run -- true >/dev/null || { echo "run failed"; exit 1; }
        pid=$("$OINO" ls --json | sed -n 's/^ *"pid": \([0-9]*\),/\1/p' | head -n 1)
        id=$("$OINO" ls --json | sed -n 's/^ *"id": "\(.*\)",/\1/p' | head -n 1)
        [ -n "$pid" ] || { echo "no pid listed"; exit 1; }
        for attempt in $(seq 50); do
            echo $((pid - 1)) > /proc/sys/kernel/ns_last_pid
            setsid sleep 777 &
            [ "$!" = "$pid" ] && break
            kill $!; wait $! 2>/dev/null
        done
        stranger=$!
        [ "$stranger" = "$pid" ] || { echo "pid $pid was not handed out again"; exit 1; }
        "$OINO" kill "$id" >/dev/null
        alive "$stranger" && echo "after kill: alive" || echo "after kill: dead"
        "$OINO" kill-server >/dev/null
        alive "$stranger" && echo "after kill-server: alive" || echo "after kill-server: dead"
        kill "$stranger"
    "#;
    let output = in_pid_namespace(&server, script);
    assert_eq!(
        text(&output),
        "after kill: alive\nafter kill-server: alive\n",
        "{}",
        stderr(&output)
    );
}

/// The log folder of a server, as the tests' state dir makes it.
#[allow(dead_code)]
fn log_folder(server: &ServerGuard) -> std::path::PathBuf {
    server.state.join("oino/logs")
}

#[allow(dead_code)]
fn scratch(label: &str) -> std::path::PathBuf {
    temp_dir(label)
}
