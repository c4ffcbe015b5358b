//! Reading process-compose files: what is taken, what is listed as ignored, and each mistake
//! with its place.
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::super::{
    After, Condition, FileError, PROCFILE, Probe, Project, ProjectError, ProjectProcess, Restart,
};
use pretty_assertions::assert_eq;

/// A folder of its own for a test, with `files` written in it.
fn folder(label: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oino-compose-{}-{label}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir.canonicalize().unwrap()
}

/// `text` as `process-compose.yaml` in a folder of its own, loaded.
fn loaded(label: &str, text: &str) -> (PathBuf, Result<Project, ProjectError>) {
    let dir = folder(label, &[("process-compose.yaml", text)]);
    let loaded = Project::load(&dir.join("process-compose.yaml"));
    (dir, loaded)
}

const WEB: &str = r#"version: "0.5"
environment:
  - "APP_ENV=dev"
processes:
  db:
    command: "postgres -D data -p ${DB_PORT}"
    readiness_probe:
      exec:
        command: "pg_isready -p ${DB_PORT}"
      period_seconds: 0.5
      initial_delay_seconds: 2
  migrate:
    command: rake db:migrate
    depends_on:
      db:
        condition: process_healthy
  web:
    command: "rails s -p $PORT"
    working_dir: web
    environment:
      - "PORT=3000"
      - "URL=http://localhost:${PORT}"
    namespace: shop
    depends_on:
      db:
        condition: process_healthy
      migrate:
        condition: process_completed_successfully
    liveness_probe:
      http_get:
        host: 127.0.0.1
        port: 3000
        path: health
      period_seconds: 5
      failure_threshold: 2
    availability:
      restart: on_failure
      max_restarts: 3
      backoff_seconds: 2
  worker:
    command: sidekiq
    disabled: true
    ready_log_line: "Booted (v1)"
"#;

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

