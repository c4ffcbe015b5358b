//! `oino run`, the real binary: what it prints and how it exits.

use std::process::Output;

use crate::support::ServerGuard;

/// `oino run ARGS`, through a server of its own (ended afterwards).
fn oino_run(args: &[&str]) -> Output {
    let server = ServerGuard::new("cli");
    server.oino(&["run"]).args(args).output().expect("run oino")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn run_prints_the_result_and_exits_with_the_command_status() {
    let ok = oino_run(&["--", "echo hello; echo world"]);
    assert_eq!(stdout(&ok), "hello\nworld\n");
    assert_eq!(ok.status.code(), Some(0));

    let failed = oino_run(&["--", "echo oops; exit 5"]);
    assert_eq!(stdout(&failed), "oops\n[exit code 5]\n");
    assert_eq!(failed.status.code(), Some(5));
}

#[test]
fn a_command_that_ends_before_its_detach_time_gives_its_own_result() {
    let output = oino_run(&["--detach-after", "600", "--", "echo quick; exit 3"]);
    assert_eq!(stdout(&output), "quick\n[exit code 3]\n");
    assert_eq!(output.status.code(), Some(3));
}

#[test]
fn run_with_a_timeout_exits_124() {
    let output = oino_run(&["--timeout", "1", "--", "echo begun; sleep 600"]);
    assert_eq!(output.status.code(), Some(124));
    let text = stdout(&output);
    assert!(text.starts_with("begun\n[timed out after 1 s"), "{text}");
}

#[test]
fn run_detached_prints_the_marker_and_exits_0() {
    let output = oino_run(&[
        "--detach-after",
        "1",
        "--name",
        "waiter",
        "--",
        "echo up; sleep 600",
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "up\n\n\n[Detached to background task t1: still running after 1 s]\n"
    );
}

#[test]
fn run_detached_and_followed_prints_the_rest() {
    let output = oino_run(&[
        "--detach-after",
        "1",
        "--follow",
        "--",
        "echo first; sleep 2; echo second; exit 4",
    ]);
    assert_eq!(
        stdout(&output),
        "first\n\n\n[Detached to background task t1: still running after 1 s]\nsecond\n"
    );
    assert_eq!(output.status.code(), Some(4));
}

#[test]
fn run_embedded_keeps_everything_in_this_process() {
    let server = ServerGuard::new("cli-embedded");
    let output = server
        .oino(&["run", "--embedded", "--", "echo alone"])
        .output()
        .expect("run oino");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "alone\n");
    assert!(!server.socket.exists(), "an embedded run started a server");
}

#[test]
fn bad_arguments_say_what_is_wrong_and_exit_2() {
    for (args, message) in [
        (
            &["--cwd", "/no/such/dir", "--", "ls"][..],
            "cwd /no/such/dir does not exist",
        ),
        (
            &["--timeout", "-1", "--", "ls"][..],
            "--timeout must be a positive number",
        ),
        (
            &["--follow", "--", "ls"][..],
            "--follow follows a detached task",
        ),
        (
            &["--max-bytes", "nope", "--", "ls"][..],
            "invalid value 'nope'",
        ),
        (&[][..], "required"),
    ] {
        let output = oino_run(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty());
    }
}
