//! Project files: processes started in order of readiness, kept running by their restart
//! policy, started once however many interfaces open on them.

use oino::core::project::Project;
use oino::core::{Core, EntryInfo, EntryKind, EntryState};

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
    wait_until("db to be ready", || {
        // web is looked for first: db may become ready between the two looks.
        let web_started = !runs(&core, "web").is_empty();
        let db_ready = runs(&core, "db")[0].ready == Some(true);
        assert!(!web_started || db_ready, "web started before db was ready");
        db_ready
    })
    .await;
    // A call for an instant, then the task named after it.
    wait_until("web to start as a task", || {
        runs(&core, "web")
            .first()
            .is_some_and(|run| run.kind == EntryKind::Task)
    })
    .await;
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
    // A run that ended at once, before it could be detached, is its task all the same: its
    // name leads to it.
    let once = core.entry("once").expect("once, by its name");
    assert_eq!(
        (once.kind, once.name.as_deref()),
        (EntryKind::Task, Some("once"))
    );
    // `always`, killed on purpose (oino kill, x): not started again either.
    wait_until("always to run as a task", || {
        runs(&core, "always")
            .first()
            .is_some_and(|run| run.kind == EntryKind::Task)
    })
    .await;
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
    let entries = listed(&server);
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
            said.contains(&format!("{}:3:9: after names `db`", file.display())),
            "{said}"
        );
    }
    assert!(!server.socket.exists(), "a server started for a bad file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_by_hand_is_followed_a_kill_stops_it_and_a_crash_is_restarted() {
    let core = test_core("project-by-hand");
    let counter = temp_dir("project-by-hand-count").join("count");
    let project = project(
        "project-by-hand",
        &format!(
            r#"
# The first run sleeps, the second fails, the third sleeps.
[processes.svc]
cmd = "n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; echo run $n; [ $n = 1 ] && exit 1; sleep 600"
restart = "on-failure"
backoff = 0.1

[processes.loop]
cmd = "exit 1"
restart = "on-failure"
backoff = 2

[processes.crashy]
cmd = "sleep 600"
restart = "on-failure"
backoff = 0.1
"#,
            count = counter.display()
        ),
    );
    core.start_project(&project, &[], None).expect("start");
    // Killed while it waits to be started again (within its 2 s backoff, so first): it stays
    // ended.
    wait_until("loop's first run to end", || {
        runs(&core, "loop")
            .first()
            .is_some_and(|run| !run.state.is_running())
    })
    .await;
    core.kill("loop").await.expect("kill");
    wait_until("loop's supervision to end", || {
        !core
            .project_running(&project.file)
            .contains(&"loop".to_owned())
    })
    .await;
    assert_eq!(runs(&core, "loop").len(), 1);
    wait_until("svc to run as a task", || {
        runs(&core, "svc")
            .first()
            .is_some_and(|run| run.name.is_some())
    })
    .await;
    wait_until("svc's first run to count itself", || {
        core.output("svc", Some(0), 4096)
            .is_ok_and(|slice| slice.text.contains("run 0"))
    })
    .await;
    // Restarted by hand: the second run fails and is restarted by the policy.
    let second = core.restart("svc", None).await.expect("restart");
    assert_eq!(second.name.as_deref(), Some("svc"));
    wait_until("svc's third run", || {
        let runs = runs(&core, "svc");
        runs.len() == 3 && runs[2].state.is_running()
    })
    .await;
    assert!(
        core.project_running(&project.file)
            .contains(&"svc".to_owned())
    );

    // Killed by something else (the OOM killer's SIGKILL): a crash, started again.
    wait_until("crashy to run", || !runs(&core, "crashy").is_empty()).await;
    let pid = i32::try_from(runs(&core, "crashy")[0].pid).expect("a pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill -9");
    wait_until("crashy's second run", || {
        let runs = runs(&core, "crashy");
        runs.len() == 2 && runs[1].state.is_running()
    })
    .await;
    core.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_running_tasks_never_share_a_name() {
    let core = test_core("project-names");
    // A task named web, started by hand.
    let id = crate::support::unique_id("web-by-hand");
    let _by_hand = core
        .start(crate::support::request(&id, "sleep 600"))
        .expect("start");
    core.detach(&id, Some("web"), "test").await.expect("detach");
    let project = project(
        "project-names",
        "[processes.web]\ncmd = \"echo project web; sleep 600\"\n",
    );
    core.start_project(&project, &[], None).expect("start");
    wait_until("the project's web to be a task", || {
        runs(&core, "web")
            .first()
            .is_some_and(|run| run.kind == EntryKind::Task)
    })
    .await;
    // Restarting the one made by hand, then the project's, hands no name to two.
    core.restart(&id, None).await.expect("restart by hand");
    let project_web = runs(&core, "web").remove(0);
    core.restart(&project_web.id, None)
        .await
        .expect("restart the project's");
    wait_until("the project's second run to be a task", || {
        runs(&core, "web")
            .get(1)
            .is_some_and(|run| run.kind == EntryKind::Task)
    })
    .await;
    let running: Vec<String> = core
        .entries()
        .into_iter()
        .filter(|entry| entry.state.is_running())
        .filter_map(|entry| entry.name)
        .collect();
    let mut unique = running.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), running.len(), "{running:?}");
    assert!(running.contains(&"web".to_owned()), "{running:?}");
    core.shutdown().await;
}

/// The server's entries, as `oino ls --json` gives them.
fn listed(server: &ServerGuard) -> Vec<EntryInfo> {
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    oino::remote::protocol::Travel::from_wire(
        serde_json::from_slice::<Vec<oino::remote::protocol::wire::Entry>>(&listed.stdout)
            .expect("JSON"),
    )
}