#[test]
fn a_web_project_reads_into_the_project_it_describes_and_says_what_it_ignored() {
    let dir = folder(
        "web",
        &[
            ("process-compose.yaml", WEB),
            (".env", "DB_PORT=5432\n"),
            ("web/.keep", ""),
        ],
    );
    let file = dir.join("process-compose.yaml");
    let project = Project::load(&file).unwrap();
    let common = vars(&[("DB_PORT", "5432"), ("APP_ENV", "dev")]);
    let with_env = |mut process: ProjectProcess, env: Vec<(String, String)>| {
        process.env = env;
        process.env_files = vec![dir.join(".env")];
        process
    };
    let mut db = ProjectProcess::new("db", "postgres -D data -p 5432", dir.clone());
    db.probes.ready = Some(Probe::Cmd("pg_isready -p 5432".into()));
    db.probes.ready_interval_ms = 500;
    let mut migrate = ProjectProcess::new("migrate", "rake db:migrate", dir.clone());
    migrate.after = vec![After::ready("db")];
    let mut web = ProjectProcess::new("web", "rails s -p $PORT", dir.join("web"));
    web.after = vec![
        After::ready("db"),
        After {
            name: "migrate".into(),
            condition: Condition::Succeeded,
        },
    ];
    web.probes.alive = Some(Probe::Http("http://127.0.0.1:3000/health".into()));
    web.probes.alive_interval_ms = 5000;
    web.probes.alive_failures = 2;
    (web.restart, web.restart_limit, web.backoff_ms) = (Restart::OnFailure, 3, 2000);
    let mut worker = ProjectProcess::new("worker", "sidekiq", dir.clone());
    worker.autostart = false;
    // The line as written: its parentheses are no group.
    worker.ready = Some(r"Booted \(v1\)".into());
    let mut web_env = common.clone();
    web_env.extend(vars(&[("PORT", "3000"), ("URL", "http://localhost:3000")]));
    let expected = Project {
        name: dir.file_name().unwrap().to_string_lossy().into_owned(),
        file: file.clone(),
        processes: vec![
            with_env(db, common.clone()),
            with_env(migrate, common.clone()),
            with_env(web, web_env),
            with_env(worker, common),
        ],
        ignored: vec![
            "version at process-compose.yaml:1:1".into(),
            "initial_delay_seconds at process-compose.yaml:11:7".into(),
            "namespace at process-compose.yaml:23:5".into(),
        ],
    };
    assert_eq!(project, expected);
    // Found in a folder before a Procfile.
    std::fs::write(dir.join(PROCFILE), "other: true\n").unwrap();
    assert_eq!(Project::find(&dir).unwrap(), Some(expected));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn merged_keys_are_taken_and_what_they_ignore_is_listed_once() {
    let (dir, loaded) = loaded(
        "merge",
        "x-common: &common\n  working_dir: .\n  is_daemon: false\n\
         processes:\n  a:\n    <<: *common\n    command: one\n  b:\n    <<: *common\n    \
         command: two\n    disable_ansi_colors: true\n",
    );
    let project = loaded.unwrap();
    let commands: Vec<&str> = project.processes.iter().map(|p| p.cmd.as_str()).collect();
    assert_eq!(commands, ["one", "two"]);
    assert_eq!(
        project.ignored,
        [
            "x-common at process-compose.yaml:1:1",
            "is_daemon at process-compose.yaml:3:3",
            "disable_ansi_colors at process-compose.yaml:11:5",
        ]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_restart_policies_read_as_oinos_and_exit_on_failure_is_said_to_be_read_in_part() {
    let (dir, loaded) = loaded(
        "restart",
        "processes:\n  a:\n    command: x\n    availability:\n      restart: exit_on_failure\n      \
         max_restarts: 0\n      exit_on_end: true\n  b:\n    command: y\n    availability:\n      \
         restart: always\n  c:\n    command: z\n    availability:\n      restart: \"no\"\n",
    );
    let project = loaded.unwrap();
    let read: Vec<(Restart, u32)> = project
        .processes
        .iter()
        .map(|p| (p.restart, p.restart_limit))
        .collect();
    // process-compose's max_restarts: 0 is no limit.
    assert_eq!(
        read,
        [
            (Restart::OnFailure, u32::MAX),
            (Restart::Always, 5),
            (Restart::Never, 5)
        ]
    );
    assert_eq!(
        project.ignored,
        [
            "exit_on_failure's exit (read as on_failure: oino stops nothing else when it fails) \
             at process-compose.yaml:5:16",
            "exit_on_end at process-compose.yaml:7:7",
        ]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Each of `cases` (a file, the line and column of its mistake, what the message says) is
/// refused so.
fn refused(cases: &[(&str, usize, usize, &str)]) {
    for (text, line, column, message) in cases {
        static CASES: AtomicUsize = AtomicUsize::new(0);
        let label = format!("case{}", CASES.fetch_add(1, Ordering::Relaxed));
        let (dir, loaded) = loaded(&label, text);
        let err: FileError = loaded.unwrap_err();
        assert_eq!((err.line, err.column), (*line, *column), "{text:?}: {err}");
        assert!(err.message.contains(message), "{text:?}: {err}");
        assert!(
            err.to_string()
                .starts_with(&format!("{}:{line}:{column}: ", err.file.display())),
            "{err}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn what_is_not_yaml_or_holds_no_processes_is_refused_with_its_place() {
    // YAML itself, and a file with nothing to run.
    refused(&[
        (
            "processes:\n  web:\n    command: [x\n",
            4,
            1,
            "this is not YAML",
        ),
        ("processes:\n  web: {command: x\n", 3, 1, "this is not YAML"),
        (
            "processes:\n  web:\n    command: x\n  web:\n    command: y\n",
            4,
            3,
            "duplicated key",
        ),
        ("processes: {}\n", 1, 1, "no processes"),
        (
            "version: \"0.5\"\n",
            1,
            1,
            "no processes: a process-compose file",
        ),
        ("", 1, 1, "no processes"),
        (
            "processes:\n  web:\n    command: x\n---\nprocesses: {}\n",
            5,
            1,
            "a second YAML document",
        ),
    ]);
}

#[test]
fn mistakes_in_processes_and_what_they_wait_for_are_refused_with_their_place() {
    // Names, commands, folders, and waits with their conditions.
    refused(&[
        (
            "processes:\n  web:\n    command: x\n    depends_on:\n      db:\n        \
             condition: process_started\n",
            5,
            7,
            "depends_on names `db`, which is no process of this file (they are: web)",
        ),
        (
            "processes:\n  web:\n    command: 3\n",
            3,
            14,
            "command is text, not a number",
        ),
        (
            "processes:\n  a:\n    command: x\n    depends_on: {b: {}}\n  b:\n    command: y\n    \
             depends_on: {a: {}}\n",
            2,
            3,
            "wait for each other, so none could start: a -> b -> a",
        ),
        (
            "processes:\n  web:\n    command: \"a\\0b\"\n",
            3,
            14,
            "contains a NUL byte",
        ),
        (
            "processes:\n  web:\n    command: \" \"\n",
            3,
            14,
            "is empty",
        ),
        (
            "processes:\n  web:\n    working_dir: .\n",
            2,
            3,
            "web has no command",
        ),
        (
            "processes:\n  t3:\n    command: x\n",
            2,
            3,
            "looks like a task",
        ),
        (
            "processes:\n  db:\n    command: x\n  web:\n    command: y\n    depends_on:\n      \
             db:\n        condition: process_ready\n",
            8,
            20,
            "`process_ready` is no condition",
        ),
        (
            "processes:\n  web:\n    command: x\n    working_dir: nowhere\n",
            4,
            18,
            "is no folder",
        ),
    ]);
}

#[test]
fn mistakes_in_policies_variables_and_probes_are_refused_with_their_place() {
    // Restart policies, variables and probes.
    refused(&[
        (
            "processes:\n  web:\n    command: x\n    liveness_probe:\n      http_get:\n        \
             scheme: https\n        port: 443\n",
            6,
            17,
            "scheme https: probes ask servers on this machine in plain HTTP",
        ),
        (
            "processes:\n  web:\n    command: x\n    availability:\n      restart: sometimes\n",
            5,
            16,
            "`sometimes` is no restart policy",
        ),
        (
            "processes:\n  web:\n    command: x\n    environment:\n      - PORT\n",
            5,
            9,
            "an environment item is NAME=value",
        ),
        (
            "processes:\n  web:\n    command: x\n    environment: {PORT: 1}\n",
            4,
            18,
            "environment is a list, not a mapping",
        ),
        (
            "processes:\n  web:\n    command: x\n    readiness_probe:\n      period_seconds: 1\n",
            5,
            7,
            "a probe has exec or http_get",
        ),
        (
            "processes:\n  web:\n    command: x\n    ready_log_line: up\n    readiness_probe:\n      \
             exec: {command: 'true'}\n",
            6,
            7,
            "give one way to tell it is ready",
        ),
    ]);
}

#[test]
fn a_file_that_nests_too_deep_is_refused_before_it_is_built() {
    // Deep enough to overflow the stack were it built by recursion.
    let deep = format!("processes:\n  web:\n    {}x\n", "- ".repeat(200_000));
    let (dir, read) = loaded("deep", &deep);
    let err = read.unwrap_err();
    assert!(err.message.contains("nests deeper than 64"), "{err}");
    assert_eq!(err.line, 3, "{err}");
    std::fs::remove_dir_all(dir).unwrap();
    // Aliases count as deep as what they stand for.
    let mut text = "a0: &a0 [x]\n".to_owned();
    for level in 1..40 {
        let before = level - 1;
        writeln!(text, "a{level}: &a{level} [[*a{before}]]").unwrap();
    }
    text.push_str("processes: {web: {command: x}}\n");
    let (dir, read) = loaded("aliases", &text);
    let err = read.unwrap_err();
    assert!(err.message.contains("nests deeper than 64"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_yaml_file_of_neither_kind_is_refused_and_yml_is_found_after_yaml() {
    let dir = folder(
        "kinds",
        &[
            ("process-compose.yml", "processes:\n  b:\n    command: y\n"),
            ("mprocs.yaml", "procs:\n  c: z\n"),
            (PROCFILE, "d: w\n"),
        ],
    );
    let found = |dir: &std::path::Path| {
        Project::find(dir).unwrap().unwrap().processes[0]
            .name
            .clone()
    };
    assert_eq!(found(&dir), "b");
    std::fs::write(
        dir.join("process-compose.yaml"),
        "processes:\n  a:\n    command: x\n",
    )
    .unwrap();
    assert_eq!(found(&dir), "a");
    std::fs::remove_file(dir.join("process-compose.yaml")).unwrap();
    std::fs::remove_file(dir.join("process-compose.yml")).unwrap();
    assert_eq!(found(&dir), "c");
    std::fs::write(dir.join("other.yaml"), "services:\n  web: {}\n").unwrap();
    let err = Project::load(&dir.join("other.yaml")).unwrap_err();
    assert_eq!((err.line, err.column), (1, 1), "{err}");
    assert!(err.message.contains("`procs:`"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_zero_period_or_threshold_is_the_default_and_a_period_below_the_floor_is_refused() {
    let zero = "processes:\n  db:\n    command: postgres\n    readiness_probe:\n      exec: { command: pg_isready }\n      period_seconds: 0\n    liveness_probe:\n      exec: { command: pg_isready }\n      period_seconds: 0\n      failure_threshold: 0\n";
    let (_, project) = loaded("zero-period", zero);
    let probes = &project.unwrap().processes[0].probes;
    let defaults = super::super::Probes::default();
    assert_eq!(
        (
            probes.ready_interval_ms,
            probes.alive_interval_ms,
            probes.alive_failures
        ),
        (
            defaults.ready_interval_ms,
            defaults.alive_interval_ms,
            defaults.alive_failures
        )
    );
    let (_, refused) = loaded(
        "tiny-period",
        &zero.replacen("period_seconds: 0", "period_seconds: 0.001", 1),
    );
    let err = refused.unwrap_err().to_string();
    assert!(
        err.contains(":6:23: period_seconds is at least 0.1"),
        "{err}"
    );
}
