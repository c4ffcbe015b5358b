//! Never harm, never lose: the real binary tried as a hostile user would (pid reuse, crafted
//! output, split reads, a full disk, few file descriptors, a deleted socket).

use std::process::{Command, Output};

use crate::support::{FullDisk, ServerGuard, peak_memory_kib, server_pid, temp_dir};

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
        # The shell is reaped once what it left has been looked for; only then is its pid free.
        for wait in $(seq 1000); do [ -e /proc/$pid ] || break; sleep 0.01; done
        [ -e /proc/$pid ] && { echo "pid $pid was never reaped"; exit 1; }
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
    a_persons_call_shows(
        &server,
        &callers_env,
        "echo \"$TERM:$PAGER\"",
        "xterm-256color:less",
    );
}

/// A caller's editor never reaches a program's call either: `true` leaves a message empty, so
/// that `git commit` without `-m` stops at once instead of waiting in vi for keys nobody
/// presses. A person's call in the interface keeps their editor.
#[test]
fn a_programs_call_gets_true_as_its_editor_and_a_persons_keeps_its_editor() {
    let server = ServerGuard::new("editors");
    let callers_env = [("GIT_EDITOR", "vim"), ("EDITOR", "vim"), ("VISUAL", "vim")];
    let repo = temp_dir("editors-repo");
    let commit = format!(
        "echo \"$GIT_EDITOR $EDITOR $VISUAL\"; cd {} && git init -q && echo a > a && git add a && \
         git -c user.name=oino -c user.email=oino@example.com commit",
        repo.display()
    );
    let output = server
        // An editor that opened would wait for keys: killed then, not waited for.
        .oino(&["run", "--on-input", "kill", "--", &commit])
        .envs(callers_env)
        .output()
        .expect("oino run");
    let printed = text(&output);
    assert!(printed.starts_with("true true true\n"), "{printed:?}");
    assert!(
        printed.contains("Aborting commit due to empty commit message"),
        "{printed:?} {}",
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(1), "{printed:?}");
    a_persons_call_shows(
        &server,
        &callers_env,
        "echo \"$GIT_EDITOR:$EDITOR:$VISUAL\"",
        "vim:vim:vim",
    );
}