/// Starts the project `file` on the server with a headless script, and waits for `line`.
fn start_on_server(server: &ServerGuard, dir: &std::path::Path, file: &str, line: &str) {
    let script = dir.join("script.oino");
    std::fs::write(
        &script,
        format!("project {}\nwait-for {line}\n", dir.join(file).display()),
    )
    .expect("script");
    let output = server
        .oino(&["headless", "--server", "--script"])
        .arg(&script)
        .output()
        .expect("oino headless");
    assert!(output.status.success(), "{output:?}");
}

#[test]
fn down_stops_the_project_here_in_reverse_order_and_nothing_else() {
    let server = ServerGuard::new("project-down");
    let dir = temp_dir("project-down");
    std::fs::write(
        dir.join("oino.toml"),
        "[processes.db]\ncmd = \"echo db-up; sleep 600\"\nready = \"db-up\"\nrestart = \"always\"\n\n\
         [processes.web]\ncmd = \"echo web-up; sleep 600\"\nafter = [\"db\"]\nrestart = \"always\"\n",
    )
    .expect("oino.toml");
    let other = temp_dir("project-down-other");
    std::fs::write(other.join("Procfile"), "agent: echo agent-up; sleep 600\n").expect("Procfile");
    start_on_server(&server, &other, "Procfile", "agent-up");
    start_on_server(&server, &dir, "oino.toml", "db");
    // web starts once db printed its ready line.
    wait_listed(&server, "web running", |entry| {
        entry.name.as_deref() == Some("web") && entry.state.is_running()
    });

    let down = server
        .oino(&["down"])
        .current_dir(&dir)
        .output()
        .expect("oino down");
    assert!(down.status.success(), "{down:?}");
    assert_eq!(
        String::from_utf8_lossy(&down.stderr),
        "stopped web\nstopped db\n"
    );
    let entries = listed(&server);
    let state = |name: &str| {
        entries
            .iter()
            .find(|entry| entry.name.as_deref() == Some(name))
            .map(|entry| entry.state)
    };
    assert_eq!(state("web"), Some(EntryState::Killed { signal: 15 }));
    assert_eq!(state("db"), Some(EntryState::Killed { signal: 15 }));
    assert_eq!(state("agent"), Some(EntryState::Running));
    // Again: nothing runs, and it says so; a name the file lacks is refused with its names.
    let again = server
        .oino(&["down", "web"])
        .current_dir(&dir)
        .output()
        .expect("oino down");
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        "web was not running\n"
    );
    let wrong = server
        .oino(&["down", "wbe"])
        .current_dir(&dir)
        .output()
        .expect("oino down");
    assert_ne!(wrong.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("wbe"),
        "{wrong:?}"
    );
}

/// Waits until `oino ls --json` shows an entry that `holds`.
fn wait_listed(server: &ServerGuard, what: &str, holds: impl Fn(&EntryInfo) -> bool) {
    let deadline = std::time::Instant::now() + crate::support::DEADLINE;
    while !listed(server).iter().any(&holds) {
        assert!(std::time::Instant::now() < deadline, "never listed: {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_process_started_once_what_it_waits_for_is_ready_starts_and_says_so() {
    let server = ServerGuard::new("project-late");
    let dir = temp_dir("project-late");
    std::fs::write(
        dir.join("oino.toml"),
        "[processes.db]\ncmd = \"echo db-up; sleep 600\"\nready = \"db-up\"\n\n\
         [processes.web]\ncmd = \"echo web-up; sleep 600\"\nafter = [\"db\"]\nautostart = false\n",
    )
    .expect("oino.toml");
    let start = |name: &str| {
        let output = server
            .oino(&["start", name])
            .current_dir(&dir)
            .output()
            .expect("oino start");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    assert_eq!(start("db"), "started db as a task named db\n");
    wait_listed(&server, "db ready", |entry| {
        entry.name.as_deref() == Some("db") && entry.ready == Some(true)
    });
    assert_eq!(start("web"), "started web as a task named web\n");
    wait_listed(&server, "web running", |entry| {
        entry.name.as_deref() == Some("web") && entry.state.is_running()
    });
    assert_eq!(start("web"), "web runs already\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_procfiles_processes_start_and_are_listed_in_its_order() {
    let core = test_core("procfile-order");
    let dir = temp_dir("procfile-order");
    let names = [
        "zeta", "alpha", "mid", "beta", "omega", "delta", "kappa", "gamma",
    ];
    let text: String = names
        .iter()
        .map(|name| format!("{name}: sleep 600\n"))
        .collect();
    std::fs::write(dir.join("Procfile"), text).expect("Procfile");
    let project = Project::load(&dir.join("Procfile")).expect("a Procfile");
    core.start_project(&project, &[], None).expect("start");
    wait_until("every process to run as a task", || {
        core.entries()
            .iter()
            .filter(|entry| entry.task_id.is_some() && entry.state.is_running())
            .count()
            == names.len()
    })
    .await;
    let entries = core.entries();
    let listed: Vec<&str> = entries
        .iter()
        .filter_map(|entry| Some(entry.project.as_ref()?.process.as_str()))
        .collect();
    assert_eq!(listed, names);
    // Started in its order too: their call ids and task ids count up the file.
    let number = |id: &str| id[1..].parse::<u64>().expect("a numbered id");
    let ids: Vec<(u64, u64)> = entries
        .iter()
        .filter(|entry| entry.project.is_some())
        .map(|entry| {
            let task = entry.task_id.as_deref().expect("a task");
            (number(&entry.id), number(task))
        })
        .collect();
    let mut counted = ids.clone();
    counted.sort_unstable();
    assert_eq!(ids, counted, "{entries:#?}");
    core.shutdown().await;
}
