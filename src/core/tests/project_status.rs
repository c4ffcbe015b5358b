//! A project's processes as the lists show them, on the paused clock: waiting (for whom),
//! blocked (why), restarting (the backoff left), given up, restarted by hand; the conditions of
//! `after`; `up` applying a changed file.

use super::*;
use crate::core::project::{Condition, Did, ProcessPhase};
use crate::core::{CoreEvent, EntryInfo};

/// The newest row of the project process `name`, if it is listed.
fn row(core: &Core, name: &str) -> Option<EntryInfo> {
    core.entries().into_iter().find(|entry| {
        entry
            .project
            .as_ref()
            .is_some_and(|mark| mark.process == name && mark.latest)
    })
}

fn phase(core: &Core, name: &str) -> Option<ProcessPhase> {
    row(core, name)?.project?.phase
}

fn after(name: &str, condition: Condition) -> After {
    After {
        name: name.into(),
        condition,
    }
}

/// The next process spawned, which must run `command`.
async fn spawned_as(
    spawned: &mut UnboundedReceiver<ScriptedProcess>,
    command: &str,
) -> ScriptedProcess {
    let process = next_spawn(spawned).await;
    assert_eq!(process.spec.command, command);
    process
}

#[tokio::test(start_paused = true)]
async fn a_process_is_listed_waiting_for_whom_then_blocked_with_why() {
    let (core, mut spawned, _dir) = scripted_core("blocked", CoreConfig::default());
    let migrate = process("migrate", Restart::Never);
    let mut db = process("db", Restart::Never);
    db.ready = Some("ready to accept".into());
    let mut web = process("web", Restart::Never);
    web.after = vec![
        after("migrate", Condition::Succeeded),
        after("db", Condition::Ready),
    ];
    let project = project("blocked", vec![migrate, db, web]);
    let started = core.start_project(&project, &[], None).expect("start");
    assert_eq!(started.started, ["migrate", "db", "web"]);
    let first = next_spawn(&mut spawned).await;
    let second = next_spawn(&mut spawned).await;
    let (migrate, db) = if first.spec.command == "run-migrate" {
        (first, second)
    } else {
        (second, first)
    };
    wait_until("web is listed waiting for both", || {
        phase(&core, "web")
            == Some(ProcessPhase::Waiting {
                waiting_for: vec!["migrate".into(), "db".into()],
            })
    })
    .await;
    let waiting = row(&core, "web").expect("listed");
    assert_eq!(
        (
            waiting.state,
            waiting.pid,
            waiting.project.as_ref().map(|mark| mark.run)
        ),
        (EntryState::NotStarted, 0, Some(0))
    );
    db.print(b"ready to accept connections\r\n").await;
    wait_until("only migrate is waited for", || {
        phase(&core, "web")
            == Some(ProcessPhase::Waiting {
                waiting_for: vec!["migrate".into()],
            })
    })
    .await;
    let mut events = core.subscribe();
    migrate.exit(1);
    wait_until("web is blocked by migrate's failure", || {
        phase(&core, "web")
            == Some(ProcessPhase::Blocked {
                reason: "migrate exited 1".into(),
            })
    })
    .await;
    let notice = loop {
        if let Ok(CoreEvent::Project {
            notice: Some(notice),
            ..
        }) = events.recv().await
        {
            break notice;
        }
    };
    assert_eq!(notice, "web is blocked: migrate exited 1");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_nothing_spawned(&mut spawned, "web started though migrate failed");
    // Stopped, it is no longer listed as waiting.
    core.stop_project(&project, &[]).await.expect("down");
    assert_eq!(row(&core, "web"), None);
}

#[tokio::test(start_paused = true)]
async fn started_succeeded_and_ended_are_waited_for_as_named() {
    let (core, mut spawned, _dir) = scripted_core("conditions", CoreConfig::default());
    let mut seed = process("seed", Restart::Never);
    seed.ready = Some("never printed".into());
    let mut api = process("api", Restart::Never);
    api.after = vec![after("seed", Condition::Started)];
    let mut report = process("report", Restart::Never);
    report.after = vec![after("seed", Condition::Ended)];
    let mut web = process("web", Restart::Never);
    web.after = vec![after("seed", Condition::Succeeded)];
    let project = project("conditions", vec![seed, api, report, web]);
    core.start_project(&project, &[], None).expect("start");
    let seed = spawned_as(&mut spawned, "run-seed").await;
    // Started is enough for api, though seed is never ready.
    spawned_as(&mut spawned, "run-api").await;
    assert_nothing_spawned(&mut spawned, "report or web before seed ended");
    seed.exit(0);
    let mut next = vec![
        next_spawn(&mut spawned).await.spec.command,
        next_spawn(&mut spawned).await.spec.command,
    ];
    next.sort();
    assert_eq!(next, ["run-report", "run-web"]);
}

