//! `oino run`, the real binary: what it prints and how it exits.

use std::process::Output;

use crate::support::{ServerGuard, wait_until_blocking};

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

    // A command that writes nothing leaves no empty line, as it would without oino.
    let quiet = oino_run(&["--", "true"]);
    assert_eq!(stdout(&quiet), "");
    assert_eq!(quiet.status.code(), Some(0));
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
    // The other commands' flags too.
    let server = ServerGuard::new("bad-flags");
    for args in [
        &["wait", "c1", "--timeout", "0"][..],
        &["wait", "c1", "--timeout", "nan"],
    ] {
        let output = server.oino(args).output().expect("oino");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("--timeout must be a positive number"),
            "{args:?}: {stderr}"
        );
    }
    // The server says what is wrong; the command line says what to do, in its own words.
    let started = server.oino(&["ls"]).output().expect("oino ls");
    assert!(started.status.success(), "{started:?}");
    for args in [
        &["kill", "nothing"][..],
        &["logs", "nothing"],
        &["send", "nothing", "x"],
    ] {
        let output = server.oino(args).output().expect("oino");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("no call or task `nothing`: list them with `oino ls`"),
            "{args:?}: {stderr}"
        );
    }
}

/// Runs `oino ARGS` on `server` with its standard output (or, with `close_stderr`, its error)
/// closed before it writes, as `| head -1` closes it; what it says on the other comes back.
fn with_closed(server: &ServerGuard, args: &[&str], close_stderr: bool) -> Output {
    let mut child = server
        .oino(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oino");
    let (closed, mut open): (
        Option<Box<dyn std::io::Read + Send>>,
        Box<dyn std::io::Read + Send>,
    ) = if close_stderr {
        (
            child.stderr.take().map(|e| Box::new(e) as _),
            Box::new(child.stdout.take().expect("stdout")),
        )
    } else {
        (
            child.stdout.take().map(|o| Box::new(o) as _),
            Box::new(child.stderr.take().expect("stderr")),
        )
    };
    drop(closed);
    let reading = std::thread::spawn(move || {
        let mut text = Vec::new();
        open.read_to_end(&mut text).map(|_| text)
    });
    Output {
        status: crate::support::wait_for_exit("oino to end", &mut child),
        stdout: Vec::new(),
        stderr: reading.join().expect("reader").expect("read"),
    }
}

#[test]
fn a_closed_output_ends_every_command_quietly() {
    let server = ServerGuard::new("closed-pipe");
    let ran = server
        .oino(&["run", "--", "seq 1 20000"])
        .output()
        .expect("oino run");
    assert!(ran.status.success());
    let task = server
        .oino(&[
            "run",
            "--detach-after",
            "0.3",
            "--name",
            "ticker",
            "--",
            "while :; do echo tick; sleep 0.01; done",
        ])
        .output()
        .expect("a task");
    assert!(task.status.success());
    let id = serde_json::from_slice::<Vec<serde_json::Value>>(
        &server.oino(&["ls", "--json"]).output().expect("ls").stdout,
    )
    .expect("json")[0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    for args in [
        &["run", "--json", "--", "echo hi"][..],
        &["logs", &id, "--json"],
        &["logs", &id],
        &["logs", "-f", "ticker"],
        &["ls"],
        &["ls", "--json"],
    ] {
        let output = with_closed(&server, args, false);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{args:?}: {:?} {stderr}",
            output.status
        );
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
    // A follow is a view: the task it followed runs on.
    let listed = server.oino(&["ls"]).output().expect("ls");
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("running"),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
    // An error message into a closed standard error: its exit status, no panic (101).
    let refused = with_closed(&server, &["logs", "no-such-entry"], true);
    assert_eq!(refused.status.code(), Some(2));
    let _ = server.oino(&["kill", "ticker"]).output();
}

#[test]
fn a_bad_or_taken_task_name_is_refused_before_anything_starts() {
    let server = ServerGuard::new("names-first");
    let web = server
        .oino(&[
            "run",
            "--detach-after",
            "0.2",
            "--name",
            "web",
            "--",
            "sleep 30",
        ])
        .output()
        .expect("a task named web");
    assert!(web.status.success());
    for (name, rule) in [
        ("a/b", "use letters, digits"),
        ("t99", "looks like a task or call id"),
        ("run-1", "looks like a task or call id"),
        ("web", "the name `web` is taken"),
    ] {
        let started = std::time::Instant::now();
        let output = server
            .oino(&[
                "run",
                "--detach-after",
                "0.2",
                "--name",
                name,
                "--",
                "sleep 30",
            ])
            .output()
            .expect("oino run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(rule), "{name}: {stderr}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{name}: refused only after {:?}",
            started.elapsed()
        );
    }
    // Nothing but the first task was started.
    let listed = server.oino(&["ls", "--json"]).output().expect("ls");
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(entries.len(), 1, "{entries:?}");
    let _ = server.oino(&["kill", "web"]).output();
}

/// Sends SIGINT to `child` (Ctrl-C), waits for it to end; its status code and what it said on
/// standard error.
fn interrupt(child: &mut std::process::Child) -> (Option<i32>, String) {
    use std::io::Read as _;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let status = crate::support::wait_for_exit("oino to end after Ctrl-C", child);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    (status.code(), stderr)
}

/// The state of the server's first entry.
fn first_state(server: &ServerGuard) -> serde_json::Value {
    let listed = server.oino(&["ls", "--json"]).output().expect("ls");
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).expect("json");
    entries[0]["state"].clone()
}

#[test]
fn ctrl_c_while_following_a_task_ends_the_following_not_the_task() {
    use std::io::Read as _;
    let server = ServerGuard::new("follow-ctrl-c");
    let mut run = server
        .oino(&[
            "run",
            "--detach-after",
            "0.2",
            "--follow",
            "--",
            "while :; do echo tick; sleep 0.05; done",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oino run");
    let mut stdout = run.stdout.take().expect("stdout");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reading = {
        let seen = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut buffer = [0; 4096];
            while let Ok(read @ 1..) = stdout.read(&mut buffer) {
                seen.lock()
                    .expect("seen")
                    .push_str(&String::from_utf8_lossy(&buffer[..read]));
            }
        })
    };
    // Past the marker, with a tick printed by the follow.
    crate::support::wait_until_blocking("the follow to print after the detach", || {
        let seen = seen.lock().expect("seen");
        seen.split("[Detached to background task")
            .nth(1)
            .is_some_and(|after| after.contains("tick"))
    });
    let (status, stderr) = interrupt(&mut run);
    reading.join().expect("reader");
    assert_eq!(status, Some(130), "{stderr}");
    assert!(
        stderr.contains("stopped following task t1; it keeps running"),
        "{stderr}"
    );
    assert_eq!(first_state(&server), "running");
    let _ = server.oino(&["kill", "t1"]).output();
}

#[test]
fn ctrl_c_on_logs_follow_leaves_the_task_running() {
    use std::io::Read as _;
    let server = ServerGuard::new("logs-ctrl-c");
    let task = server
        .oino(&[
            "run",
            "--detach-after",
            "0.2",
            "--name",
            "ticker",
            "--",
            "while :; do echo tick; sleep 0.05; done",
        ])
        .output()
        .expect("a task");
    assert!(task.status.success());
    let mut logs = server
        .oino(&["logs", "-f", "ticker"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oino logs -f");
    let mut stdout = logs.stdout.take().expect("stdout");
    let mut first = [0; 4];
    stdout.read_exact(&mut first).expect("the follow prints");
    let draining = std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let (status, stderr) = interrupt(&mut logs);
    let _ = draining.join();
    assert_eq!(status, Some(130), "{stderr}");
    assert!(
        stderr.contains("stopped following ticker; it keeps running"),
        "{stderr}"
    );
    assert_eq!(first_state(&server), "running");
    let _ = server.oino(&["kill", "ticker"]).output();
}

#[test]
fn a_call_detached_by_its_timeout_becomes_the_task_its_name_says() {
    let server = ServerGuard::new("timeout-name");
    let output = server
        .oino(&[
            "run",
            "--timeout",
            "1",
            "--on-timeout",
            "detach",
            "--name",
            "web",
            "--",
            "echo up; sleep 600",
        ])
        .output()
        .expect("oino run");
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stdout(&output).contains("[Detached to background task t1: still running after"),
        "{}",
        stdout(&output)
    );
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    let entries: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    assert_eq!(entries[0]["task_id"], "t1", "{entries}");
    assert_eq!(entries[0]["name"], "web", "{entries}");
    let by_name = server.oino(&["kill", "web"]).output().expect("oino kill");
    assert!(
        by_name.status.success(),
        "{}",
        String::from_utf8_lossy(&by_name.stderr)
    );
}

#[test]
fn of_two_runs_asking_for_one_name_at_once_one_gets_it_and_the_other_stops_at_once() {
    let server = ServerGuard::new("name-race");
    let started = std::time::Instant::now();
    let racers: Vec<_> = (0..2)
        .map(|_| {
            server
                .oino(&[
                    "run",
                    "--detach-after",
                    "0.5",
                    "--name",
                    "race",
                    "--",
                    "sleep 30",
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("oino run")
        })
        .collect();
    let mut codes: Vec<Option<i32>> = racers
        .into_iter()
        .map(|racer| racer.wait_with_output().expect("a racer").status.code())
        .collect();
    codes.sort_unstable();
    assert_eq!(codes, [Some(0), Some(2)]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the loser waited for its command: {:?}",
        started.elapsed()
    );
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    let entries: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    let named: Vec<_> = entries
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["name"] == "race")
        .collect();
    assert_eq!(named.len(), 1, "{entries}");
}

#[test]
fn oino_screen_prints_what_a_task_shows_as_text_ansi_or_json() {
    let server = ServerGuard::new("screen-cli");
    let task = server
        .oino(&[
            "run",
            "--detach-after",
            "0.2",
            "--name",
            "painter",
            "--",
            "printf '\\e[2J\\e[Hplain\\n\\e[1;32mgreen\\e[0m done\\e[3;4H'; sleep 600",
        ])
        .output()
        .expect("a task");
    assert!(task.status.success(), "{task:?}");
    let screen = |args: &[&str]| {
        let mut all = vec!["screen", "painter"];
        all.extend_from_slice(args);
        let output = server.oino(&all).output().expect("oino screen");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).expect("utf-8")
    };
    wait_until_blocking("the screen to be drawn", || screen(&[]).contains("done"));
    assert_eq!(screen(&[]), "plain\ngreen done\n");
    assert_eq!(
        screen(&["--ansi"]),
        "plain\n\x1b[0;1;32mgreen\x1b[0m done\n"
    );
    let json: serde_json::Value = serde_json::from_str(&screen(&["--json"])).expect("json");
    assert_eq!(json["cols"], 80);
    assert_eq!(json["rows"], 24);
    assert_eq!(json["lines"][1], "green done");
    assert_eq!(json["lines"].as_array().map(Vec::len), Some(24));
    assert_eq!(json["cursor"], serde_json::json!({"row": 2, "col": 3}));
    assert_eq!(json["alternate_screen"], false);

    let missing = server
        .oino(&["screen", "nothing"])
        .output()
        .expect("oino screen");
    assert_eq!(missing.status.code(), Some(2), "{missing:?}");
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nothing"));
}

#[test]
fn oino_run_detaches_on_a_ready_line_with_the_output_so_far() {
    let server = ServerGuard::new("detach-on");
    let ran = server
        .oino(&[
            "run",
            "--detach-on",
            "^ready in \\d+ ms$",
            "--",
            "echo starting; sleep 0.2; echo 'ready in 12 ms'; sleep 600",
        ])
        .output()
        .expect("oino run");
    assert!(ran.status.success(), "{ran:?}");
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "starting\nready in 12 ms\n\n\n[Detached to background task t1: matched /^ready in \\d+ ms$/: \
         ready in 12 ms]\n"
    );
    let bad = server
        .oino(&["run", "--detach-on", "[", "--", "true"])
        .output()
        .expect("oino run");
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--detach-on \"[\" is not a regular"));
}