/// A person types `command` into a new call of the interface, started with `callers_env`, and
/// sees `shown` (the script fails when it does not show).
fn a_persons_call_shows(
    server: &ServerGuard,
    callers_env: &[(&str, &str)],
    command: &str,
    shown: &str,
) {
    let mut person = server
        .oino(&["headless", "--size", "100x12"])
        .envs(callers_env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("oino headless");
    let script = format!("key n\ntype {command}\nkey enter\nwait-for {shown}\n");
    std::io::Write::write_all(&mut person.stdin.take().expect("stdin"), script.as_bytes())
        .expect("script");
    let ended = person.wait_with_output().expect("oino headless");
    assert!(ended.status.success(), "{}", stderr(&ended));
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
            && stderr(&followed).contains("no space left"),
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
    assert!(printed.contains("no space left on device"), "{printed:?}");
}

/// Runaway output fills no disk: past the log's cap (`log_cap`) the log keeps its head and its
/// newest part, and the result, `oino ls`, `oino logs` and the list say what was left out.
#[test]
fn runaway_output_is_capped_keeping_its_head_and_newest_part() {
    let server = ServerGuard::new("log-cap");
    let config = server.state.join("config.toml");
    std::fs::create_dir_all(&server.state).expect("state folder");
    std::fs::write(&config, "log_cap = \"1M\"\n").expect("settings");
    let oino = |args: &[&str]| {
        let mut command = server.oino(args);
        command.env("OINO_CONFIG", &config);
        command.output().expect("oino runs")
    };
    // 200,000 numbered lines of 100 bytes: 20 MB, twenty times the cap.
    let script = "echo FIRST; seq -f '%099g' 1 200000; echo LAST";
    let ran = oino(&["run", "--", script]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let printed = text(&ran);
    assert!(printed.starts_with("FIRST\n"), "{}", &printed[..200]);
    let end = &printed[printed.len() - 300..];
    let note = end.split("LAST\n").nth(1).unwrap_or_default();
    assert!(
        note.starts_with("[log capped at 1.0 MiB: ") && note.contains("left out between the first"),
        "{end}"
    );
    assert!(
        stderr(&ran).contains("log capped at 1.0 MiB"),
        "{}",
        stderr(&ran)
    );

    let logs_dir = server.state.join("oino/logs");
    let on_disk: u64 = std::fs::read_dir(&logs_dir)
        .expect("the log folder")
        .flatten()
        .map(|entry| entry.metadata().expect("a log's size").len())
        .sum();
    assert!(on_disk < (1 << 20) + 3 * 65536, "{on_disk} bytes of logs");

    let id = server.id_of(script);
    let listed = text(&oino(&["ls"]));
    assert!(
        listed.contains(&format!("~ {id}: log capped at 1.0 MiB")),
        "{listed}"
    );
    // The log reads as its head, one line saying what was left out, and its newest part.
    let logs = oino(&["logs", &id]);
    let read = text(&logs);
    let lines: Vec<&str> = read.lines().collect();
    let gap = lines
        .iter()
        .position(|line| line.contains("bytes of output left out: the log reached its cap"))
        .unwrap_or_else(|| panic!("no gap line in {} lines", lines.len()));
    assert_eq!(lines[0], "FIRST");
    assert_eq!(lines.last(), Some(&"LAST"));
    // The line the cut went through is a part on either side of it: the whole lines around
    // it are consecutive.
    let number = |line: &str| line.parse::<u64>().unwrap_or_else(|_| panic!("{line:?}"));
    let head: Vec<u64> = lines[1..gap - 1].iter().map(|line| number(line)).collect();
    let tail: Vec<u64> = lines[gap + 2..lines.len() - 1]
        .iter()
        .map(|line| number(line))
        .collect();
    assert!(head.windows(2).all(|pair| pair[1] == pair[0] + 1) && head[0] == 1);
    assert!(tail.windows(2).all(|pair| pair[1] == pair[0] + 1) && tail.last() == Some(&200_000));
    assert!(
        head.len() > 2000 && tail.len() > 3000,
        "{} + {}",
        head.len(),
        tail.len()
    );
    assert!(stderr(&logs).contains("log capped"), "{}", stderr(&logs));
}

/// 13.5 KB of cursor jumps once grew the server by 700 MB and the text to 98 MB: a terminal stops
/// the cursor at its last column, and so does oino.
#[test]
fn crafted_cursor_motion_keeps_text_and_memory_small() {
    let server = ServerGuard::new("cursor-bomb");
    let warmed = server
        .oino(&["run", "--", "true"])
        .output()
        .expect("oino run");
    assert!(warmed.status.success(), "{}", stderr(&warmed));
    let pid = server_pid(&server.socket).expect("the server's pid");
    let before = peak_memory_kib(pid);
    let bomb = r"for i in $(seq 1 1500); do printf '\e[65535Cx'; done; echo";
    let row = format!("{}x\n", " ".repeat(79));
    for _ in 0..5 {
        let ran = server
            .oino(&["run", "--", bomb])
            .output()
            .expect("oino run");
        assert_eq!(text(&ran), row, "{}", stderr(&ran));
    }
    let logs = server
        .oino(&["logs", &server.id_of(bomb)])
        .output()
        .expect("oino logs");
    assert_eq!(text(&logs), row);
    let grown_mib = peak_memory_kib(pid).saturating_sub(before) / 1024;
    assert!(grown_mib < 32, "the server grew by {grown_mib} MiB");
}

/// A string control left open ends where a terminal ends it: at the next escape sequence (here
/// the color of `PASS`), so what follows shows in the text, the log and the pane.
#[test]
fn an_unterminated_string_control_hides_nothing_a_terminal_shows() {
    let server = ServerGuard::new("open-strings");
    for introducer in [r"\e]0;t", r"\ePq", r"\e_x"] {
        let command =
            format!(r"printf '{introducer}\n'; printf '\e[32mPASS\e[0m test_a\n'; echo done");
        let ran = server
            .oino(&["run", "--", &command])
            .output()
            .expect("oino run");
        assert_eq!(
            text(&ran),
            "PASS test_a\ndone\n",
            "{introducer}: {}",
            stderr(&ran)
        );
        let logs = server
            .oino(&["logs", &server.id_of(&command)])
            .output()
            .expect("oino logs");
        assert_eq!(text(&logs), "PASS test_a\ndone\n", "{introducer}");
    }
    // The pane, and the log view scrolled back to the top.
    let script = r"run --id open printf '\e]0;t\n'; printf '\e[32mPASS\e[0m test_a\n'; seq 1 60; echo done
wait-exit open
wait-for │done
snapshot
key pgup
key pgup
key pgup
key pgup
key pgup
key pgup
key pgup
key pgup
wait-for 53 lines back
snapshot
";
    let mut headless = server
        .oino(&["headless", "--size", "150x12"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("oino headless");
    std::io::Write::write_all(
        &mut headless.stdin.take().expect("stdin"),
        script.as_bytes(),
    )
    .expect("script");
    let shown = headless.wait_with_output().expect("oino headless");
    assert!(
        shown.status.success(),
        "{:?}: {}{}",
        shown.status,
        stderr(&shown),
        text(&shown)
    );
    let screens = text(&shown);
    let history = screens
        .rsplit("=== snapshot ===")
        .next()
        .expect("a snapshot");
    // The pane's rows, under its header: the top of the log is the line after the title.
    let pane: Vec<&str> = history
        .lines()
        .filter_map(|line| line.split_once('│').map(|(_, pane)| pane))
        .skip(1)
        .collect();
    assert_eq!(pane[..3], ["PASS test_a", "1", "2"], "{history}");
}

/// Lines of color and many-byte characters, as a test's file.
fn colorful_lines(count: usize) -> (std::path::PathBuf, String) {
    let raw: String = (0..count)
        .map(|n| format!("\x1b[31m{n} ж€😀\x1b[0m\n"))
        .collect();
    let clean: String = (0..count).map(|n| format!("{n} ж€😀\n")).collect();
    let file = temp_dir("colorful").join("color.txt");
    std::fs::write(&file, raw).expect("write the file");
    (file, clean)
}

/// Reads while a task writes, and at the seam of a detach, never split a character or a
/// sequence: what every reader gets is exactly the clean text.
#[test]
fn live_reads_never_split_characters_or_sequences() {
    let server = ServerGuard::new("live-reads");
    let (file, clean) = colorful_lines(100_000);
    let slow_cat = format!("sleep 0.5; cat {}", file.display());

    // A follower of a task that is writing.
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "follow-me",
            "--",
            &slow_cat,
        ])
        .output()
        .expect("oino run");
    assert!(started.status.success(), "{}", stderr(&started));
    let followed = server
        .oino(&["logs", "-f", "follow-me"])
        .output()
        .expect("oino logs -f");
    assert_eq!(text(&followed), clean, "oino logs -f");

    // `run --follow` the same way.
    let run_followed = server
        .oino(&["run", "--detach-after", "0.01", "--follow", "--", &slow_cat])
        .output()
        .expect("oino run --follow");
    let (_, after) = text(&run_followed)
        .split_once("still running after 0.01 s]\n")
        .map(|(before, after)| (before.to_owned(), after.to_owned()))
        .expect("the marker");
    assert_eq!(after, clean, "oino run --follow");

    // Detached at moments within the flood: the text before the marker and the task's own
    // output add up to all of it.
    let cat = format!("cat {}", file.display());
    for (attempt, delay) in ["0.02", "0.03", "0.05", "0.08", "0.13", "0.21"]
        .iter()
        .enumerate()
    {
        let name = format!("seam-{attempt}");
        let ran = server
            .oino(&[
                "run",
                "--max-bytes",
                "100000000",
                "--detach-after",
                delay,
                "--name",
                &name,
                "--",
                &cat,
            ])
            .output()
            .expect("oino run");
        let printed = text(&ran);
        let Some((before, _)) = printed.split_once("\n\n[Detached to background task ") else {
            // The command ended before the detach: it is all there.
            assert_eq!(printed, clean);
            continue;
        };
        let rest = server
            .oino(&["logs", "-f", &name])
            .output()
            .expect("oino logs");
        assert!(
            !before.contains('\u{fffd}') && !before.contains("[31m"),
            "{delay}"
        );
        assert_eq!(
            format!("{before}{}", text(&rest)),
            clean,
            "detached after {delay} s"
        );
    }
}

/// A shell command run with `$OINO` and the test server's socket and state.
fn shell(server: &ServerGuard, script: &str) -> Command {
    let mut command = Command::new("bash");
    command
        .args(["-c", script])
        .env("OINO", env!("CARGO_BIN_EXE_oino"))
        .env("OINO_SOCKET", &server.socket)
        .env("XDG_STATE_HOME", &server.state);
    command
}

/// A harness that waits for the end of a pipe (bats' fd 3, make's jobserver) must not wait for
/// the server that `oino run` starts: it keeps none of its starter's descriptors.
#[test]
fn a_server_started_by_a_client_keeps_none_of_its_descriptors() {
    let server = ServerGuard::new("inherited-fd");
    let piped = shell(
        &server,
        r#"("$OINO" run -- echo hi 3>&1) | timeout 20 cat; echo "cat: ${PIPESTATUS[1]}""#,
    )
    .output()
    .expect("bash");
    assert_eq!(text(&piped), "hi\ncat: 0\n", "{}", stderr(&piped));
}

/// Removing the socket (or its whole folder) does not strand the server: it listens there again,
/// with its processes; and `kill-server` with no server says so and fails.
#[test]
fn a_deleted_socket_is_made_again_and_kill_server_fails_when_none_answers() {
    let server = ServerGuard::new("deleted-socket");
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "keeper",
            "--",
            "sleep 600",
        ])
        .output()
        .expect("oino run");
    assert!(started.status.success(), "{}", stderr(&started));
    let pid = server_pid(&server.socket).expect("the server");
    for remove in [
        |socket: &std::path::Path| std::fs::remove_file(socket),
        |socket: &std::path::Path| std::fs::remove_dir_all(socket.parent().expect("folder")),
    ] {
        // The server may make its socket again before the whole folder is gone: a removal
        // all the same.
        let _ = remove(&server.socket);
        let ran = server
            .oino(&["run", "--", "echo back"])
            .output()
            .expect("oino run");
        assert_eq!(text(&ran), "back\n", "{}", stderr(&ran));
        assert_eq!(server_pid(&server.socket), Some(pid), "the same server");
        let listed = server.oino(&["ls"]).output().expect("oino ls");
        assert!(text(&listed).contains("keeper"), "{}", text(&listed));
    }
    let log_name = oino::remote::socket::server_log(&server.socket);
    let log_name = log_name.file_name().expect("a log file name");
    let log = std::fs::read_to_string(server.state.join("oino").join(log_name)).expect("log");
    assert!(log.contains("was removed: listening there again"), "{log}");
    assert!(!log.contains("already serves"), "{log}");

    let stopped = server.oino(&["kill-server"]).output().expect("kill-server");
    assert!(stopped.status.success(), "{}", stderr(&stopped));
    let none = server.oino(&["kill-server"]).output().expect("kill-server");
    assert_eq!(none.status.code(), Some(1));
    assert!(
        stderr(&none).contains("no oino server is running on"),
        "{}",
        stderr(&none)
    );
}