#[tokio::test(start_paused = true)]
async fn restarts_are_counted_with_their_backoff_then_given_up_and_a_restart_by_hand_is_supervised_again()
 {
    let (core, mut spawned, _dir) = scripted_core("gave-up", CoreConfig::default());
    let mut web = process("web", Restart::Always);
    web.restart_limit = 2;
    web.backoff_ms = 1000;
    let project = project("gave-up", vec![web]);
    core.start_project(&project, &[], None).expect("start");
    spawned_as(&mut spawned, "run-web").await.exit(3);
    wait_until("web is restarting", || {
        matches!(
            phase(&core, "web"),
            Some(ProcessPhase::Restarting { backoff_left_ms }) if backoff_left_ms <= 1000
        )
    })
    .await;
    spawned_as(&mut spawned, "run-web").await.exit(3);
    spawned_as(&mut spawned, "run-web").await.exit(3);
    wait_until("web gave up", || {
        phase(&core, "web") == Some(ProcessPhase::GaveUp)
    })
    .await;
    // One row per process: the earlier runs are marked as such.
    let runs: Vec<(u32, bool, u32)> = core
        .entries()
        .iter()
        .filter_map(|entry| entry.project.as_ref())
        .map(|mark| (mark.run, mark.latest, mark.restarts))
        .collect();
    assert_eq!(runs, [(1, false, 2), (2, false, 2), (3, true, 2)]);
    assert_eq!(
        row(&core, "web").expect("listed").state,
        EntryState::Exited { code: 3 }
    );
    assert!(core.project_running(&project.file).is_empty());

    // Started again by hand, it is supervised again, its restarts in a row counted from zero.
    core.restart("web", None).await.expect("restart");
    spawned_as(&mut spawned, "run-web").await.exit(3);
    wait_until("web is restarting again", || {
        matches!(phase(&core, "web"), Some(ProcessPhase::Restarting { .. }))
    })
    .await;
    assert_eq!(
        row(&core, "web")
            .and_then(|row| row.project)
            .map(|mark| mark.restarts),
        Some(3)
    );
    let again = spawned_as(&mut spawned, "run-web").await;
    assert_eq!(core.project_running(&project.file), ["web"]);
    again.exit(0);
}

#[tokio::test(start_paused = true)]
async fn a_restart_whose_folder_is_gone_is_blocked_and_says_so() {
    let (core, mut spawned, dir) = scripted_core("gone", CoreConfig::default());
    let folder = dir.0.join("web");
    std::fs::create_dir_all(&folder).expect("folder");
    let mut web = process("web", Restart::Always);
    web.cwd.clone_from(&folder);
    let project = project("gone", vec![web]);
    core.start_project(&project, &[], None).expect("start");
    let run = spawned_as(&mut spawned, "run-web").await;
    std::fs::remove_dir(&folder).expect("removed");
    run.exit(1);
    wait_until("web is blocked", || {
        matches!(
            phase(&core, "web"),
            Some(ProcessPhase::Blocked { reason }) if reason.starts_with("cannot start:")
                && reason.contains(&folder.display().to_string())
        )
    })
    .await;
    assert!(core.project_running(&project.file).is_empty());
}

#[tokio::test(start_paused = true)]
async fn up_restarts_what_changed_stops_what_was_removed_and_starts_what_was_added() {
    let (core, mut spawned, _dir) = scripted_core("up", CoreConfig::default());
    let v1 = project(
        "up",
        vec![
            process("db", Restart::Never),
            process("web", Restart::Never),
        ],
    );
    let applied = core.apply_project(&v1, &[], &[]).await.expect("up");
    let did: Vec<(&str, Did)> = applied
        .processes
        .iter()
        .map(|applied| (applied.name.as_str(), applied.did))
        .collect();
    assert_eq!(did, [("db", Did::Started), ("web", Did::Started)]);
    let db = next_spawn(&mut spawned).await;
    let web = next_spawn(&mut spawned).await;
    wait_until("both run", || core.project_running(&v1.file).len() == 2).await;

    let mut changed = process("web", Restart::Never);
    changed.cmd = "run-web --fast".into();
    let v2 = project("up", vec![changed, process("worker", Restart::Never)]);
    let applied = core.apply_project(&v2, &[], &[]).await.expect("up again");
    let did: Vec<(&str, Did, Option<&str>)> = applied
        .processes
        .iter()
        .map(|applied| (applied.name.as_str(), applied.did, applied.why.as_deref()))
        .collect();
    assert_eq!(
        did,
        [
            ("web", Did::Restarted, Some("cmd changed")),
            ("worker", Did::Started, None),
            ("db", Did::Stopped, Some("no longer in the file")),
        ]
    );
    assert!(
        db.signals().contains(&Signal::SIGTERM),
        "db was not stopped"
    );
    assert!(
        web.signals().contains(&Signal::SIGTERM),
        "web was not stopped"
    );
    let mut next = vec![
        next_spawn(&mut spawned).await.spec.command,
        next_spawn(&mut spawned).await.spec.command,
    ];
    next.sort();
    assert_eq!(next, ["run-web --fast", "run-worker"]);
    // Nothing changed: nothing is done.
    let applied = core
        .apply_project(&v2, &[], &[])
        .await
        .expect("up a third time");
    assert!(
        applied
            .processes
            .iter()
            .all(|applied| applied.did == Did::Unchanged),
        "{applied:?}"
    );
}