#[test]
fn oino_run_returns_at_a_prompt_and_ls_says_what_waits_for_an_answer() {
    let server = ServerGuard::new("run-prompt");
    let ran = server
        .oino(&[
            "run",
            "--",
            "python3 -c 'print(\"hello\", input(\"name: \"))'",
        ])
        .output()
        .expect("oino run");
    assert!(ran.status.success(), "{ran:?}");
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "name: \n\n[Detached to background task t1: waiting for input: name:]\n"
    );
    let listed = server.oino(&["ls"]).output().expect("ls");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.contains("input?"), "{listed}");
    assert!(
        listed.contains("? t1 waits for input: name: (answer with `oino send t1 TEXT --enter`)"),
        "{listed}"
    );
    let sent = server
        .oino(&["send", "t1", "Ada", "--enter"])
        .output()
        .expect("send");
    assert!(sent.status.success(), "{sent:?}");
    let waited = server.oino(&["wait", "t1"]).output().expect("wait");
    assert!(waited.status.success(), "{waited:?}");
    let logs = server.oino(&["logs", "t1"]).output().expect("logs");
    assert_eq!(String::from_utf8_lossy(&logs.stdout), "Ada\nhello Ada\n");
    // All of it, the prompt before the detach too.
    let all = server
        .oino(&["logs", "t1", "--since", "0"])
        .output()
        .expect("logs");
    assert_eq!(
        String::from_utf8_lossy(&all.stdout),
        "name: Ada\nhello Ada\n"
    );

    // Told to wait, it waits: `oino send` answers it.
    let waiting = server
        .oino(&[
            "run",
            "--on-input",
            "wait",
            "--",
            "read -p 'Sure? ' a; echo got=$a",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("oino run");
    let mut id = String::new();
    wait_until_blocking("the call to wait for input", || {
        let listed = server.oino(&["ls", "--json"]).output().expect("ls");
        let entries: Vec<serde_json::Value> =
            serde_json::from_slice(&listed.stdout).unwrap_or_default();
        entries
            .iter()
            .find(|entry| entry["waiting_for_input"] == "Sure?")
            .and_then(|entry| entry["id"].as_str())
            .map(|found| id = found.to_owned())
            .is_some()
    });
    let sent = server
        .oino(&["send", &id, "yes", "--enter"])
        .output()
        .expect("send");
    assert!(sent.status.success(), "{sent:?}");
    let ran = waiting.wait_with_output().expect("oino run");
    assert!(ran.status.success(), "{ran:?}");
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "Sure? yes\ngot=yes\n");
}

