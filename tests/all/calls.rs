//! Calls from spawn to result: text, caps, timeouts, exits, cwd, many at once.

use std::time::Duration;

use oino::call::CallOptions;
use oino::core::{CallRequest, CoreError};
use oino::output::clean_text;
use oino::pty::{ProcessExit, PtyError};
use pretty_assertions::assert_eq;

use crate::support::{DEADLINE, processes_of, request, temp_dir, test_core, unique_id, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colors_progress_bars_and_invalid_utf8_give_clean_text() {
    let core = test_core("clean");
    let id = unique_id("clean");
    let command = r"printf '\033[1;32mgreen\033[0m and \033[38;5;208morange\033[0m\n';
        for p in 0 25 50 75 100; do printf '\rbuild [%3d%%]' $p; done; printf '\n';
        printf 'bad \377 byte, good \342\234\223\n';
        printf 'erase me\r\033[Kkept\n'; printf '\033]0;a title\007no title\n'";
    let result = core
        .start(request(&id, command))
        .expect("start")
        .result()
        .await;
    assert_eq!(
        result.text,
        "green and orange\nbuild [100%]\nbad \u{fffd} byte, good ✓\nkept\nno title\n"
    );
    assert!(!result.is_error);
    assert_eq!(result.exit, Some(ProcessExit::Code(0)));
    assert_eq!(result.full_output_path, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_over_the_cap_keeps_head_and_tail_and_the_log_keeps_everything() {
    let core = test_core("cap");
    let id = unique_id("cap");
    let result = core
        .start(request(
            &id,
            "for i in $(seq 1 5000); do echo \"line $i\"; done",
        ))
        .expect("start")
        .result()
        .await;
    let expected: String = (1..=5000).map(|n| format!("line {n}\n")).collect();
    let log_path = result
        .full_output_path
        .clone()
        .expect("cut text names its log");
    assert!(result.text.starts_with("line 1\nline 2\n"));
    assert!(result.text.ends_with("line 4999\nline 5000\n"));
    let notice = result
        .text
        .lines()
        .find(|line| line.starts_with("[... "))
        .expect("notice line");
    assert!(
        notice.contains("omitted; full output: ")
            && notice.contains(&log_path.display().to_string()),
        "{notice}"
    );
    let kept = result
        .text
        .lines()
        .filter(|line| line.starts_with("line "))
        .count();
    assert!(
        notice.contains(&format!("({} lines)", 5000 - kept)),
        "{notice}"
    );
    assert!(result.text.len() <= 30_000 + notice.len() + 1);
    let logged = std::fs::read(&log_path).expect("log");
    assert_eq!(clean_text(&logged, /*width*/ 80), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_kills_the_whole_tree() {
    let core = test_core("timeout");
    let id = unique_id("timeout");
    let handle = core
        .start(CallRequest {
            options: CallOptions {
                timeout: Some(Duration::from_secs(1)),
                ..CallOptions::default()
            },
            ..request(&id, "echo started; sleep 600 & sleep 600")
        })
        .expect("start");
    wait_until("both sleeps to start", || processes_of(&id).len() >= 2).await;
    let result = handle.result().await;
    assert!(result.timed_out);
    assert!(result.is_error);
    assert!(result.text.starts_with("started\n"));
    assert!(
        result.text.contains("timed out after 1 s"),
        "{}",
        result.text
    );
    assert_eq!(
        processes_of(&id),
        Vec::<i32>::new(),
        "processes left behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_holding_the_pty_does_not_hang_the_call() {
    let core = test_core("grandchild");
    let id = unique_id("grandchild");
    let result = tokio::time::timeout(
        DEADLINE,
        core.start(request(&id, "(sleep 600 &); echo done"))
            .expect("start")
            .result(),
    )
    .await
    .expect("the call ended");
    assert_eq!(result.text, "done\n");
    assert_eq!(result.exit, Some(ProcessExit::Code(0)));
    // What the shell left behind ends with the call.
    wait_until("the grandchild to be ended", || {
        processes_of(&id).is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_and_signals_are_reported() {
    let core = test_core("exits");
    let failed = core
        .start(request(&unique_id("exit"), "echo oops; exit 3"))
        .expect("start")
        .result()
        .await;
    assert!(failed.is_error);
    assert_eq!(failed.exit, Some(ProcessExit::Code(3)));
    assert_eq!(failed.text, "oops\n[exit code 3]");
    assert_eq!(failed.exit_status(), 3);

    let signalled = core
        .start(request(&unique_id("signal"), "kill -9 $$"))
        .expect("start")
        .result()
        .await;
    assert!(signalled.is_error);
    assert_eq!(signalled.exit, Some(ProcessExit::Signal(9)));
    assert_eq!(signalled.exit_status(), 137);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_cwd_is_refused_before_anything_starts() {
    let core = test_core("cwd");
    let missing = temp_dir("cwd").join("not-there");
    let id = unique_id("cwd");
    let refused = core.start(CallRequest {
        cwd: Some(missing.clone()),
        ..request(&id, "touch created-anyway")
    });
    match refused {
        Err(CoreError::Pty(PtyError::MissingCwd(path))) => assert_eq!(path, missing),
        other => panic!("expected a missing-cwd error, got {other:?}"),
    }
    let message = CoreError::Pty(PtyError::MissingCwd(missing.clone())).to_string();
    assert!(
        message.contains(&missing.display().to_string()),
        "{message}"
    );
    assert!(core.entries().is_empty());
    assert!(!core.registry().is_running(&id));
    assert!(processes_of(&id).is_empty());

    let cwd = temp_dir("cwd-ok");
    let result = core
        .start(CallRequest {
            cwd: Some(cwd.clone()),
            ..request(&unique_id("cwd"), "pwd")
        })
        .expect("start")
        .result()
        .await;
    assert_eq!(result.text, format!("{}\n", cwd.display()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_names_the_call() {
    let core = test_core("env");
    let id = unique_id("env");
    let result = core
        .start(CallRequest {
            env: vec![("GREETING".into(), "hello".into())],
            ..request(&id, "echo $OINO_CALL_ID $TERM $PAGER $GIT_PAGER $GREETING")
        })
        .expect("start")
        .result()
        .await;
    assert_eq!(result.text, format!("{id} xterm-256color cat cat hello\n"));
}

/// The shell leads a session of its own on its terminal (its controlling terminal: Ctrl-C and
/// resizes reach it), has only that terminal open, and what it starts has every signal at its
/// default and none blocked (a spawn once left two ignored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_leads_its_session_on_its_terminal_with_nothing_else_inherited() {
    let core = test_core("session");
    let id = unique_id("session");
    let script = "read -r _ _ _ _ _ sid tty _ < /proc/$$/stat; echo \"$$ $sid $tty\"; \
                  stat -L -c '%t %T' /proc/$$/fd/0; ls /proc/$$/fd | tr '\\n' ' '; echo; \
                  grep -E '^Sig(Ign|Blk)' /proc/self/status";
    let result = core
        .start(request(&id, script))
        .expect("start")
        .result()
        .await;
    let lines: Vec<&str> = result.text.lines().collect();
    let numbers: Vec<u64> = lines[0]
        .split(' ')
        .map(|number| number.parse().expect("a number"))
        .collect();
    assert_eq!(
        numbers[0], numbers[1],
        "the shell leads its session: {lines:?}"
    );
    let device: Vec<u64> = lines[1]
        .split(' ')
        .map(|hex| u64::from_str_radix(hex, 16).expect("hex"))
        .collect();
    assert_eq!(
        numbers[2],
        device[0] * 256 + device[1],
        "its controlling terminal is the one it has open: {lines:?}"
    );
    assert_eq!(lines[2].trim(), "0 1 2", "nothing else open: {lines:?}");
    assert_eq!(
        &lines[3..],
        ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"],
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_calls_at_once_each_get_their_own_output() {
    let core = test_core("hundred");
    let handles: Vec<_> = (0..100)
        .map(|n| {
            core.start(request(
                &unique_id("many"),
                &format!("for i in $(seq 1 300); do echo \"call {n} line $i\"; done"),
            ))
            .expect("start")
        })
        .collect();
    for (n, handle) in handles.into_iter().enumerate() {
        let result = tokio::time::timeout(DEADLINE, handle.result())
            .await
            .expect("call ended");
        let expected: String = (1..=300).map(|i| format!("call {n} line {i}\n")).collect();
        assert_eq!(
            result.text, expected,
            "call {n}: exit {:?}, timed out {}, detached {:?}",
            result.exit, result.timed_out, result.detached
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_that_would_break_a_line_or_a_table_are_refused() {
    let core = test_core("bad-ids");
    for id in ["", "a\nb", "tab\there", "sp ace", "ж", &"x".repeat(65)] {
        let refused = core.start(request(id, "true")).map(|handle| handle.id);
        assert!(
            matches!(&refused, Err(err @ CoreError::InvalidId(_)) if err.code() == oino::core::ErrorCode::BadRequest),
            "{id:?}: {refused:?}"
        );
    }
    let fine = core.start(request("run-1.b_2", "true")).expect("a fine id");
    assert!(!fine.result().await.is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_call_id_is_refused() {
    let core = test_core("dup");
    let id = unique_id("dup");
    let first = core.start(request(&id, "sleep 30")).expect("start");
    assert!(matches!(
        core.start(request(&id, "true")),
        Err(CoreError::DuplicateId(_))
    ));
    core.kill(&id).await.expect("kill");
    assert!(first.result().await.is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_screen_shows_the_live_terminal() {
    let core = test_core("screen");
    let id = unique_id("screen");
    let handle = core
        .start(request(&id, "printf '\\033[31mred\\033[0m\\n'; cat"))
        .expect("start");
    wait_until("red on the screen", || {
        core.snapshot(&id, None, 0)
            .expect("snapshot")
            .text()
            .starts_with("red\n")
    })
    .await;
    let snapshot = core
        .snapshot(&id, Some(oino::pty::TermSize::new(40, 10)), 0)
        .expect("snapshot");
    assert_eq!(snapshot.size, oino::pty::TermSize::new(40, 10));
    assert_eq!(snapshot.rows.len(), 10);
    assert_eq!(snapshot.rows[0][0].fg, oino::screen::CellColor::Indexed(1));
    core.write(&id, b"typed\r".to_vec()).await.expect("write");
    wait_until("the echo of typed input", || {
        core.snapshot(&id, None, 0)
            .expect("snapshot")
            .text()
            .contains("typed\ntyped")
    })
    .await;
    core.write(&id, b"\x04".to_vec()).await.expect("eof");
    let result = handle.result().await;
    assert_eq!(result.text, "red\ntyped\ntyped\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_newest_finished_entries_are_kept() {
    let core = oino::core::Core::new(oino::core::CoreConfig {
        log_dir: Some(temp_dir("finished")),
        max_finished: 3,
        ..oino::core::CoreConfig::default()
    })
    .expect("core");
    let running = core
        .start(request(&unique_id("keeps"), "sleep 30"))
        .expect("start");
    let mut ids = Vec::new();
    for n in 0..6 {
        let id = unique_id("short");
        core.start(request(&id, &format!("echo {n}")))
            .expect("start")
            .result()
            .await;
        ids.push(id);
    }
    let listed: Vec<String> = core.entries().into_iter().map(|entry| entry.id).collect();
    assert_eq!(
        listed,
        [vec![running.id.clone()], ids[3..].to_vec()].concat()
    );
    core.kill(&running.id).await.expect("kill");
}

/// The names of this process's threads.
fn threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .flatten()
                .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
                .map(|name| name.trim_end().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_finished_call_lets_its_terminal_go() {
    let core = test_core("terminal-goes");
    let id = unique_id("terminal-goes");
    let handle = core
        .start(request(&id, "read line; echo \"got $line\""))
        .expect("start");
    let writer = format!("oino-in-{}", core.entry(&id).expect("entry").pid);
    wait_until("the terminal's writer thread", || {
        threads().contains(&writer)
    })
    .await;
    core.write(&id, b"x\r".to_vec()).await.expect("write");
    let result = tokio::time::timeout(DEADLINE, handle.result())
        .await
        .expect("the call to end");
    assert_eq!(result.text, "x\r\ngot x\n".replace("\r\n", "\n"));
    // Kept in the list, the finished call holds neither the terminal nor its writer.
    wait_until("the writer thread to end", || !threads().contains(&writer)).await;
    assert!(core.write(&id, b"y".to_vec()).await.is_err());
    core.resize(&id, oino::pty::TermSize::new(100, 30))
        .expect("resizing a finished call changes its screen only");
}

#[tokio::test]
async fn a_kill_reaches_processes_that_left_the_group() {
    let core = test_core("escapees");
    let id = unique_id("escapees");
    // `setsid` puts the sleep in a session and group of its own: only the tree's key finds it.
    let handle = core
        .start(request(&id, "setsid sleep 600 & echo started; sleep 600"))
        .expect("start");
    wait_until("both sleeps", || processes_of(&id).len() >= 2).await;
    let state = core.kill(&id).await.expect("kill");
    assert!(!state.is_running());
    let result = tokio::time::timeout(DEADLINE, handle.result())
        .await
        .expect("the call to end");
    assert!(result.is_error);
    wait_until("nothing of the tree left", || processes_of(&id).is_empty()).await;
}

/// A log folder removed while the core runs (a cleaner of /tmp) is made again, private, for the
/// next call, which logs as ever.
#[tokio::test]
async fn a_log_folder_removed_meanwhile_is_made_again() {
    use std::os::unix::fs::PermissionsExt;
    let core = test_core("log-folder-removed");
    let dir = core.log_dir().to_owned();
    std::fs::remove_dir_all(&dir).expect("remove the log folder");
    let id = unique_id("after-removal");
    let result = core
        .start(request(&id, "echo logged"))
        .expect("start")
        .result()
        .await;
    assert_eq!(result.text, "logged\n");
    assert_eq!(result.log_error, None);
    let entry = core.entry(&id).expect("entry");
    assert!(entry.log_path.starts_with(&dir) && entry.log_path.exists());
    assert_eq!(
        std::fs::metadata(&dir)
            .expect("made again")
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
}
