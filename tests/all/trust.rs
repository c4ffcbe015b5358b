//! Never harm, never lose: the real binary tried as a hostile user would (pid reuse, crafted
//! output, split reads, a full disk, few file descriptors, a deleted socket).

use std::process::{Command, Output};

use crate::support::{FullDisk, ServerGuard};

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

/// A caller's pager and terminal type never reach a program's call: a pager would wait at its
/// prompt for a key nobody presses. A person's call in the interface keeps their pager.
#[test]
fn a_programs_call_gets_oinos_terminal_and_no_pager_and_a_persons_keeps_its_pager() {
    let server = ServerGuard::new("pagers");
    let probe = r#"echo "$TERM $PAGER $GIT_PAGER $MANPAGER $SYSTEMD_PAGER $GH_PAGER ${COLUMNS-none} ${LINES-none}""#;
    let callers_env = [
        ("TERM", "xterm"),
        ("PAGER", "less"),
        ("GIT_PAGER", "less"),
        ("MANPAGER", "less"),
        ("SYSTEMD_PAGER", "less"),
        ("GH_PAGER", "less"),
        ("COLUMNS", "7"),
        ("LINES", "3"),
    ];
    for place in [&["run", "--"][..], &["run", "--embedded", "--"][..]] {
        let output = server
            .oino(&[place, &[probe]].concat())
            .envs(callers_env)
            .output()
            .expect("oino run");
        assert_eq!(
            text(&output),
            "xterm-256color cat cat cat cat cat none none\n",
            "{place:?}: {}",
            stderr(&output)
        );
    }
    let mut person = server
        .oino(&["headless", "--size", "100x12"])
        .envs(callers_env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("oino headless");
    std::io::Write::write_all(
        &mut person.stdin.take().expect("stdin"),
        b"key n\ntype echo \"$TERM:$PAGER\"\nkey enter\nwait-for xterm-256color:less\n",
    )
    .expect("script");
    let shown = person.wait_with_output().expect("oino headless");
    assert!(shown.status.success(), "{}", stderr(&shown));
}

/// With the log folder on a full disk, no output is lost: it is read from memory, and every
/// place the user looks says that the log could not be written.
#[test]
fn a_full_disk_loses_no_output_and_says_so_where_the_user_looks() {
    let server = ServerGuard::new("full-disk");
    let _disk = FullDisk::at(&server.state.join("oino/logs"));
    let followed = server
        .oino(&[
            "run",
            "--detach-after",
            "0.3",
            "--follow",
            "--",
            "sleep 0.5; seq 1 20; echo END",
        ])
        .output()
        .expect("oino run");
    let numbers: String = (1..=20).map(|n| format!("{n}\n")).collect();
    let printed = text(&followed);
    assert!(
        printed.ends_with(&format!("still running after 0.3 s]\n{numbers}END\n")),
        "{printed:?}"
    );
    assert_eq!(followed.status.code(), Some(0));
    assert!(
        stderr(&followed).contains("could not be written")
            && stderr(&followed).contains("No space left"),
        "{}",
        stderr(&followed)
    );

    let logs = server.oino(&["logs", "t1"]).output().expect("oino logs");
    assert_eq!(text(&logs), format!("{numbers}END\n"));
    assert!(
        stderr(&logs).contains("could not be written"),
        "{}",
        stderr(&logs)
    );

    let listed = server.oino(&["ls"]).output().expect("oino ls");
    assert!(
        text(&listed).contains("its log could not be written: writing "),
        "{}",
        text(&listed)
    );

    let plain = server
        .oino(&["run", "--", "seq 1 3"])
        .output()
        .expect("oino run");
    let printed = text(&plain);
    assert!(
        printed.starts_with("1\n2\n3\n[oino could not write this call's log (writing "),
        "{printed:?}"
    );
    assert!(printed.contains("No space left on device"), "{printed:?}");
}