#[test]
fn global_options_work_before_or_after_the_subcommand() {
    let server = ServerGuard::new("global-options");
    let runtime = crate::support::temp_dir("global-runtime");
    let session = runtime.join("oino/work.sock");
    // Whatever happens below, the session's server is ended.
    let _work = ServerGuard {
        socket: session.clone(),
        state: server.state.clone(),
    };
    let oino = |args: &[&str]| {
        server
            .oino(args)
            .env("XDG_RUNTIME_DIR", &runtime)
            .output()
            .expect("run oino")
    };
    let started = oino(&[
        "-s",
        "work",
        "run",
        "--detach-after",
        "0.1",
        "--name",
        "sleeper",
        "--",
        "sleep 600",
    ]);
    assert!(started.status.success(), "{started:?}");
    assert!(session.exists(), "no server for session work");
    let socket = session.to_str().expect("a UTF-8 path");
    for args in [
        &["-s", "work", "ls"][..],
        &["ls", "-s", "work"],
        &["--session", "work", "ls"],
        &["--socket", socket, "ls"],
        &["ls", "--socket", socket],
    ] {
        let listed = oino(args);
        assert!(listed.status.success(), "{args:?}: {listed:?}");
        assert!(stdout(&listed).contains("sleeper"), "{args:?}: {listed:?}");
    }
    // OINO_SOCKET's server was never asked.
    assert!(!server.socket.exists());

    // An interface flag before a subcommand is refused, not dropped.
    let embedded = oino(&["--embedded", "ls"]);
    assert_eq!(embedded.status.code(), Some(2), "{embedded:?}");
    let said = String::from_utf8_lossy(&embedded.stderr);
    assert!(said.contains("oino run --embedded"), "{said}");
    // After `--`, a subcommand's name is a command for the interface.
    let call = oino(&["-s", "work", "--", "ls"]);
    let said = String::from_utf8_lossy(&call.stderr);
    assert!(said.contains("the interface needs a terminal"), "{said}");
}