/// Out of file descriptors, a server refuses new clients in words, says so in its log once (not
/// a line per attempt, in a busy loop), and serves them again once some close.
#[test]
fn out_of_descriptors_a_server_refuses_clearly_logs_once_and_recovers() {
    let server = ServerGuard::new("few-fds");
    let log_path = server.state.join("few-fds.log");
    std::fs::create_dir_all(&server.state).expect("state");
    let mut serving = shell(
        &server,
        r#"ulimit -n 64 && exec "$OINO" server --foreground --socket "$OINO_SOCKET" --idle-exit 600"#,
    )
    .stderr(std::fs::File::create(&log_path).expect("log"))
    .spawn()
    .expect("oino server");
    crate::support::wait_until_blocking("the server to listen", || {
        server
            .oino(&["ls"])
            .output()
            .is_ok_and(|listed| listed.status.success())
    });
    // Clients that connect and say nothing, until a new one is refused for want of descriptors.
    let mut held = Vec::new();
    crate::support::wait_until_blocking("a client to be refused", || {
        held.extend(
            (0..20).filter_map(|_| std::os::unix::net::UnixStream::connect(&server.socket).ok()),
        );
        let probe = server.oino(&["ls"]).output().expect("oino ls");
        !probe.status.success() && stderr(&probe).contains("run out of file descriptors")
    });
    let refused_again = server.oino(&["ls"]).output().expect("oino ls");
    assert!(!refused_again.status.success());
    let log = std::fs::read_to_string(&log_path).expect("log");
    assert_eq!(log.matches("out of file descriptors").count(), 1, "{log}");
    assert!(log.len() < 4096, "{} bytes of log", log.len());

    drop(held);
    crate::support::wait_until_blocking("clients to be served again", || {
        server
            .oino(&["ls"])
            .output()
            .is_ok_and(|listed| listed.status.success())
    });
    let log = std::fs::read_to_string(&log_path).expect("log");
    assert!(log.contains("available again"), "{log}");
    let _ = serving.kill();
    let _ = serving.wait();
}

