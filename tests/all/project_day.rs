//! A project run all day, through the real binary and its server, checked as scripts see it
//! (`oino ls --json`, field by field): the newcomer's web project goes up (a db ready after
//! 2 s, a migration that must succeed, web ready by HTTP, a watcher, `.env`), is edited and
//! applied, loses its db and gets it back, and goes down; blocked and given-up processes say
//! why; probes start and restart processes. A process-compose file and an mprocs file go up as
//! they are, and what oino does not take of them is said.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{DEADLINE, ServerGuard, temp_dir};

/// `oino ls --json` (with `--all`, earlier runs too), as JSON.
fn ls(server: &ServerGuard, all: bool) -> Vec<Value> {
    let mut args = vec!["ls", "--json"];
    if all {
        args.push("--all");
    }
    let output = server.oino(&args).output().expect("oino ls");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("JSON")
}

/// The row of the project's process `name` (one per process).
fn row(rows: &[Value], name: &str) -> Option<Value> {
    let mut found = rows
        .iter()
        .filter(|row| row["process"] == name)
        .cloned()
        .collect::<Vec<_>>();
    assert!(found.len() <= 1, "one row per process: {found:?}");
    found.pop()
}

/// Waits until the row of `name` `holds`; the row.
fn wait_row(server: &ServerGuard, name: &str, what: &str, holds: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let rows = ls(server, false);
        if let Some(row) = row(&rows, name).filter(|row| holds(row)) {
            return row;
        }
        assert!(Instant::now() < deadline, "never: {name} {what}: {rows:#?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `oino ARGS` in `dir`: its status and what it said (stderr, then stdout).
fn oino_in(server: &ServerGuard, dir: &Path, args: &[&str]) -> (bool, String) {
    let output = server
        .oino(args)
        .current_dir(dir)
        .output()
        .expect("oino runs");
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        ),
    )
}