#[test]
fn completions_complete_subcommands_in_bash_and_the_manual_renders() {
    let server = ServerGuard::new("completions");
    let script = server
        .oino(&["completions", "bash"])
        .output()
        .expect("oino completions bash");
    assert!(script.status.success(), "{script:?}");
    let file = crate::support::temp_dir("completions").join("oino.bash");
    std::fs::create_dir_all(file.parent().expect("a folder")).expect("folder");
    std::fs::write(&file, &script.stdout).expect("write the script");
    // What bash's completion does on `oino l<Tab>` and `oino kill<Tab>`.
    let here = crate::support::temp_dir("completions-here");
    let complete = |line: &str| crate::words::bash_offers(&server, &file, &here, line);
    assert_eq!(complete("oino l"), ["logs", "ls"]);
    assert_eq!(complete("oino kill"), ["kill", "kill-server"]);
    assert!(complete("oino run --detach").contains(&"--detach-after".to_owned()));
    for shell in ["zsh", "fish"] {
        let output = server.oino(&["completions", shell]).output().expect("oino");
        assert!(
            output.status.success() && !output.stdout.is_empty(),
            "{shell}"
        );
    }

    let page = server.oino(&["man"]).output().expect("oino man");
    assert!(page.status.success(), "{page:?}");
    assert!(
        stdout(&page).starts_with(".ie"),
        "not roff: {}",
        stdout(&page)
    );
    let text = crate::support::rendered_man(&page.stdout, 80);
    for part in ["NAME", "oino", "SUBCOMMANDS", "kill-server", "completions"] {
        assert!(text.contains(part), "{part} missing from:\n{text}");
    }
}