/// The settings file of a test server: `text` as its config.toml.
fn settings(server: &ServerGuard, text: &str) -> std::path::PathBuf {
    let config = crate::support::temp_dir("settings").join("config.toml");
    std::fs::write(&config, text).expect("settings");
    let _ = &server.state;
    config
}

/// The entry named `name`, as `oino ls --json` lists it.
fn entry_named(server: &ServerGuard, name: &str) -> serde_json::Value {
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    let entries: Vec<serde_json::Value> =
        serde_json::from_slice(&listed.stdout).expect("a JSON list");
    entries
        .into_iter()
        .find(|entry| entry["name"] == name)
        .unwrap_or_else(|| panic!("no entry named {name}"))
}

/// Sets a file's time of last change `age` ago (`touch -d`).
fn age_file(path: &std::path::Path, age: &str) {
    let touched = Command::new("touch")
        .args(["-d", age])
        .arg(path)
        .status()
        .expect("touch");
    assert!(touched.success(), "touch -d {age} {}", path.display());
}

/// Another server's cleanup of old logs (here: older than a day) leaves alone the log of a call
/// that still runs, however old it is; a log removed by hand while its call runs is told where
/// a failed write is told, and what came after is still read.
#[test]
fn a_running_calls_log_is_never_pruned_and_a_removed_one_is_told() {
    let server = ServerGuard::new("retention-live");
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "quiet",
            "--",
            "echo early; cat",
        ])
        .output()
        .expect("oino run");
    assert!(started.status.success(), "{}", stderr(&started));
    let entry = entry_named(&server, "quiet");
    let log = std::path::PathBuf::from(entry["log_path"].as_str().expect("a log path"));
    crate::support::wait_until_blocking("the task's first line", || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("early"))
    });
    age_file(&log, "3 days ago");
    let decoy = log.with_file_name("decoy-1.log");
    std::fs::write(&decoy, "old\n").expect("an old log");
    age_file(&decoy, "3 days ago");

    // A second server on the same state folder, keeping logs for one day.
    let other_socket = server.socket.with_file_name("other.sock");
    let config = settings(&server, "log_retention_days = 1\n");
    let other = Command::new(env!("CARGO_BIN_EXE_oino"))
        .args(["server", "--socket"])
        .arg(&other_socket)
        .env("XDG_STATE_HOME", &server.state)
        .env("OINO_CONFIG", &config)
        .output()
        .expect("oino server");
    assert!(other.status.success(), "{}", stderr(&other));
    crate::support::wait_until_blocking("the other server's cleanup", || !decoy.exists());
    let _ = Command::new(env!("CARGO_BIN_EXE_oino"))
        .args(["kill-server", "--socket"])
        .arg(&other_socket)
        .output();
    assert!(log.exists(), "the log of a running task was pruned");
    let read = server
        .oino(&["logs", "--since", "0", "quiet"])
        .output()
        .expect("oino logs");
    assert_eq!(text(&read), "early\n", "{}", stderr(&read));

    // Removed by hand: `oino ls` says so, and what the task writes next is still read.
    std::fs::remove_file(&log).expect("rm");
    let listed = text(&server.oino(&["ls"]).output().expect("oino ls"));
    let id = entry["id"].as_str().expect("id");
    assert!(
        listed.contains(&format!(
            "! {id}: its log could not be written: {} was removed",
            log.display()
        )),
        "{listed}"
    );
    let sent = server
        .oino(&["send", "quiet", "after", "--enter"])
        .output()
        .expect("oino send");
    assert!(sent.status.success(), "{}", stderr(&sent));
    let mut read = String::new();
    crate::support::wait_until_blocking("what came after to be read", || {
        let logs = server
            .oino(&["logs", "--since", "0", "quiet"])
            .output()
            .expect("oino logs");
        read = text(&logs);
        read.matches("after").count() == 2
    });
    assert!(
        read.starts_with("[... ") && read.contains("the log file was removed"),
        "{read}"
    );
    let json = entry_named(&server, "quiet");
    assert!(
        json["log_error"]
            .as_str()
            .is_some_and(|error| error.contains("was removed")),
        "{json}"
    );
}