/// Waits until the output of `name` holds `text`.
fn wait_log(server: &ServerGuard, dir: &Path, name: &str, text: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (_, logs) = oino_in(server, dir, &["logs", name]);
        if logs.contains(text) {
            return;
        }
        assert!(Instant::now() < deadline, "never: {text} in {name}: {logs}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    listener.local_addr().expect("address").port()
}

const SHOP: &str = r#"
name = "shop"

[processes.db]
cmd = "echo starting ${DB_NAME}; sleep 2; echo ready to accept connections; exec sleep 600"
ready = "ready to accept connections"
restart = "always"
backoff = 0.2

[processes.migrate]
cmd = "echo migrated ${DB_NAME}"
after = ["db"]

[processes.web]
cmd = "exec python3 -m http.server ${PORT} --bind 127.0.0.1"
after = { db = "ready", migrate = "succeeded" }
ready_http = "http://127.0.0.1:${PORT}/"
ready_interval = 0.2

[processes.watch]
cmd = "echo watching; exec sleep 600"
"#;

#[test]
fn the_newcomers_web_project_goes_up_is_applied_loses_its_db_and_goes_down() {
    let server = ServerGuard::new("day-shop");
    let dir = temp_dir("day-shop");
    let port = free_port();
    std::fs::write(dir.join(".env"), format!("DB_NAME=shopdb\nPORT={port}\n")).expect(".env");
    std::fs::write(dir.join("oino.toml"), SHOP).expect("oino.toml");

    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    assert_eq!(
        said,
        "db: started\nmigrate: started\nweb: started\nwatch: started\n"
    );
    // db takes 2 s: web waits, and says for what.
    let web = wait_row(&server, "web", "waits for db", |row| {
        row["state"] == "waiting"
    });
    assert_eq!(web["project"], "shop");
    assert_eq!(web["waiting_for"][0], "db");
    assert_eq!(web["restarts"], 0);
    let web = wait_row(&server, "web", "answers HTTP", |row| {
        row["state"] == "running" && row["ready"] == true
    });
    assert!(
        web["command"].as_str().unwrap().contains(&port.to_string()),
        "{web}"
    );
    let migrate = wait_row(&server, "migrate", "succeeded", |row| {
        row["state"] == "exited"
    });
    assert_eq!(migrate["code"], 0);
    let (_, logs) = oino_in(&server, &dir, &["logs", "migrate"]);
    assert!(logs.contains("migrated shopdb"), "{logs}");

    // Edited: the watcher's command changed. It is listed as changed, then applied.
    std::fs::write(
        dir.join("oino.toml"),
        SHOP.replace("echo watching;", "echo watching v2;"),
    )
    .expect("edit");
    let watch = wait_row(&server, "watch", "changed", |row| row["state"] == "changed");
    assert_eq!(watch["change"], "cmd");
    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    assert!(said.contains("watch: restarted (cmd changed)\n"), "{said}");
    assert!(said.contains("db: unchanged\n"), "{said}");
    let watch = wait_row(&server, "watch", "runs v2", |row| {
        row["state"] == "running" && row["command"].as_str().unwrap().contains("v2")
    });
    assert_eq!(watch["run"], 2);

    // db is killed from outside: restarted by its policy, counted.
    let db = row(&ls(&server, false), "db").expect("db");
    let pid = i32::try_from(db["pid"].as_u64().unwrap()).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill db");
    let db = wait_row(&server, "db", "restarted and ready", |row| {
        row["restarts"] == 1 && row["state"] == "running" && row["ready"] == true
    });
    assert_eq!(db["run"], 2);
    let earlier: Vec<Value> = ls(&server, true)
        .into_iter()
        .filter(|row| row["process"] == "db" && row["superseded"] == true)
        .collect();
    assert_eq!(earlier.len(), 1, "{earlier:?}");
    assert_eq!(earlier[0]["run"], 1);
    // The earlier run's output is still there, by its number.
    let (ok, first) = oino_in(&server, &dir, &["logs", "db", "--run", "1"]);
    assert!(ok && first.contains("starting shopdb"), "{first}");
    let (ok, said) = oino_in(&server, &dir, &["logs", "db", "--run", "9"]);
    assert!(
        !ok && said.contains("`db` has no run 9: its runs kept are 1, 2"),
        "{said}"
    );

    let (ok, said) = oino_in(&server, &dir, &["down"]);
    assert!(ok, "{said}");
    // Each before what it waits for; migrate had ended.
    assert_eq!(
        said,
        "stopped web\nstopped db\nstopped watch\nmigrate was not running\n"
    );
    let rows = ls(&server, false);
    assert!(
        rows.iter().all(|row| row["state"] != "running"),
        "{rows:#?}"
    );
}

#[test]
fn a_process_whose_dependency_failed_is_listed_blocked_with_why() {
    let server = ServerGuard::new("day-blocked");
    let dir = temp_dir("day-blocked");
    std::fs::write(
        dir.join("oino.toml"),
        "[processes.migrate]\ncmd = \"echo no database; exit 1\"\n\n\
         [processes.web]\ncmd = \"echo web; sleep 600\"\nafter = { migrate = \"succeeded\" }\n",
    )
    .expect("oino.toml");
    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    let web = wait_row(&server, "web", "blocked", |row| row["state"] == "blocked");
    assert_eq!(web["reason"], "migrate exited 1");
    assert_eq!(web["pid"], 0);
    let (_, table) = oino_in(&server, &dir, &["ls"]);
    assert!(
        table.contains("⊘ web is blocked: migrate exited 1"),
        "{table}"
    );
    // `oino up` again says why web does not run (migrate, started again, fails again).
    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    assert!(
        said.contains("web: unchanged (blocked: migrate exited 1)")
            || said.contains("web: unchanged (waits for migrate)"),
        "{said}"
    );
    wait_row(&server, "web", "blocked again", |row| {
        row["state"] == "blocked" && row["reason"] == "migrate exited 1"
    });
}

#[test]
fn probes_tell_ready_and_restart_what_stops_answering_and_a_crash_loop_gives_up() {
    let server = ServerGuard::new("day-probes");
    let dir = temp_dir("day-probes");
    std::fs::write(dir.join("alive"), "").expect("alive");
    std::fs::write(
        dir.join("oino.toml"),
        "[processes.api]\ncmd = \"echo api; exec sleep 600\"\nready_cmd = \"test -e ready\"\n\
         ready_interval = 0.1\nalive_cmd = \"test -e alive\"\nalive_interval = 0.2\n\
         alive_failures = 2\nrestart = \"on-failure\"\nbackoff = 0.1\n\n\
         [processes.crash]\ncmd = \"echo crashing; exit 3\"\nrestart = \"always\"\n\
         restart_limit = 2\nbackoff = 0.1\n",
    )
    .expect("oino.toml");
    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    let api = wait_row(&server, "api", "running", |row| row["state"] == "running");
    assert_eq!(api["ready"], false);
    std::fs::write(dir.join("ready"), "").expect("ready");
    wait_row(&server, "api", "ready", |row| row["ready"] == true);
    // It stops answering: ended, and started again by its policy.
    std::fs::remove_file(dir.join("alive")).expect("not alive");
    let api = wait_row(&server, "api", "restarted", |row| row["restarts"] == 1);
    assert_eq!(api["run"], 2);
    std::fs::write(dir.join("alive"), "").expect("alive again");
    // The crash loop: two restarts, then it is left ended, and says so.
    let crash = wait_row(&server, "crash", "gave up", |row| row["state"] == "gave_up");
    assert_eq!(
        (crash["code"].clone(), crash["restarts"].clone()),
        (3.into(), 2.into())
    );
    let (_, table) = oino_in(&server, &dir, &["ls"]);
    assert!(
        table.contains("✗ crash gave up after 2 restarts"),
        "{table}"
    );
    // Started again by hand, it is supervised again.
    let (ok, said) = oino_in(&server, &dir, &["restart", "crash"]);
    assert!(ok, "{said}");
    wait_row(&server, "crash", "given up again", |row| {
        row["state"] == "gave_up" && row["restarts"] == 5
    });
}

#[test]
fn the_readmes_project_file_with_every_key_runs_as_it_says() {
    let readme = include_str!("../../README.md");
    let section = &readme[readme.find("## A project file").expect("the section")..];
    let start = section.find("```toml\n").expect("its example") + "```toml\n".len();
    let end = start + section[start..].find("```").expect("its end");
    let server = ServerGuard::new("day-readme");
    let dir = temp_dir("day-readme");
    let port = free_port();
    std::fs::write(dir.join("oino.toml"), &section[start..end]).expect("oino.toml");
    std::fs::write(
        dir.join(".env.local"),
        format!("DB_NAME=shopdb\nPORT={port}\n"),
    )
    .expect(".env.local");
    std::fs::write(dir.join(".env.web"), "GREETING=hi\n").expect(".env.web");
    std::fs::create_dir_all(dir.join("public")).expect("public");

    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    assert!(
        said.contains("docs: not started (autostart = false)"),
        "{said}"
    );
    wait_row(&server, "db", "ready", |row| row["ready"] == true);
    let migrate = wait_row(&server, "migrate", "done", |row| row["state"] == "exited");
    assert_eq!(migrate["code"], 0);
    let (_, logs) = oino_in(&server, &dir, &["logs", "migrate"]);
    assert!(logs.contains("migrating shopdb"), "{logs}");
    let web = wait_row(&server, "web", "ready", |row| row["ready"] == true);
    assert_eq!(web["project"], "shop");
    assert_eq!(web["cwd"], dir.join("public").to_str().unwrap());
    wait_row(&server, "worker", "ready", |row| row["ready"] == true);
    let (ok, said) = oino_in(&server, &dir, &["up", "docs"]);
    assert!(ok, "{said}");
    assert!(said.contains("docs: started"), "{said}");
    wait_row(&server, "docs", "running", |row| row["state"] == "running");
    let (ok, said) = oino_in(&server, &dir, &["down"]);
    assert!(ok, "{said}");
    let rows = ls(&server, false);
    assert!(
        rows.iter().all(|row| row["state"] != "running"),
        "{rows:#?}"
    );
}

#[test]
fn a_procfiles_processes_are_listed_in_the_files_order() {
    let server = ServerGuard::new("day-procfile");
    let dir = temp_dir("day-procfile");
    std::fs::write(
        dir.join("Procfile"),
        "db: echo db; exec sleep 600\nweb: echo web; exec sleep 600\nwatch: echo watch; exec sleep 600\n",
    )
    .expect("Procfile");
    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    for name in ["db", "web", "watch"] {
        wait_row(&server, name, "running", |row| row["state"] == "running");
    }
    let order: Vec<Value> = ls(&server, false)
        .iter()
        .map(|row| row["process"].clone())
        .collect();
    assert_eq!(order, ["db", "web", "watch"]);
}

/// The newcomer's web project as a process-compose.yaml: db ready once it prints its line, a
/// migration that must succeed, web ready by HTTP after both, a watcher, `.env` for the names.
fn compose(port: u16) -> String {
    format!(
        r#"version: "0.5"
processes:
  db:
    command: "echo starting ${{DB_NAME}}; sleep 2; echo ready to accept connections; exec sleep 600"
    ready_log_line: ready to accept connections
    availability:
      restart: always
  migrate:
    command: "echo migrated ${{DB_NAME}}"
    depends_on:
      db:
        condition: process_log_ready
  web:
    command: "exec python3 -m http.server ${{PORT}} --bind 127.0.0.1"
    namespace: shop
    depends_on:
      db:
        condition: process_log_ready
      migrate:
        condition: process_completed_successfully
    readiness_probe:
      http_get:
        host: 127.0.0.1
        port: {port}
        path: /
      period_seconds: 1
  watch:
    command: "echo watching; exec sleep 600"
"#
    )
}

#[test]
fn a_process_compose_file_goes_up_as_it_is_and_says_what_it_ignored() {
    let server = ServerGuard::new("day-compose");
    let dir = temp_dir("day-compose");
    let port = free_port();
    std::fs::write(dir.join(".env"), format!("DB_NAME=shopdb\nPORT={port}\n")).expect(".env");
    std::fs::write(dir.join("process-compose.yaml"), compose(port)).expect("process-compose.yaml");

    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    // What oino does not take is said first, with its place, then what was done.
    assert_eq!(
        said,
        "ignored: version at process-compose.yaml:1:1\n\
         ignored: namespace at process-compose.yaml:15:5\n\
         db: started\nmigrate: started\nweb: started\nwatch: started\n"
    );
    let folder = dir.file_name().unwrap().to_string_lossy().into_owned();
    let web = wait_row(&server, "web", "waits for db", |row| {
        row["state"] == "waiting"
    });
    assert_eq!(web["project"], folder.as_str());
    assert_eq!(web["waiting_for"][0], "db");
    let db = wait_row(&server, "db", "ready", |row| row["ready"] == true);
    assert_eq!(db["project"], folder.as_str());
    let migrate = wait_row(&server, "migrate", "done", |row| row["state"] == "exited");
    assert_eq!(migrate["code"], 0);
    wait_log(&server, &dir, "migrate", "migrated shopdb");
    let web = wait_row(&server, "web", "answers HTTP", |row| {
        row["state"] == "running" && row["ready"] == true
    });
    assert_eq!(web["restarts"], 0);
    wait_log(&server, &dir, "watch", "watching");

    let (ok, said) = oino_in(&server, &dir, &["down"]);
    assert!(ok, "{said}");
    assert!(
        said.ends_with("stopped db\nstopped watch\nmigrate was not running\n"),
        "{said}"
    );
}

/// An mprocs project: a shell line, a program with its arguments, one started by hand.
const MPROCS: &str = r#"hide_keymap_window: true
procs:
  api:
    shell: "echo api on $PORT; exec sleep 600"
    env:
      PORT: 4000
  worker:
    cmd: ["bash", "-c", "echo \"worker's up\"; exec sleep 600"]
  later:
    shell: "echo later"
    autostart: false
"#;

#[test]
fn an_mprocs_file_goes_up_as_it_is_and_says_what_it_ignored() {
    let server = ServerGuard::new("day-mprocs");
    let dir = temp_dir("day-mprocs");
    std::fs::write(dir.join("mprocs.yaml"), MPROCS).expect("mprocs.yaml");

    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    assert_eq!(
        said,
        "ignored: hide_keymap_window at mprocs.yaml:1:1\n\
         api: started\nworker: started\nlater: not started (autostart = false)\n"
    );
    let folder = dir.file_name().unwrap().to_string_lossy().into_owned();
    for name in ["api", "worker"] {
        let row = wait_row(&server, name, "runs", |row| row["state"] == "running");
        assert_eq!(row["project"], folder.as_str());
    }
    wait_log(&server, &dir, "api", "api on 4000");
    wait_log(&server, &dir, "worker", "worker's up");
    let (ok, said) = oino_in(&server, &dir, &["down"]);
    assert!(ok, "{said}");
}

#[test]
fn up_after_a_crash_starts_nothing_twice_while_the_earlier_run_survives() {
    let server = ServerGuard::new("day-orphan");
    let dir = temp_dir("day-orphan");
    // A server that ignores the hang-up its terminal's end sends: it outlives a killed server,
    // and holds its port.
    std::fs::write(
        dir.join("oino.toml"),
        "[processes.web]\ncmd = \"trap '' HUP; exec sleep 600\"\n",
    )
    .expect("oino.toml");
    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok && said.contains("web: started"), "{said}");
    wait_row(&server, "web", "to run", |row| row["state"] == "running");
    crate::support::kill_server_outright(&server.socket);
    // The next server lists the survivor; `up` starts no second web beside it.
    let orphan = loop_until_orphan(&server);
    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok, "{said}");
    assert!(
        said.contains(&format!(
            "web: not started (its earlier run still runs as {orphan}: `oino kill {orphan}`, \
             then `oino up`)"
        )),
        "{said}"
    );
    let (ok, said) = oino_in(&server, &dir, &["start", "web"]);
    assert!(
        !ok && said.contains(&format!("still runs as {orphan}")),
        "{said}"
    );
    let running: Vec<Value> = ls(&server, true)
        .into_iter()
        .filter(|row| row["state"] == "running")
        .collect();
    assert!(running.is_empty(), "nothing started twice: {running:#?}");
    // Once it is ended, `up` starts web again.
    let (ok, said) = oino_in(&server, &dir, &["kill", &orphan]);
    assert!(ok, "{said}");
    let (ok, said) = oino_in(&server, &dir, &["up"]);
    assert!(ok && said.contains("web: started"), "{said}");
    let (ok, said) = oino_in(&server, &dir, &["down"]);
    assert!(ok, "{said}");
}

