//! Detaching: the byte-exact boundary under a flood, and the registry's contract.

use std::sync::Arc;
use std::time::Duration;

use oino::call::{CallOptions, TimeoutPolicy};
use oino::core::{CallRequest, Core, CoreError, EntryKind, EntryState};
use pretty_assertions::assert_eq;

use crate::support::{DEADLINE, read_to_end, request, test_core, unique_id, wait_until};

const LINES: u32 = 1_000_000;
/// Raw bytes of `seq 1 1000000` through a PTY (`\r\n` line ends), roughly.
const FLOOD_BYTES: u64 = 7_888_896;
const DETACH_MOMENTS: u64 = 24;

/// Detaches `seq` at `DETACH_MOMENTS` different points; each time the text before the marker and
/// the task's later output add up to the whole sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detach_under_a_flood_loses_and_duplicates_nothing() {
    let core = test_core("flood");
    let expected: Arc<String> = Arc::new((1..=LINES).map(|n| format!("{n}\n")).collect());
    // A few at a time: each spends part of its life in the sleep that keeps it alive for the late
    // moments.
    let mut offsets = Vec::new();
    for round in (0..DETACH_MOMENTS).collect::<Vec<_>>().chunks(4) {
        let detaches: Vec<_> = round
            .iter()
            .map(|&moment| {
                let (core, expected) = (core.clone(), Arc::clone(&expected));
                tokio::spawn(async move { detach_at(&core, moment, &expected).await })
            })
            .collect();
        for detach in detaches {
            offsets.push(detach.await.expect("detach task"));
        }
    }
    offsets.sort_unstable();
    offsets.dedup();
    let mid_stream = offsets
        .iter()
        .filter(|offset| **offset > 0 && **offset < FLOOD_BYTES - 100_000)
        .count();
    assert!(
        mid_stream >= 20,
        "only {mid_stream} distinct detach points mid-stream: {offsets:?}"
    );
}

