//! The core over processes played by hand ([`ScriptedSpawner`]) on tokio's paused clock: what
//! it does with a process's output, exit, silence and signals, and when, to the millisecond,
//! without bash or a PTY.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::time::Instant;

use super::project::{After, Project, ProjectProcess, Restart};
use super::{CallRequest, Core, CoreConfig, CoreError, EntryState};
use crate::call::{CallOptions, InputPolicy};
use crate::pty::scripted::{ScriptedProcess, ScriptedSpawner};
use crate::pty::{ProcessExit, TermSize};

/// Far beyond anything below: on the paused clock, waiting costs nothing.
const DEADLINE: Duration = Duration::from_secs(3600);

/// A folder of its own for one test, removed with it.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "oino-unit-{}-{label}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A core whose processes the test plays, where they arrive, and its folder for logs.
fn scripted_core(
    label: &str,
    config: CoreConfig,
) -> (Core, UnboundedReceiver<ScriptedProcess>, TempDir) {
    let (scripted, spawned) = ScriptedSpawner::new();
    let dir = TempDir::new(label);
    let config = CoreConfig {
        log_dir: Some(dir.0.clone()),
        ..config
    };
    let core = Core::with_spawner(config, Arc::new(scripted)).expect("core");
    (core, spawned, dir)
}

async fn next_spawn(spawned: &mut UnboundedReceiver<ScriptedProcess>) -> ScriptedProcess {
    tokio::time::timeout(DEADLINE, spawned.recv())
        .await
        .expect("a process is spawned in time")
        .expect("the core is alive")
}

/// No process was spawned (and the core could still spawn one).
fn assert_nothing_spawned(spawned: &mut UnboundedReceiver<ScriptedProcess>, what: &str) {
    match spawned.try_recv() {
        Err(TryRecvError::Empty) => {}
        Ok(process) => panic!("{what}: {}", process.spec.command),
        Err(TryRecvError::Disconnected) => panic!("the core is gone"),
    }
}