#[test]
fn oino_restart_starts_a_task_again_and_prints_its_new_id() {
    let server = ServerGuard::new("restart");
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.1",
            "--name",
            "napper",
            "--",
            "echo nap; sleep 600",
        ])
        .output()
        .expect("oino run");
    assert!(started.status.success(), "{started:?}");
    let restarted = server
        .oino(&["restart", "napper"])
        .output()
        .expect("oino restart");
    assert!(restarted.status.success(), "{restarted:?}");
    let new_id = stdout(&restarted).trim().to_owned();
    assert!(new_id.starts_with('t') && new_id != "t1", "{new_id}");
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    let entries: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    let state_of = |task: &str| {
        entries
            .as_array()
            .expect("a list")
            .iter()
            .find(|entry| entry["task_id"] == task)
            .map(|entry| (entry["state"].clone(), entry["name"].clone()))
    };
    // The new task has the old one's name, and the name finds it.
    assert_eq!(
        state_of(&new_id),
        Some(("running".into(), "napper".into())),
        "{entries}"
    );
    assert_eq!(state_of("t1").expect("t1").0, "killed", "{entries}");
    // The new run prints its line once it has started: waited for, not assumed.
    wait_until_blocking("the new run's line", || {
        let logs = server
            .oino(&["logs", "napper"])
            .output()
            .expect("oino logs");
        stdout(&logs).contains("nap")
    });
    let killed = server
        .oino(&["kill", "napper", "--json"])
        .output()
        .expect("oino kill");
    assert!(stdout(&killed).contains("killed"), "{killed:?}");
    let missing = server
        .oino(&["restart", "nobody"])
        .output()
        .expect("oino restart");
    assert_eq!(missing.status.code(), Some(2), "{missing:?}");
}