/// Runs the flood, detaches it once `moment` 24ths of it were read, checks the two halves; returns
/// the raw offset of the detach.
async fn detach_at(core: &Core, moment: u64, expected: &str) -> u64 {
    let id = unique_id("flood");
    // The short sleep keeps the call alive for the late moments, whose bytes are all written.
    let handle = core
        .start(CallRequest {
            options: CallOptions {
                max_result_bytes: 64 << 20,
                ..CallOptions::default()
            },
            ..request(&id, &format!("seq 1 {LINES}; sleep 0.5"))
        })
        .expect("start");
    let threshold = FLOOD_BYTES * moment / DETACH_MOMENTS;
    core.wait_output(&id, threshold, DEADLINE)
        .await
        .expect("wait");
    let reason = format!("moment {moment}");
    let task = core
        .detach(&id, None, &reason)
        .await
        .unwrap_or_else(|err| panic!("detach at moment {moment}: {err}"));
    let task_id = task.task_id.clone().expect("task id");
    let result = handle.result().await;

    let marker = format!("\n\n[Detached to background task {task_id}: {reason}]");
    assert!(
        result.text.ends_with(&marker),
        "no exact marker: {:?}",
        &result.text[result.text.len().saturating_sub(200)..]
    );
    assert!(!result.is_error);
    assert_eq!(result.exit, None);
    let before = &result.text[..result.text.len() - marker.len()];
    let after = read_to_end(core, &id, task.detach_offset).await;
    assert!(
        before.len() + after.len() == expected.len() && format!("{before}{after}") == expected,
        "moment {moment}: {} + {} bytes do not make the sequence (detached at raw byte {})",
        before.len(),
        after.len(),
        task.detach_offset,
    );
    task.detach_offset
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detach_of_an_unknown_or_finished_call_is_none() {
    let core = test_core("finished");
    let registry = core.registry().clone();
    assert!(
        registry
            .detach("no-such-call", "t1", "test")
            .await
            .is_none()
    );

    let id = unique_id("quick");
    let handle = core.start(request(&id, "echo hi")).expect("start");
    let result = handle.result().await;
    assert_eq!(result.text, "hi\n");
    assert!(!registry.is_running(&id));
    assert!(registry.detach(&id, "t1", "test").await.is_none());
    assert!(matches!(
        core.detach(&id, None, "test").await,
        Err(CoreError::NotRunning(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_pid_and_registration_follow_the_call() {
    let core = test_core("pid");
    let registry = core.registry().clone();
    let id = unique_id("pid");
    // Two commands, so that bash does not exec the last one in its own place.
    let handle = core.start(request(&id, "sleep 30; true")).expect("start");
    assert!(registry.is_running(&id));
    assert!(registry.running().contains(&id));
    let pid = registry.pid(&id).await.expect("pid");
    assert_eq!(pid, core.entry(&id).expect("entry").pid);
    // Between fork and exec the pid still shows oino's own command line.
    wait_until("the pid to be the shell", || {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmdline| cmdline == b"bash\0-c\0sleep 30; true\0")
    })
    .await;

    core.kill(&id).await.expect("kill");
    let result = handle.result().await;
    assert!(result.is_error);
    assert!(!registry.is_running(&id));
    assert!(!registry.running().contains(&id));
    assert_eq!(registry.pid(&id).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_call_becomes_a_named_task_and_duplicate_names_are_refused() {
    let core = test_core("names");
    let first = unique_id("named");
    let second = unique_id("named");
    let handle = core
        .start(request(&first, "echo ready; sleep 30"))
        .expect("start");
    let other = core
        .start(request(&second, "echo ready; sleep 30"))
        .expect("start");
    core.wait_output(&first, 0, DEADLINE).await.expect("output");
    let task = core
        .detach(&first, Some("dev-server"), "test")
        .await
        .expect("detach");
    assert_eq!(task.kind, EntryKind::Task);
    assert_eq!(task.name.as_deref(), Some("dev-server"));
    assert!(handle.result().await.text.starts_with("ready\n"));

    let refused = core.detach(&second, Some("dev-server"), "test").await;
    assert!(
        matches!(&refused, Err(CoreError::Task(_))),
        "duplicate name accepted: {refused:?}"
    );
    assert!(
        core.registry().is_running(&second),
        "a refused detach must leave the call alone"
    );
    // The task answers to its id and its name.
    assert_eq!(core.entry("dev-server").expect("by name").id, first);
    let task_id = task.task_id.expect("task id");
    assert_eq!(core.entry(&task_id).expect("by task id").id, first);

    core.kill("dev-server").await.expect("kill");
    core.kill(&second).await.expect("kill");
    assert!(other.result().await.is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_can_detach_instead_of_kill() {
    let core = test_core("timeout-detach");
    let id = unique_id("slow");
    let handle = core
        .start(CallRequest {
            options: CallOptions {
                timeout: Some(Duration::from_secs(1)),
                on_timeout: TimeoutPolicy::Detach,
                ..CallOptions::default()
            },
            ..request(&id, "echo before; sleep 2; echo after")
        })
        .expect("start");
    let result = handle.result().await;
    let detached = result.detached.clone().expect("detached");
    assert!(result.timed_out);
    assert!(!result.is_error);
    assert_eq!(
        result.text,
        format!(
            "before\n\n\n[Detached to background task {}: {}]",
            detached.task_id, detached.reason
        )
    );
    let entry = core.entry(&id).expect("entry");
    assert_eq!(entry.kind, EntryKind::Task);
    assert_eq!(
        read_to_end(&core, &id, entry.detach_offset).await,
        "after\n"
    );
    assert_eq!(
        core.wait(&id, None).await.expect("wait"),
        EntryState::Exited { code: 0 }
    );
    wait_until("the task's end to show in the list", || {
        !core.entry(&id).expect("entry").state.is_running()
    })
    .await;
}