/// Waits until `condition` holds, looking every 10 ms of the paused clock.
async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !condition() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn request(command: &str, options: CallOptions) -> CallRequest {
    CallRequest {
        cwd: Some(std::env::temp_dir()),
        options,
        ..CallRequest::new(command)
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_gives_what_its_process_printed_and_how_it_exited() {
    let (core, mut spawned, _dir) = scripted_core("result", CoreConfig::default());
    let handle = core
        .start(request("make", CallOptions::default()))
        .expect("start");
    let process = next_spawn(&mut spawned).await;
    assert_eq!(process.spec.command, "make");
    assert_eq!(core.entry(&handle.id).expect("entry").pid, process.pid);
    let size = TermSize::new(100, 30);
    core.resize(&handle.id, size).expect("resize");
    assert_eq!(process.size(), size);
    process.print(b"compiling\r\nerror: 1 warning\r\n").await;
    process.exit(3);
    let id = handle.id.clone();
    let result = handle.result().await;
    assert_eq!(result.exit, Some(ProcessExit::Code(3)));
    assert!(
        result.text.contains("compiling\nerror: 1 warning"),
        "{:?}",
        result.text
    );
    assert_eq!(
        core.entry(&id).expect("kept").state,
        EntryState::Exited { code: 3 }
    );
    // Its tree was looked at and let go (it left nothing running): it was never signalled,
    // and a kill now signals nothing.
    wait_until("the tree is released", || process.released()).await;
    core.kill(&id).await.expect("kill");
    assert!(process.signals().is_empty(), "{:?}", process.signals());
    assert!(process.signals_after_release().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_call_past_its_timeout_gets_term_and_hup_then_kill_after_the_grace() {
    let (core, mut spawned, _dir) = scripted_core("timeout", CoreConfig::default());
    let options = CallOptions {
        timeout: Some(Duration::from_secs(30)),
        kill_grace: Duration::from_secs(2),
        ..CallOptions::default()
    };
    let started = Instant::now();
    let handle = core.start(request("serve", options)).expect("start");
    let process = next_spawn(&mut spawned).await;
    process.ignore(Signal::SIGTERM);
    process.ignore(Signal::SIGHUP);
    let result = handle.result().await;
    assert!(result.timed_out, "{result:?}");
    assert_eq!(process.exited(), Some(ProcessExit::Signal(9)));
    assert_eq!(
        process.signals(),
        [Signal::SIGTERM, Signal::SIGHUP, Signal::SIGKILL]
    );
    // TERM at the timeout, KILL one grace later (looked at every 10 ms).
    let took = started.elapsed();
    assert!(
        (Duration::from_secs(32)..Duration::from_millis(32_100)).contains(&took),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_process_that_waits_for_input_is_marked_after_a_quiet_second_and_can_be_answered() {
    let (core, mut spawned, _dir) = scripted_core("input", CoreConfig::default());
    let handle = core
        .start(request("rm -i x", CallOptions::default()))
        .expect("start");
    let id = handle.id.clone();
    let mut process = next_spawn(&mut spawned).await;
    process.print(b"remove x? ").await;
    let printed = Instant::now();
    process.set_reading(true);
    wait_until("marked as waiting for input", || {
        core.entry(&id)
            .is_ok_and(|entry| entry.waiting_for_input.is_some())
    })
    .await;
    let waited = printed.elapsed();
    assert!(
        (Duration::from_secs(1)..Duration::from_millis(1_300)).contains(&waited),
        "{waited:?}"
    );
    let prompt = core.entry(&id).expect("entry").waiting_for_input;
    assert_eq!(prompt.as_deref(), Some("remove x?"));

    core.write(&id, b"y\r".to_vec()).await.expect("write");
    assert_eq!(process.input().await.as_deref(), Some(&b"y\r"[..]));
    process.set_reading(false);
    process.print(b"y\r\n").await;
    wait_until("the mark goes with new output", || {
        core.entry(&id)
            .is_ok_and(|entry| entry.waiting_for_input.is_none())
    })
    .await;
    process.exit(0);
    assert_eq!(handle.result().await.exit, Some(ProcessExit::Code(0)));
}

/// A full-screen program waiting for keys: its cursor row and its drawing say nothing to an
/// agent, so the detach names the program and the text is its screen, as `task_screen` shows it.
#[tokio::test(start_paused = true)]
async fn a_full_screen_program_is_detached_by_its_name_with_its_screen_as_the_text() {
    const DRAWING: &[u8] = b"\x1b[?1049h\x1b[H\x1b[2Jfirst line of notes\r\n~\r\n~\x1b[1;1H";
    const SCREEN: &str = "first line of notes\n~\n~\n";
    let (core, mut spawned, _dir) = scripted_core("full-screen", CoreConfig::default());
    let options = CallOptions {
        on_input: InputPolicy::Detach,
        ..CallOptions::default()
    };
    let handle = core
        .start(request("/usr/bin/vim notes", options))
        .expect("start");
    let process = next_spawn(&mut spawned).await;
    process.print(DRAWING).await;
    process.set_reading(true);
    let result = handle.result().await;
    let detached = result.detached.expect("detached");
    assert_eq!(detached.reason, "vim (full screen) waits for keys");
    assert_eq!(
        result.text,
        format!(
            "{SCREEN}\n\n[Detached to background task {}: vim (full screen) waits for keys]",
            detached.task_id
        )
    );

    // A person's detach of a full-screen call gives its screen too.
    let handle = core
        .start(request("top", CallOptions::default()))
        .expect("start");
    let id = handle.id.clone();
    let process = next_spawn(&mut spawned).await;
    process.print(DRAWING).await;
    wait_until("the drawing is read", || {
        core.entry(&id).is_ok_and(|entry| entry.bytes > 0)
    })
    .await;
    let task = core.detach(&id, None, "detached").await.expect("detach");
    let result = handle.result().await;
    assert_eq!(
        result.text,
        format!(
            "{SCREEN}\n\n[Detached to background task {}: detached]",
            task.task_id.expect("a task")
        )
    );
}

#[tokio::test(start_paused = true)]
async fn finished_calls_past_the_limit_are_forgotten_and_their_logs_still_named() {
    let config = CoreConfig {
        max_finished: 2,
        ..CoreConfig::default()
    };
    let (core, mut spawned, _dir) = scripted_core("forget", config);
    let mut ids = Vec::new();
    for n in 0..4 {
        let handle = core
            .start(request(&format!("echo {n}"), CallOptions::default()))
            .expect("start");
        let process = next_spawn(&mut spawned).await;
        process.print(format!("{n}\r\n").as_bytes()).await;
        process.exit(0);
        ids.push(handle.id.clone());
        handle.result().await;
    }
    let listed: Vec<String> = core.entries().into_iter().map(|entry| entry.id).collect();
    assert_eq!(listed, ids[2..]);
    for (n, forgotten) in ids[..2].iter().enumerate() {
        match core.entry(forgotten) {
            Err(CoreError::Forgotten {
                key,
                log_path,
                kept,
            }) => {
                assert_eq!((&key, kept), (forgotten, 2));
                let log = std::fs::read_to_string(&log_path).expect("the log stays");
                assert_eq!(log, format!("{n}\r\n"));
            }
            other => panic!("{forgotten} should be forgotten, found {other:?}"),
        }
    }
}

/// A project of `processes` (its file is never read: the core is handed the project).
fn project(label: &str, processes: Vec<ProjectProcess>) -> Project {
    Project {
        name: label.to_owned(),
        file: std::env::temp_dir()
            .join(format!("oino-unit-{label}"))
            .join("oino.toml"),
        processes,
        ignored: Vec::new(),
    }
}

fn process(name: &str, restart: Restart) -> ProjectProcess {
    let mut process = ProjectProcess::new(name, &format!("run-{name}"), std::env::temp_dir());
    process.restart = restart;
    process.restart_limit = 3;
    process.backoff_ms = 100;
    process
}

#[tokio::test(start_paused = true)]
async fn a_crashing_process_is_started_again_after_a_doubling_backoff_up_to_its_limit() {
    let (core, mut spawned, _dir) = scripted_core("backoff", CoreConfig::default());
    let project = project("backoff", vec![process("web", Restart::Always)]);
    core.start_project(&project, &[], None).expect("start");
    let mut exits = Vec::new();
    let mut gaps = Vec::new();
    // The first run and three restarts: each exits 1 at once.
    for _ in 0..4 {
        let run = next_spawn(&mut spawned).await;
        if let Some(exited) = exits.last() {
            gaps.push(Instant::now().duration_since(*exited));
        }
        assert_eq!(run.spec.command, "run-web");
        run.exit(1);
        exits.push(Instant::now());
    }
    let backoffs: Vec<u64> = [100, 200, 400].to_vec();
    for (gap, backoff) in gaps.iter().zip(&backoffs) {
        let backoff = Duration::from_millis(*backoff);
        assert!(
            *gap >= backoff && *gap < backoff + Duration::from_millis(50),
            "gaps {gaps:?}, backoffs {backoffs:?} ms"
        );
    }
    // The limit reached, it is given up: no fifth run, however long one waits.
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_nothing_spawned(&mut spawned, "a fifth run was started");
    assert!(core.project_running(&project.file).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_process_that_ran_longer_than_the_largest_backoff_starts_over_at_its_first() {
    let (core, mut spawned, _dir) = scripted_core("reset", CoreConfig::default());
    let project = project("reset", vec![process("worker", Restart::OnFailure)]);
    core.start_project(&project, &[], None).expect("start");
    next_spawn(&mut spawned).await.exit(1);
    // The second run comes 100 ms later, runs a minute, then fails.
    let second = next_spawn(&mut spawned).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    second.exit(1);
    let failed = Instant::now();
    let third = next_spawn(&mut spawned).await;
    let gap = failed.elapsed();
    assert!(
        (Duration::from_millis(100)..Duration::from_millis(150)).contains(&gap),
        "{gap:?}: the backoff went on doubling"
    );
    // OnFailure: a clean exit is not restarted.
    third.exit(0);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_nothing_spawned(&mut spawned, "started again after exit 0");
}

#[tokio::test(start_paused = true)]
async fn a_process_killed_during_its_backoff_is_not_started_again() {
    let (core, mut spawned, _dir) = scripted_core("stop", CoreConfig::default());
    let mut web = process("web", Restart::Always);
    web.backoff_ms = 5_000;
    let project = project("stop", vec![web]);
    core.start_project(&project, &[], None).expect("start");
    let first = next_spawn(&mut spawned).await;
    first.exit(1);
    wait_until("its run has ended", || {
        core.entry("web")
            .is_ok_and(|entry| !entry.state.is_running())
    })
    .await;
    core.kill("web").await.expect("kill");
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_nothing_spawned(&mut spawned, "started again after a kill");
    assert!(core.project_running(&project.file).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_second_start_of_a_project_starts_nothing_twice_not_even_what_ended() {
    let (core, mut spawned, _dir) = scripted_core("twice", CoreConfig::default());
    let project = project(
        "twice",
        vec![
            process("migrate", Restart::Never),
            process("web", Restart::Never),
        ],
    );
    let started = core.start_project(&project, &[], None).expect("start");
    assert_eq!(started.started, ["migrate", "web"]);
    let migrate = next_spawn(&mut spawned).await;
    let _web = next_spawn(&mut spawned).await;
    migrate.exit(0);
    wait_until("migrate to end", || {
        core.entry("migrate")
            .is_ok_and(|entry| !entry.state.is_running())
    })
    .await;
    wait_until("its supervision to end", || {
        core.project_running(&project.file) == ["web"]
    })
    .await;

    let again = core
        .start_project(&project, &[], None)
        .expect("start again");
    assert!(again.started.is_empty(), "{again:?}");
    assert_eq!(again.running, ["web"]);
    assert_eq!(again.done, ["migrate"]);
    assert_nothing_spawned(&mut spawned, "migrate ran twice");
    // Asked by name, it starts again.
    let by_name = core
        .start_project(&project, &[], Some("migrate"))
        .expect("start migrate");
    assert_eq!(by_name.started, ["migrate"]);
    next_spawn(&mut spawned).await.exit(1);
    wait_until("migrate to fail", || {
        core.project_running(&project.file) == ["web"]
    })
    .await;
    // One that failed is no step done: a start starts it.
    let after_failure = core.start_project(&project, &[], None).expect("start");
    assert_eq!(after_failure.started, ["migrate"]);
    next_spawn(&mut spawned).await.exit(0);
    wait_until("migrate to end", || {
        core.project_running(&project.file) == ["web"]
    })
    .await;
    // Stopped on purpose, the project starts whole again.
    core.stop_project(&project, &[]).await.expect("down");
    let after_down = core.start_project(&project, &[], None).expect("start");
    assert_eq!(after_down.started, ["migrate", "web"]);
}

#[tokio::test(start_paused = true)]
async fn a_process_starts_only_once_the_one_it_comes_after_prints_its_ready_line() {
    let (core, mut spawned, _dir) = scripted_core("after", CoreConfig::default());
    let mut db = process("db", Restart::Never);
    db.ready = Some("listening on \\d+".into());
    let mut web = process("web", Restart::Never);
    web.after = vec![After::ready("db")];
    let project = project("after", vec![db, web]);
    let started = core.start_project(&project, &[], None).expect("start");
    assert_eq!(started.started, ["db", "web"]);

    let db = next_spawn(&mut spawned).await;
    assert_eq!(db.spec.command, "run-db");
    db.print(b"starting\r\n").await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_nothing_spawned(&mut spawned, "web started before db was ready");
    assert_eq!(core.entry("db").expect("db").ready, Some(false));

    db.print(b"listening on 5432\r\n").await;
    let web = next_spawn(&mut spawned).await;
    assert_eq!(web.spec.command, "run-web");
    assert_eq!(core.entry("db").expect("db").ready, Some(true));
}

#[tokio::test(start_paused = true)]
async fn a_detached_call_gives_its_waiter_the_output_so_far_and_goes_on_as_a_task() {
    let (core, mut spawned, _dir) = scripted_core("detach", CoreConfig::default());
    let handle = core
        .start(request("npm run dev", CallOptions::default()))
        .expect("start");
    let id = handle.id.clone();
    let process = next_spawn(&mut spawned).await;
    process.print(b"ready in 300 ms\r\n").await;
    wait_until("the output is recorded", || {
        core.output(&id, Some(0), 1024)
            .is_ok_and(|slice| slice.text.contains("ready"))
    })
    .await;
    let task = core
        .detach(&id, Some("dev"), "detached by a test")
        .await
        .expect("detach");
    let result = handle.result().await;
    assert_eq!(result.exit, None);
    let task_id = task.task_id.expect("a task id");
    assert_eq!(
        result.text,
        format!("ready in 300 ms\n\n\n[Detached to background task {task_id}: detached by a test]")
    );
    // The same process goes on, its output read by its task's name.
    process.print(b"GET / 200\r\n").await;
    wait_until("the task's output is recorded", || {
        core.output("dev", Some(0), 1024)
            .is_ok_and(|slice| slice.text.contains("GET / 200"))
    })
    .await;
    assert!(process.running());
    assert_eq!(
        core.kill("dev").await.expect("kill"),
        EntryState::Killed { signal: 15 }
    );
    assert_eq!(process.signals()[0], Signal::SIGTERM);
}

#[tokio::test(start_paused = true)]
async fn down_stops_each_process_before_those_it_waits_for_and_nothing_starts_again() {
    let (core, mut spawned, _dir) = scripted_core("down", CoreConfig::default());
    let mut db = process("db", Restart::Always);
    db.ready = Some("ready".into());
    let mut web = process("web", Restart::Always);
    web.after = vec![After::ready("db")];
    let mut worker = process("worker", Restart::Always);
    worker.after = vec![After::ready("web")];
    let other = core
        .start(request("an agent's call", CallOptions::default()))
        .expect("start");
    let other_process = next_spawn(&mut spawned).await;
    let project = project("down", vec![db, web, worker]);
    core.start_project(&project, &[], None).expect("start");
    let db = next_spawn(&mut spawned).await;
    db.print(b"ready\r\n").await;
    let web = next_spawn(&mut spawned).await;
    assert_eq!(web.spec.command, "run-web");
    // The worker waits for a web that never prints it is ready (it has no ready line: it is
    // ready at once), so it starts too.
    let worker = next_spawn(&mut spawned).await;

    let stopped = core.stop_project(&project, &[]).await.expect("down");
    assert_eq!(stopped.stopped, ["worker", "web", "db"]);
    assert!(stopped.not_running.is_empty());
    let ended: Vec<_> = [&worker, &web, &db]
        .iter()
        .map(|run| run.exited().is_some())
        .collect();
    assert_eq!(ended, [true, true, true]);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_nothing_spawned(&mut spawned, "a stopped process started again");
    assert!(core.project_running(&project.file).is_empty());
    // Nothing else on the server was touched.
    assert!(other_process.running());
    assert!(other_process.signals().is_empty());
    other_process.exit(0);
    other.result().await;
}

#[tokio::test(start_paused = true)]
async fn down_of_one_process_stops_those_that_wait_for_it_even_before_they_start() {
    let (core, mut spawned, _dir) = scripted_core("down-one", CoreConfig::default());
    let mut db = process("db", Restart::Never);
    db.ready = Some("ready".into());
    let mut web = process("web", Restart::Never);
    web.after = vec![After::ready("db")];
    let cache = process("cache", Restart::Never);
    let project = project("down-one", vec![db, web, cache]);
    core.start_project(&project, &[], None).expect("start");
    let mut runs = vec![
        next_spawn(&mut spawned).await,
        next_spawn(&mut spawned).await,
    ];
    runs.sort_by(|a, b| a.spec.command.cmp(&b.spec.command));
    let [cache, db] = <[ScriptedProcess; 2]>::try_from(runs).expect("two runs");
    assert_eq!(db.spec.command, "run-db");
    // web waits for db, which is not ready: it has not started, and never will.
    let stopped = core
        .stop_project(&project, &["db".to_owned()])
        .await
        .expect("down db");
    assert_eq!(stopped.stopped, ["web", "db"]);
    assert_eq!(db.exited(), Some(ProcessExit::Signal(15)));
    db.print(b"ready\r\n").await;
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_nothing_spawned(&mut spawned, "web started after its project went down");
    assert!(cache.running());
    assert_eq!(core.project_running(&project.file), ["cache"]);
    // A name the file does not have is refused, with the names it has.
    match core.stop_project(&project, &["dbb".to_owned()]).await {
        Err(CoreError::NoSuchProcess { name, names, .. }) => {
            assert_eq!((name.as_str(), names.as_str()), ("dbb", "db, web, cache"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_process_started_after_the_one_it_waits_for_is_ready_starts_at_once() {
    let (core, mut spawned, _dir) = scripted_core("late", CoreConfig::default());
    let mut db = process("db", Restart::Never);
    db.ready = Some("ready".into());
    let mut web = process("web", Restart::Never);
    web.after = vec![After::ready("db")];
    web.autostart = false;
    let project = project("late", vec![db, web]);
    core.start_project(&project, &[], Some("db"))
        .expect("start db");
    let db = next_spawn(&mut spawned).await;
    db.print(b"ready\r\n").await;
    wait_until("db is ready", || {
        core.entry("db")
            .is_ok_and(|entry| entry.ready == Some(true))
    })
    .await;
    // Nobody waited for db when it became ready: web, started now, must still see it.
    let started = core
        .start_project(&project, &[], Some("web"))
        .expect("start web");
    assert_eq!(
        (started.started, started.running),
        (vec!["web".to_owned()], vec!["db".to_owned()])
    );
    let web = next_spawn(&mut spawned).await;
    assert_eq!(web.spec.command, "run-web");
}

mod project_status;