/// Settings are read only from a regular file of at most 1 MiB: `/dev/zero` (endless) and a
/// FIFO (which would wait forever) are refused at once, in words, with status 2.
#[test]
fn settings_that_are_no_regular_file_are_refused_at_once() {
    let server = ServerGuard::new("settings-kinds");
    let fifo = crate::support::temp_dir("settings-fifo").join("config.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let big = crate::support::temp_dir("settings-big").join("config.toml");
    std::fs::write(&big, "# a comment\n".repeat(100_000)).expect("a big file");
    for (settings, says) in [
        (
            std::path::PathBuf::from("/dev/zero"),
            "not a regular file (a device)",
        ),
        (fifo, "not a regular file (a named pipe)"),
        (big, "more than the 1048576"),
    ] {
        let output = crate::support::output_within(
            "oino ls with odd settings",
            server.oino(&["ls"]).env("OINO_CONFIG", &settings),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{}: {stderr}",
            settings.display()
        );
        assert!(stderr.contains(says), "{}: {stderr}", settings.display());
    }
}

/// A project file with a byte that is not UTF-8 names its line and column.
#[test]
fn a_project_file_that_is_not_utf8_names_the_bad_byte() {
    let dir = crate::support::temp_dir("project-latin1");
    let file = dir.join("oino.toml");
    std::fs::write(&file, b"[processes.web]\ncmd = \"echo caf\xe9\"\n").expect("oino.toml");
    let server = ServerGuard::new("project-latin1");
    let output = server
        .oino(&["start", "--config", file.to_str().expect("utf-8"), "web"])
        .output()
        .expect("oino start");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:2:16: the byte 0xe9 is not UTF-8",
            file.display()
        )),
        "{stderr}"
    );
}

/// Names that would mean something else are refused: folders (`.`, `..`) and digits other
/// than 0-9, which read like an id's (`t٣` is t3 to a person).
#[test]
fn names_that_read_as_folders_or_ids_are_refused() {
    let server = ServerGuard::new("odd-names");
    for name in [".", "..", "t٣"] {
        let output = server
            .oino(&[
                "run",
                "--name",
                name,
                "--detach-after",
                "0.01",
                "--",
                "true",
            ])
            .output()
            .expect("oino run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains("invalid task name"), "{name}: {stderr}");
    }
}

/// Out of descriptors, oino says what ran out and what to do: never Rust's debug form of the
/// error (`Os { code: 24, … }`).
#[test]
fn running_out_of_descriptors_is_said_in_words() {
    let output = std::process::Command::new("bash")
        .args(["-c", "ulimit -n 12; exec \"$0\" run --embedded -- true"])
        .arg(env!("CARGO_BIN_EXE_oino"))
        .env(
            "XDG_STATE_HOME",
            crate::support::temp_dir("few-descriptors"),
        )
        .output()
        .expect("bash");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        !stderr.contains("Os {") && !stderr.contains("kind:"),
        "{stderr}"
    );
    assert!(stderr.contains("ulimit -n"), "{stderr}");
}

/// A command holding a title change and a clipboard write is shown, never carried out: `oino
/// ls`, and the interface, print its control characters escaped.
#[test]
fn a_commands_escape_sequences_are_shown_not_carried_out() {
    let server = ServerGuard::new("inert-ls");
    let command = "sleep 600 # \u{1b}]0;PWNED\u{7} \u{1b}]52;c;aGk=\u{7} \u{9b}31m";
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "sneaky",
            "--",
            command,
        ])
        .output()
        .expect("oino run");
    assert!(started.status.success());
    let listed = server.oino(&["ls"]).output().expect("oino ls");
    let table = stdout(&listed);
    assert!(!table.contains(['\u{1b}', '\u{7}', '\u{9b}']), "{table:?}");
    assert!(
        table.contains("sleep 600 # \\e]0;PWNED\\x07 \\e]52;c;aGk=\\x07 \\x9b31m"),
        "{table}"
    );
    let kill = server
        .oino(&["kill", "sneaky"])
        .output()
        .expect("oino kill");
    assert!(kill.status.success());
    // An error naming it is inert too.
    let bad = "no\u{1b}]0;X\u{7}such";
    let missing = server.oino(&["kill", bad]).output().expect("oino kill");
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(
        !said.contains('\u{1b}') && said.contains("no\\e]0;X\\x07such"),
        "{said:?}"
    );
}