/// The id of the orphan the new server lists, once it lists one.
fn loop_until_orphan(server: &ServerGuard) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let rows = ls(server, true);
        if let Some(orphan) = rows.iter().find(|row| row["state"] == "orphaned") {
            return orphan["id"].as_str().expect("an id").to_owned();
        }
        assert!(Instant::now() < deadline, "no orphan listed: {rows:#?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_env_file_with_a_nul_byte_is_refused_at_its_line_and_a_bom_is_no_part_of_it() {
    let server = ServerGuard::new("day-env-bytes");
    let dir = temp_dir("day-env-bytes");
    std::fs::write(
        dir.join("oino.toml"),
        "[processes.web]\ncmd = \"echo port=$PORT token=$TOKEN; sleep 600\"\n",
    )
    .expect("oino.toml");
    std::fs::write(dir.join(".env"), "PORT=3000\nTOKEN=ab\0cd\n").expect(".env");
    let (ok, said) = oino_in(&server, &dir, &["start", "web"]);
    assert!(!ok, "{said}");
    assert!(said.contains(".env:2:1:") && said.contains("NUL"), "{said}");
    let status = server
        .oino(&["start", "web"])
        .current_dir(&dir)
        .output()
        .expect("oino start");
    assert_eq!(status.status.code(), Some(2));
    assert!(ls(&server, true).is_empty(), "nothing started");
    // A byte order mark, as a Windows editor writes one, is read past.
    std::fs::write(dir.join(".env"), "\u{feff}PORT=3000\nTOKEN=abcd\n").expect(".env");
    let (ok, said) = oino_in(&server, &dir, &["start", "web"]);
    assert!(ok, "{said}");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (_, logs) = oino_in(&server, &dir, &["logs", "web"]);
        if logs.contains("port=3000 token=abcd") {
            break;
        }
        assert!(Instant::now() < deadline, "never: {logs}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (ok, said) = oino_in(&server, &dir, &["down"]);
    assert!(ok, "{said}");
}