/// The cap is on bytes, whatever they are: 30 MiB inside a title that never ends (`ESC ]0;`
/// and no terminator) keep the log under its cap, and the lines after the string read as ever.
#[test]
fn the_log_cap_holds_inside_a_string_that_never_ends() {
    for opening in ["\\033]0;", "\\033P", "\\033_", "\\033["] {
        let server = ServerGuard::new("endless-string");
        let config = settings(&server, "log_cap = \"1M\"\n");
        let script = format!(
            "echo before; printf '{opening}'; head -c 31457280 /dev/zero | tr '\\0' 7; \
             printf '\\007\\033\\\\\\nafter\\n'"
        );
        let ran = server
            .oino(&["run", "--", &script])
            .env("OINO_CONFIG", &config)
            .output()
            .expect("oino run");
        assert_eq!(ran.status.code(), Some(0), "{opening}: {}", stderr(&ran));
        let logs_dir = server.state.join("oino/logs");
        let on_disk: u64 = std::fs::read_dir(&logs_dir)
            .expect("the log folder")
            .flatten()
            .map(|entry| entry.metadata().expect("a log's size").len())
            .sum();
        assert!(
            on_disk < (1 << 20) + 3 * 65536,
            "{opening}: {on_disk} bytes of logs under a cap of 1 MiB"
        );
        let id = server.id_of(&script);
        let read = text(&server.oino(&["logs", &id]).output().expect("oino logs"));
        assert!(read.starts_with("before\n"), "{opening}: {read:?}");
        assert!(read.ends_with("after\n"), "{opening}: {read:?}");
        assert!(!read.contains("7777"), "{opening}: a string read as text");
    }
}