#[test]
fn kill_and_restart_take_several_ids_and_go_on_past_a_wrong_one() {
    let server = ServerGuard::new("cli-several");
    for name in ["one", "two", "three"] {
        let task = server
            .oino(&[
                "run",
                "--detach-after",
                "0.2",
                "--name",
                name,
                "--",
                "echo up; sleep 600",
            ])
            .output()
            .expect("a task");
        assert!(task.status.success(), "{task:?}");
    }
    let state_of = |name: &str| {
        let listed = server.oino(&["ls", "--json"]).output().expect("ls");
        serde_json::from_slice::<Vec<serde_json::Value>>(&listed.stdout)
            .expect("json")
            .into_iter()
            .filter(|entry| entry["name"] == name)
            .map(|entry| entry["state"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    // Each id restarted, in order: a new id for each.
    let restarted = server
        .oino(&["restart", "one", "two"])
        .output()
        .expect("oino restart");
    assert!(restarted.status.success(), "{restarted:?}");
    assert_eq!(
        String::from_utf8_lossy(&restarted.stdout).lines().count(),
        2
    );
    // A wrong id among them is said, the others are killed, and the status says it failed.
    let killed = server
        .oino(&["kill", "one", "nothing", "two", "three"])
        .output()
        .expect("oino kill");
    assert_eq!(killed.status.code(), Some(2), "{killed:?}");
    let stderr = String::from_utf8_lossy(&killed.stderr);
    assert!(
        stderr.contains("no call or task `nothing`: list them with `oino ls`"),
        "{stderr}"
    );
    for name in ["one", "two", "three"] {
        let states = state_of(name);
        assert!(
            !states.is_empty() && states.iter().all(|state| state == "killed"),
            "{name}: {states:?}"
        );
    }
    // Restarted, `one` and `two` each have two runs.
    assert_eq!((state_of("one").len(), state_of("three").len()), (2, 1));
}

/// Names in fullwidth or other compatibility letters read as the plain name they fold to
/// (NFKC): one that folds to an id's form is refused, and one that folds to a taken name is
/// taken; a name in another script is a name like any.
#[test]
fn names_that_fold_to_an_id_or_to_another_name_are_refused() {
    let server = ServerGuard::new("folded-names");
    let run_named = |name: &str| {
        server
            .oino(&[
                "run",
                "--name",
                name,
                "--detach-after",
                "0.01",
                "--",
                "sleep 30",
            ])
            .output()
            .expect("oino run")
    };
    for name in ["ｔ3", "𝐭3", "ⓒ12"] {
        let output = run_named(name);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains("once its letters are folded"),
            "{name}: {stderr}"
        );
    }
    let web = run_named("web");
    assert!(
        web.status.success(),
        "{}",
        String::from_utf8_lossy(&web.stderr)
    );
    let output = run_named("ｗｅｂ");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is taken"), "{stderr}");
    let other = run_named("ウェブ");
    assert!(
        other.status.success(),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
    let _ = server.oino(&["kill-server"]).output();
}

/// `oino ls` keeps its columns whatever the names: a wide name takes two columns a character,
/// a long one is cut with `…`.
#[test]
fn ls_keeps_its_columns_with_wide_and_long_names() {
    let server = ServerGuard::new("ls-columns");
    for name in [
        "日本語のなまえ",
        "a-very-long-task-name-that-goes-on-and-on",
        "web",
    ] {
        server.task(name, "sleep 30");
    }
    let listed = server.oino(&["ls"]).output().expect("oino ls");
    let text = String::from_utf8_lossy(&listed.stdout);
    let at_state: Vec<usize> = text
        .lines()
        .take(4)
        .map(|line| {
            let column = line.find(if line.starts_with("ID") {
                "STATE"
            } else {
                "running"
            });
            let column = column.unwrap_or_else(|| panic!("{text}"));
            unicode_width::UnicodeWidthStr::width(&line[..column])
        })
        .collect();
    assert!(
        at_state.windows(2).all(|pair| pair[0] == pair[1]),
        "STATE at columns {at_state:?}:\n{text}"
    );
    assert!(text.contains("a-very-long-task-name-t…"), "{text}");
    let _ = server.oino(&["kill-server"]).output();
}
