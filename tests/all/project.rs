//! Project files: processes started in order of readiness, kept running by their restart
//! policy, started once however many interfaces open on them.

use std::time::Duration;

use oino::core::{Core, EntryInfo, EntryKind, EntryState};
use oino::project::Project;

use crate::support::{ServerGuard, temp_dir, test_core, wait_until};

/// `text` written as the `oino.toml` of a fresh folder, loaded.
fn project(label: &str, text: &str) -> Project {
    let dir = temp_dir(label);
    std::fs::write(dir.join("oino.toml"), text).expect("write oino.toml");
    Project::load(&dir.join("oino.toml")).expect("a good project file")
}

/// The entries of the process `name`, oldest first.
fn runs(core: &Core, name: &str) -> Vec<EntryInfo> {
    let mut runs: Vec<EntryInfo> = core
        .entries()
        .into_iter()
        .filter(|entry| entry.title.as_deref() == Some(name))
        .collect();
    runs.sort_by_key(|entry| entry.started_ms);
    runs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_start_after_those_they_wait_for_are_ready() {
    let core = test_core("project-order");
    let project = project(
        "project-order",
        r#"
[processes.db]
cmd = "echo booting; sleep 0.5; echo accepting connections; sleep 600"
ready = "accepting conn"

[processes.web]
cmd = "echo web up on $PORT; sleep 600"
env = { PORT = "3999" }
after = ["db"]

[processes.manual]
cmd = "echo by hand; sleep 600"
autostart = false
"#,
    );
    let started = core.start_project(&project, &[], None).expect("start");
    assert_eq!(started.started, ["db", "web"]);
    assert_eq!(started.not_started, ["manual"]);
    // Until db says it accepts connections, it is not ready and web has not started.
    wait_until("db to start", || !runs(&core, "db").is_empty()).await;
    loop {
        let db = runs(&core, "db").remove(0);
        if db.ready == Some(true) {
            break;
        }
        assert!(
            runs(&core, "web").is_empty(),
            "web started before db was ready"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    wait_until("web to start", || !runs(&core, "web").is_empty()).await;
    let web = runs(&core, "web").remove(0);
    assert_eq!(
        (web.kind, web.name.as_deref()),
        (EntryKind::Task, Some("web"))
    );
    assert_eq!(web.ready, None);
    wait_until("web's line", || {
        core.output("web", None, 4096)
            .is_ok_and(|slice| slice.text.contains("web up on 3999"))
    })
    .await;

    // Asked again (a second interface): nothing starts twice.
    let again = core.start_project(&project, &[], None).expect("again");
    assert!(again.started.is_empty(), "{again:?}");
    assert_eq!(again.running, ["db", "web"]);
    assert_eq!(runs(&core, "db").len(), 1);
    // `oino start manual` starts the one that does not start by itself.
    let manual = core
        .start_project(&project, &[], Some("manual"))
        .expect("manual");
    assert_eq!(manual.started, ["manual"]);
    wait_until("manual to start", || !runs(&core, "manual").is_empty()).await;
    assert!(core.start_project(&project, &[], Some("nobody")).is_err());
    core.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_policies_restart_with_a_doubling_backoff_up_to_their_limit() {
    let core = test_core("project-restart");
    let project = project(
        "project-restart",
        r#"
[processes.flaky]
cmd = "echo flaky; exit 3"
restart = "on-failure"
restart_limit = 2
backoff = 0.3

[processes.fine]
cmd = "echo fine; exit 0"
restart = "on-failure"

[processes.always]
cmd = "echo always; sleep 600"
restart = "always"

[processes.once]
cmd = "exit 4"
"#,
    );
    core.start_project(&project, &[], None).expect("start");
    // flaky: the first run and two restarts, then left ended.
    wait_until("flaky's three runs to end", || {
        let runs = runs(&core, "flaky");
        runs.len() == 3 && runs.iter().all(|run| !run.state.is_running())
    })
    .await;
    let flaky = runs(&core, "flaky");
    let gap = |at: usize| flaky[at].started_ms - flaky[at - 1].ended_ms.expect("ended");
    assert!(gap(1) >= 300, "first backoff {} ms", gap(1));
    assert!(gap(2) >= 600, "second backoff {} ms", gap(2));
    // The name goes to the newest run.
    assert_eq!(core.entry("flaky").expect("flaky").id, flaky[2].id);
    // A clean exit under on-failure, and no policy: not started again.
    wait_until("fine and once to end", || {
        [runs(&core, "fine"), runs(&core, "once")]
            .iter()
            .all(|runs| runs.len() == 1 && !runs[0].state.is_running())
    })
    .await;
    // `always`, killed on purpose (oino kill, x): not started again either.
    wait_until("always to run", || !runs(&core, "always").is_empty()).await;
    assert!(matches!(
        core.kill("always").await.expect("kill"),
        EntryState::Killed { .. }
    ));
    // Its supervision ends, with no run after the kill.
    wait_until("always's supervision to end", || {
        !core
            .project_running(&project.file)
            .contains(&"always".to_owned())
    })
    .await;
    assert_eq!(runs(&core, "always").len(), 1, "a kill was restarted");
    assert!(core.project_running(&project.file).is_empty());
    assert_eq!(runs(&core, "flaky").len(), 3);
    assert_eq!(runs(&core, "fine").len(), 1);
    core.shutdown().await;
}

#[test]
fn a_second_oino_in_the_folder_finds_the_project_running() {
    let server = ServerGuard::new("project-twice");
    let dir = temp_dir("project-twice");
    std::fs::write(dir.join("Procfile"), "sleeper: echo zzz; sleep 600\n").expect("Procfile");
    let script = dir.join("script.oino");
    std::fs::write(
        &script,
        format!("project {}\nwait-for zzz\n", dir.join("Procfile").display()),
    )
    .expect("script");
    for _ in 0..2 {
        let output = server
            .oino(&["headless", "--server", "--script"])
            .arg(&script)
            .output()
            .expect("oino headless");
        assert!(output.status.success(), "{output:?}");
    }
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    let entries: Vec<EntryInfo> = serde_json::from_slice(&listed.stdout).expect("JSON");
    let sleepers: Vec<&EntryInfo> = entries
        .iter()
        .filter(|entry| entry.name.as_deref() == Some("sleeper"))
        .collect();
    assert_eq!(sleepers.len(), 1, "{entries:?}");
    assert!(sleepers[0].state.is_running());
    // `oino start` says it runs already.
    let start = server
        .oino(&["start", "sleeper", "--config"])
        .arg(dir.join("Procfile"))
        .output()
        .expect("oino start");
    assert!(start.status.success(), "{start:?}");
    assert!(String::from_utf8_lossy(&start.stderr).contains("sleeper runs already"));
}

#[test]
fn a_bad_project_file_is_refused_with_where_and_why() {
    let server = ServerGuard::new("project-bad");
    let dir = temp_dir("project-bad");
    let file = dir.join("oino.toml");
    std::fs::write(&file, "[processes.web]\ncmd = \"x\"\nafter = [\"db\"]\n").expect("write");
    for args in [&["--config"][..], &["start", "web", "--config"]] {
        let output = server
            .oino(args)
            .arg(&file)
            .current_dir(&dir)
            .output()
            .expect("oino");
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(
            said.contains(&format!("{}:3:10: after names `db`", file.display())),
            "{said}"
        );
    }
    assert!(!server.socket.exists(), "a server started for a bad file");
}