/// `oino logs -f` on a task whose output outruns the cap, the follower left behind: every gap
/// it crosses is announced with its size, each number after one is whole, and no line is
/// skipped without a notice.
#[test]
fn a_follower_left_behind_by_the_cap_is_told_of_every_gap() {
    let server = ServerGuard::new("follow-capped");
    let config = settings(&server, "log_cap = \"1M\"\n");
    // Two bursts, the second once the test says so: the follower is left behind twice, the
    // second time inside a part of the log that the cap then drops.
    let (first, last) = (2_000_000u64, 4_000_000u64);
    let go = crate::support::temp_dir("follow-capped-go").join("go");
    let command = format!(
        "seq 1 {first}; while [ ! -e {go} ]; do sleep 0.02; done; seq {} {last}",
        first + 1,
        go = go.display()
    );
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "numbers",
            "--",
            &command,
        ])
        .env("OINO_CONFIG", &config)
        .output()
        .expect("oino run");
    assert!(started.status.success(), "{}", stderr(&started));
    let mut follower = server
        .oino(&["logs", "-f", "--since", "0", "numbers"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("oino logs -f");
    // Lines pass through a channel of a few: while the test does not take them, the follower
    // stops at a full pipe and falls behind.
    let out = std::io::BufReader::new(follower.stdout.take().expect("stdout"));
    let (lines_tx, lines_rx) = std::sync::mpsc::sync_channel::<String>(16);
    let reader = std::thread::spawn(move || {
        for line in std::io::BufRead::lines(out) {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let next_line = || {
        lines_rx
            .recv_timeout(crate::support::DEADLINE)
            .expect("the follower's next line, in time")
    };
    // Raw bytes of the first burst: each number and a CRLF (the terminal's newline).
    let first_bytes: u64 = (1..=first).map(|n| n.to_string().len() as u64 + 2).sum();
    crate::support::wait_until_blocking("the first burst", || {
        entry_named(&server, "numbers")["bytes"]
            .as_u64()
            .unwrap_or(0)
            >= first_bytes
    });
    // The follower, stopped in the head, reads on past the first gap into the newest part,
    // and stops there again.
    let mut lines = Vec::new();
    loop {
        let line = next_line();
        let gap = line.starts_with("[... ");
        lines.push(line);
        if gap {
            break;
        }
    }
    for _ in 0..2000 {
        lines.push(next_line());
    }
    std::fs::write(&go, "").expect("go");
    crate::support::wait_until_blocking("the second burst", || {
        entry_named(&server, "numbers")["state"] != "running"
    });
    // The rest, to the follower's end with the task's.
    while let Ok(line) = lines_rx.recv_timeout(crate::support::DEADLINE) {
        lines.push(line);
    }
    reader.join().expect("the reader");
    let status = crate::support::wait_for_exit("the follower", &mut follower);
    assert!(status.success(), "{status:?}");
    let gaps = check_numbers_and_gaps(&lines, last);
    assert!(
        gaps >= 2,
        "{gaps} gaps: the follower never fell behind twice"
    );
}

/// Checks lines of `seq 1 LAST` read through gaps: every number is whole, a jump comes only
/// right after a notice of a gap, the line before a gap may be cut short; returns the gaps.
fn check_numbers_and_gaps(lines: &[String], last: u64) -> usize {
    let mut previous: Option<u64> = None;
    let mut gaps = 0;
    for (at, line) in lines.iter().enumerate() {
        if line.starts_with("[... ") {
            assert!(line.contains("bytes of output left out"), "{line}");
            gaps += 1;
            continue;
        }
        let next_is_gap = lines
            .get(at + 1)
            .is_some_and(|next| next.starts_with("[... "));
        let after_gap = at > 0 && lines[at - 1].starts_with("[... ");
        let number: u64 = line
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line:?}"));
        match previous {
            None => assert_eq!(number, 1),
            Some(previous) if after_gap => {
                assert!(number > previous + 1, "{number} after {previous}");
            }
            // The head's last line may be cut short by the cap.
            Some(previous) if next_is_gap => assert!(
                (previous + 1).to_string().starts_with(line),
                "{line} after {previous}"
            ),
            Some(previous) => assert_eq!(number, previous + 1, "a jump with no notice"),
        }
        previous = Some(number);
    }
    assert_eq!(previous, Some(last));
    gaps
}

/// Kills what carries these call ids when dropped: a test that fails leaves nothing running.
struct KillTagged(Vec<String>);

impl Drop for KillTagged {
    fn drop(&mut self) {
        for id in &self.0 {
            for pid in crate::support::processes_of(id) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

/// `kill -9` of the server: what outlives it (a task that ignores SIGHUP, the `nohup` and
/// `setsid` children of another, a waited call whose command ignores SIGHUP) is listed by the
/// next server as orphaned and ended by `oino kill`; the waiter prints the output its call had
/// and says that its command may still run, and how to see it.
#[test]
fn what_a_killed_server_leaves_running_is_found_listed_and_killed() {
    let server = ServerGuard::new("killed-server");
    for (name, command) in [
        // New children all the time: those started after the next server found it go too.
        (
            "hupper",
            "trap '' HUP; echo task up; while :; do sleep 0.2; done",
        ),
        (
            "parent",
            "nohup sleep 601 >/dev/null 2>&1 & setsid sleep 602 & echo kids up; sleep 603",
        ),
    ] {
        server.task(name, command);
    }
    let mut waiter = server
        .oino(&["run", "--", "trap '' HUP; echo waited up; sleep 604"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oino run");
    let waiter_call = format!("run-{}", waiter.id());
    let ids: Vec<String> = ["hupper", "parent"]
        .iter()
        .map(|name| {
            entry_named(&server, name)["id"]
                .as_str()
                .expect("id")
                .to_owned()
        })
        .chain([waiter_call.clone()])
        .collect();
    let _cleanup = KillTagged(ids.clone());
    crate::support::wait_until_blocking("every call's first line", || {
        let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
        let entries: Vec<serde_json::Value> =
            serde_json::from_slice(&listed.stdout).expect("a JSON list");
        ids.iter().all(|id| {
            entries
                .iter()
                .any(|entry| entry["id"] == id.as_str() && entry["bytes"].as_u64() > Some(8))
        }) && crate::support::processes_of(&ids[1]).len() >= 3
    });
    let pid = crate::support::kill_server_outright(&server.socket);

    // The waiter: what its call printed, and what to do.
    let status = crate::support::wait_for_exit("the waiter", &mut waiter);
    let said = waiter.wait_with_output().expect("the waiter's output");
    assert_eq!(status.code(), Some(1));
    assert!(text(&said).contains("waited up"), "{}", text(&said));
    assert!(
        stderr(&said).contains("may still run")
            && stderr(&said).contains(&format!("`{waiter_call}.left`")),
        "{}",
        stderr(&said)
    );

    // The next server finds them all.
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    let entries: Vec<serde_json::Value> =
        serde_json::from_slice(&listed.stdout).expect("a JSON list");
    for id in &ids {
        let left = format!("{id}.left");
        let entry = entries
            .iter()
            .find(|entry| entry["id"] == left.as_str())
            .unwrap_or_else(|| panic!("{left} is not listed: {entries:?}"));
        assert_eq!(entry["state"], "orphaned", "{entry}");
        assert_eq!(entry["server_pid"], pid, "{entry}");
    }
    let table = text(&server.oino(&["ls"]).output().expect("oino ls"));
    assert!(table.contains("orphaned"), "{table}");
    let read = server
        .oino(&["logs", &format!("{}.left", ids[0])])
        .output()
        .expect("oino logs");
    assert_eq!(read.status.code(), Some(2));
    assert!(stderr(&read).contains("oino kill"), "{}", stderr(&read));

    // `oino kill` ends each, and nothing of theirs is left.
    for id in &ids {
        let killed = server
            .oino(&["kill", &format!("{id}.left")])
            .output()
            .expect("oino kill");
        assert!(killed.status.success(), "{}", stderr(&killed));
        assert_eq!(
            crate::support::processes_of(id),
            Vec::<i32>::new(),
            "{id} left processes"
        );
    }
}

/// A server that says hello and then goes away: every command that needs its answer fails with
/// status 1 and says that the server went away (a broken socket is no closed standard output).
#[test]
fn a_server_that_goes_away_is_a_failure_for_every_command() {
    let dir = crate::support::temp_dir("gone-server").join("sock");
    std::fs::create_dir(&dir).expect("socket folder");
    let socket = dir.join("gone.sock");
    let mut fake = Command::new("perl")
        .args([
            "-MIO::Socket::UNIX",
            "-e",
            r#"my $server = IO::Socket::UNIX->new(Local => $ARGV[0], Listen => 8) or die "$!";
               while (my $conn = $server->accept) {
                   my $hello = <$conn>;
                   syswrite $conn, qq({"ok":true,"result":{"version":3,"server_pid":1}}\n);
                   close $conn;
               }"#,
        ])
        .arg(&socket)
        .spawn()
        .expect("perl");
    crate::support::wait_until_blocking("the fake server", || socket.exists());
    for args in [
        &["ls"][..],
        &["kill", "c1"],
        &["screen", "c1"],
        &["send", "c1", "hi"],
        &["restart", "c1"],
        &["logs", "c1"],
        &["wait", "c1"],
        &["detach", "c1"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_oino"))
            .args(args)
            .env("OINO_SOCKET", &socket)
            .output()
            .expect("oino");
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("went away"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    let _ = fake.kill();
    let _ = fake.wait();
}

/// A follower of a flood whose server is killed says so and fails; it never ends as if all
/// had been read.
#[test]
fn a_follower_whose_server_dies_fails_and_says_so() {
    let server = ServerGuard::new("follower-server-dies");
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "flood",
            "--",
            "yes flooding",
        ])
        .output()
        .expect("oino run");
    assert!(started.status.success(), "{}", stderr(&started));
    let _cleanup = KillTagged(vec![
        entry_named(&server, "flood")["id"]
            .as_str()
            .expect("id")
            .to_owned(),
    ]);
    let mut follower = server
        .oino(&["logs", "-f", "flood"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oino logs -f");
    let mut out = follower.stdout.take().expect("stdout");
    // The follower reads on while the test drains what it prints.
    let mut first = [0; 4096];
    std::io::Read::read_exact(&mut out, &mut first).expect("followed output");
    let drain = std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    crate::support::kill_server_outright(&server.socket);
    let status = crate::support::wait_for_exit("the follower", &mut follower);
    let _ = drain.join();
    let mut said = String::new();
    std::io::Read::read_to_string(&mut follower.stderr.take().expect("stderr"), &mut said)
        .expect("stderr");
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(said.contains("went away"), "{said}");
}

/// A server started by a client inside a call (an agent's `oino ls` in its shell) is not part
/// of that call: killing the call spares it.
#[test]
fn a_server_started_from_inside_a_call_is_not_killed_with_it() {
    let server = ServerGuard::new("server-in-call");
    let inner = crate::support::temp_dir("server-in-call-inner").join("sock/inner.sock");
    let command = format!(
        "{oino} ls --socket {inner} >/dev/null; echo inner up; sleep 600",
        oino = env!("CARGO_BIN_EXE_oino"),
        inner = inner.display()
    );
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "outer",
            "--",
            &command,
        ])
        .output()
        .expect("oino run");
    assert!(started.status.success(), "{}", stderr(&started));
    let _inner_server = ServerGuard {
        socket: inner.clone(),
        state: server.state.clone(),
    };
    crate::support::wait_until_blocking("the inner server", || {
        text(
            &server
                .oino(&["logs", "--since", "0", "outer"])
                .output()
                .expect("logs"),
        )
        .contains("inner up")
    });
    let inner_pid = server_pid(&inner).expect("the inner server");
    let killed = server.oino(&["kill", "outer"]).output().expect("oino kill");
    assert!(killed.status.success(), "{}", stderr(&killed));
    assert!(
        std::path::Path::new(&format!("/proc/{inner_pid}")).exists()
            && server_pid(&inner) == Some(inner_pid),
        "the inner server was killed with the call"
    );
}
