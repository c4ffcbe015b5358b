//! Background tasks: incremental reads, input, waits, kills.

use std::time::Duration;

use oino::core::{CoreEvent, EntryKind, EntryState};
use pretty_assertions::assert_eq;

use crate::support::{DEADLINE, processes_of, request, test_core, unique_id};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_read_incrementally_written_to_waited_for_and_killed() {
    let core = test_core("task");
    let id = unique_id("cat");
    let handle = core.start(request(&id, "echo ready; cat")).expect("start");
    core.wait_output(&id, 0, DEADLINE).await.expect("ready");
    let task = core
        .detach(&id, Some("echoer"), "test")
        .await
        .expect("detach");
    assert_eq!(task.kind, EntryKind::Task);
    assert!(handle.result().await.text.starts_with("ready"));

    core.write("echoer", b"hello\r".to_vec())
        .await
        .expect("write");
    let mut offset = task.detach_offset;
    let mut seen = String::new();
    while !seen.contains("hello\nhello\n") {
        assert!(
            core.wait_output("echoer", offset, DEADLINE)
                .await
                .expect("wait")
        );
        let slice = core.output("echoer", Some(offset), 4096).expect("read");
        seen.push_str(&slice.text);
        offset = slice.next_offset;
    }
    // The terminal echoes the line, then cat writes it back.
    assert!(seen.ends_with("hello\nhello\n"), "{seen:?}");

    core.write("echoer", b"world\r".to_vec())
        .await
        .expect("write");
    let mut later = String::new();
    while !later.contains("world\nworld\n") {
        assert!(
            core.wait_output("echoer", offset, DEADLINE)
                .await
                .expect("wait")
        );
        let slice = core.output("echoer", Some(offset), 4096).expect("read");
        later.push_str(&slice.text);
        offset = slice.next_offset;
    }
    assert!(!later.contains("hello"), "old output read twice: {later:?}");

    // Reading from the default offset starts where the task began.
    let from_start = core.output("echoer", None, 1 << 20).expect("read");
    assert_eq!(from_start.from, task.detach_offset);
    assert_eq!(from_start.text, format!("{seen}{later}"));

    // A short wait reports that it still runs; nothing new means no more output.
    assert_eq!(
        core.wait("echoer", Some(Duration::from_millis(100)))
            .await
            .expect("wait"),
        EntryState::Running
    );
    assert!(
        !core
            .wait_output("echoer", offset, Duration::from_millis(100))
            .await
            .expect("wait")
    );

    let state = core.kill("echoer").await.expect("kill");
    assert!(matches!(state, EntryState::Killed { .. }), "{state:?}");
    assert_eq!(core.entry("echoer").expect("entry").state, state);
    assert!(processes_of(&id).is_empty(), "processes left behind");
    assert!(core.write("echoer", b"more".to_vec()).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_ends_reports_its_exit_and_an_event() {
    let core = test_core("task-end");
    let mut events = core.subscribe();
    let id = unique_id("ends");
    let handle = core
        .start(request(
            &id,
            "echo one; read line; echo \"got $line\"; exit 7",
        ))
        .expect("start");
    core.wait_output(&id, 0, DEADLINE).await.expect("one");
    let task = core.detach(&id, None, "test").await.expect("detach");
    assert_eq!(task.name.as_deref(), Some("echo-one"));
    handle.result().await;
    core.write(&id, b"two\r".to_vec()).await.expect("write");
    assert_eq!(
        core.wait(&id, Some(DEADLINE)).await.expect("wait"),
        EntryState::Exited { code: 7 }
    );
    let text = core.output(&id, None, 1 << 20).expect("read").text;
    assert_eq!(text, "two\ngot two\n");

    let ended = CoreEvent::Ended {
        id: id.clone(),
        state: EntryState::Exited { code: 7 },
    };
    let mut seen = Vec::new();
    while !seen.contains(&ended) {
        let event = tokio::time::timeout(DEADLINE, events.recv())
            .await
            .expect("no Ended event")
            .expect("events");
        seen.push(event);
    }
    assert_eq!(seen[0], CoreEvent::Started { id: id.clone() });
    assert!(seen.contains(&CoreEvent::OutputChanged { id: id.clone() }));
    assert!(
        seen.iter().any(
            |event| matches!(event, CoreEvent::Detached { id: detached, .. } if *detached == id)
        )
    );
}

/// A core that keeps few finished entries, so that forgetting shows quickly.
fn forgetful_core(label: &str) -> oino::core::Core {
    oino::core::Core::new(oino::core::CoreConfig {
        log_dir: Some(crate::support::temp_dir(label)),
        kill_grace: Duration::from_secs(1),
        max_finished: 3,
        max_finished_tasks: 2,
        ..oino::core::CoreConfig::default()
    })
    .expect("core")
}

/// A task that has ended, started in the background and detached at once.
async fn ended_task(core: &oino::core::Core, command: &str) -> String {
    let id = unique_id("task");
    let handle = core.start(request(&id, command)).expect("start");
    let task = core.detach(&id, None, "test").await.expect("detach");
    handle.result().await;
    assert_ne!(
        core.wait(&id, Some(DEADLINE)).await.expect("wait"),
        EntryState::Running
    );
    task.task_id.expect("a task id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_tasks_are_kept_apart_from_calls_and_a_forgotten_one_says_where_its_output_is() {
    let core = forgetful_core("forget");
    let first = ended_task(&core, "sleep 0.2; echo first task").await;
    // Many more calls than are kept: the task stays.
    for n in 0..10 {
        let id = unique_id("quick");
        core.start(request(&id, &format!("echo {n}")))
            .expect("start")
            .result()
            .await;
    }
    let slice = core
        .output(&first, None, 4096)
        .expect("the task is still there");
    assert_eq!(slice.text, "first task\n");
    let calls = core
        .entries()
        .into_iter()
        .filter(|entry| entry.kind == EntryKind::Call)
        .count();
    assert_eq!(calls, 3);

    // Tasks have their own bound: past it, the oldest ended one goes, and says so.
    let log_path = core.entry(&first).expect("entry").log_path;
    ended_task(&core, "sleep 0.2; echo second").await;
    ended_task(&core, "sleep 0.2; echo third").await;
    let forgotten = core.output(&first, None, 4096).expect_err("forgotten");
    assert_eq!(forgotten.code(), oino::core::ErrorCode::Forgotten);
    let message = forgotten.to_string();
    assert!(
        message.contains("no longer kept") && message.contains(&log_path.display().to_string()),
        "{message}"
    );
    assert_eq!(
        core.entry("never-was").expect_err("unknown").code(),
        oino::core::ErrorCode::NoSuchEntry
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_entry_keeps_no_log_file_open() {
    let dir = crate::support::temp_dir("open-logs");
    let core = oino::core::Core::new(oino::core::CoreConfig {
        log_dir: Some(dir.clone()),
        ..oino::core::CoreConfig::default()
    })
    .expect("core");
    let open_logs = || {
        std::fs::read_dir("/proc/self/fd")
            .expect("fds")
            .flatten()
            .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.starts_with(&dir)))
            .count()
    };
    for n in 0..20 {
        let id = unique_id("closed");
        core.start(request(&id, &format!("echo {n}")))
            .expect("start")
            .result()
            .await;
    }
    assert_eq!(core.entries().len(), 20);
    assert_eq!(open_logs(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_and_names_are_one_set_of_keys_that_never_mean_two_things() {
    let core = test_core("one-key-space");
    let first = unique_id("named");
    core.start(request(&first, "echo ready; sleep 30"))
        .expect("start");
    core.wait_output(&first, 0, DEADLINE).await.expect("output");
    let task = core
        .detach(&first, Some("longtask"), "test")
        .await
        .expect("detach");
    let task_id = task.task_id.expect("a task id");

    // A call id that reads as a task id, or is a task's name, is refused.
    for taken in [task_id.as_str(), "t99", "longtask"] {
        let refused = core.start(request(taken, "sleep 30"));
        assert!(refused.is_err(), "a call took the id {taken}");
        let message = refused.err().map(|err| err.to_string()).unwrap_or_default();
        assert!(message.contains(taken), "{message}");
    }

    // A name that is a call's id is refused, and a name made from a command avoids call ids.
    let other = unique_id("dup");
    core.start(request(&other, "echo ready; sleep 30"))
        .expect("start");
    core.wait_output(&other, 0, DEADLINE).await.expect("output");
    let named_as_call = core.detach(&other, Some(&first), "test").await;
    assert!(
        matches!(
            named_as_call,
            Err(oino::core::CoreError::Task(
                oino::core::tasks::TaskError::DuplicateName(_)
            ))
        ),
        "{named_as_call:?}"
    );
    // `echo ready; sleep 30` would be named `echo-ready`, which is this call's id.
    let sleeper = core
        .start(request("echo-ready", "sleep 30"))
        .expect("a call with id `echo-ready`");
    drop(sleeper);
    let derived = core.detach(&other, None, "test").await.expect("detach");
    let derived_name = derived.name.unwrap_or_default();
    assert!(derived_name.starts_with("echo-ready-"), "{derived_name}");
    for key in [first.as_str(), other.as_str(), "echo-ready"] {
        core.kill(key).await.expect("kill");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_runs_the_command_again_where_and_as_it_ran_ending_it_first() {
    let core = test_core("restart");
    let folder = crate::support::temp_dir("restart-folder");
    std::fs::create_dir_all(&folder).expect("folder");
    let id = unique_id("restart");
    let mut first = request(&id, "echo \"run in $PWD with $RESTART_MARK\"; sleep 600");
    first.cwd = Some(folder.clone());
    first.env = vec![
        ("PATH".into(), std::env::var("PATH").expect("PATH")),
        ("RESTART_MARK".into(), "marked".into()),
    ];
    first.title = Some("sleeper".into());
    let handle = core.start(first).expect("start");
    let said = format!("run in {} with marked", folder.display());
    let old_pid = i32::try_from(core.entry(&id).expect("entry").pid).expect("a pid");
    crate::support::wait_until("the first run's line", || {
        core.output(&id, None, 4096)
            .is_ok_and(|slice| slice.text.contains(&said))
    })
    .await;

    // Still running: it is ended, then started again as a new call.
    let again = core.restart(&id, None).await.expect("restart");
    assert!(!core.entry(&id).expect("old entry").state.is_running());
    assert!(handle.result().await.text.contains(&said));
    assert_ne!(again.id, id);
    assert_eq!(again.title.as_deref(), Some("sleeper"));
    assert_eq!(again.cwd, folder);
    assert!(again.state.is_running());
    crate::support::wait_until("the second run's line", || {
        core.output(&again.id, None, 4096)
            .is_ok_and(|slice| slice.text.contains(&said))
    })
    .await;
    assert!(processes_of(&id).is_empty(), "the first run is left");
    assert!(!processes_of(&again.id).contains(&old_pid));

    // A task restarts as a task.
    let task = core
        .detach(&again.id, Some("sleepy"), "test")
        .await
        .expect("detach");
    let third = core.restart("sleepy", None).await.expect("restart a task");
    assert_eq!(third.kind, EntryKind::Task, "{third:?}");
    assert_eq!(third.name.as_deref(), Some("sleepy"));
    assert_eq!(core.entry("sleepy").expect("by name").id, third.id);
    assert_ne!(third.task_id, task.task_id);
    // An ended call restarts without asking anything.
    core.kill(&third.id).await.expect("kill");
    let fourth = core
        .restart(&third.id, None)
        .await
        .expect("restart an ended one");
    assert!(fourth.state.is_running());
    assert!(core.restart("no-such-call", None).await.is_err());
    core.shutdown().await;
}
