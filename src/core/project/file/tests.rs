//! Reading project files: what is read, and each mistake with its place.
use super::*;
use pretty_assertions::assert_eq;

fn written(name: &str, text: &str) -> (PathBuf, Result<Project, ProjectError>) {
    let dir = std::env::temp_dir().join(format!(
        "oino-project-{}-{}",
        std::process::id(),
        name.replace('/', "-")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    (dir, Project::load(&file))
}

#[test]
fn a_project_file_is_read_in_start_order() {
    let web =
        std::env::temp_dir().join(format!("oino-project-{}-oino.toml/web", std::process::id()));
    std::fs::create_dir_all(&web).unwrap();
    let (dir, loaded) = written(
        "oino.toml",
        r#"
[processes.web]
cmd = "npm run dev"
cwd = "web"
env = { PORT = "3000" }
after = ["db", "cache"]
restart = "on-failure"
backoff = 0.5

[processes.db]
cmd = "postgres"
ready = "accept connections"

[processes.cache]
cmd = "redis-server"
autostart = false
restart = "always"
restart_limit = 2
"#,
    );
    let project = loaded.unwrap();
    let names: Vec<&str> = project.processes.iter().map(|p| p.name.as_str()).collect();
    // In the file's order: the start order is worked out when they start.
    assert_eq!(names, ["web", "db", "cache"]);
    let web = &project.processes[0];
    assert_eq!(web.cwd, dir.join("web"));
    assert_eq!(web.env, [("PORT".to_owned(), "3000".to_owned())]);
    assert_eq!((web.restart, web.backoff_ms), (Restart::OnFailure, 500));
    assert_eq!(web.restart_limit, DEFAULT_RESTART_LIMIT);
    let cache = &project.processes[2];
    assert_eq!((cache.autostart, cache.restart_limit), (false, 2));
    assert_eq!(
        project.processes[1].ready.as_deref(),
        Some("accept connections")
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn mistakes_are_refused_with_where_and_what_was_expected() {
    let cases = [
        ("[processes.web]\ncmd = 3\n", 2, 7, "invalid type"),
        (
            "[processes.web]\ncmd = \"x\"\ncolor = \"red\"\n",
            3,
            1,
            "unknown key `color`",
        ),
        (
            "[processes.web]\ncmd = \"x\"\nafter = [\"db\"]\n",
            3,
            9,
            "which is no process",
        ),
        (
            "[processes.web]\ncmd = \"x\"\nready = \"(\"\n",
            3,
            9,
            "not a regular expression",
        ),
        (
            "[processes.web]\ncmd = \"x\"\nrestart = \"sometimes\"\n",
            3,
            11,
            "unknown variant",
        ),
        (
            "[processes.\"t3\"]\ncmd = \"x\"\n",
            1,
            12,
            "looks like a task or call id",
        ),
        ("[processes.web]\ncmd = \" \"\n", 2, 7, "cmd is empty"),
        (
            "[processes.web]\ncmd = \"x\"\ncwd = \"nowhere\"\n",
            3,
            7,
            "is no folder",
        ),
        ("[processes.web\ncmd = \"x\"\n", 1, 15, ""),
        (
            "[processes.a]\ncmd = \"x\"\nafter = [\"b\"]\n[processes.b]\ncmd = \"y\"\nafter = [\"a\"]\n",
            1,
            12,
            "wait for each other, so none could start: a -> b -> a",
        ),
        ("# nothing\n", 1, 1, "missing field `processes`"),
        // What the server would refuse to run is refused here, with its place.
        (
            "[processes.web]\ncmd = \"a\\u0000b\"\n",
            2,
            7,
            "contains a NUL byte",
        ),
        (
            "[processes.web]\ncmd = \"x\"\nenv = { \"A=B\" = \"1\" }\n",
            1,
            12,
            "env: \"A=B\" cannot name an environment variable",
        ),
        (
            "[processes.web]\ncmd = \"x\"\nenv = { \"\" = \"1\" }\n",
            1,
            12,
            "cannot name an environment variable",
        ),
    ];
    for (index, (text, line, column, message)) in cases.into_iter().enumerate() {
        let (dir, loaded) = written(&format!("case{index}/oino.toml"), text);
        let err = loaded.unwrap_err();
        assert_eq!((err.line, err.column), (line, column), "{text:?}: {err}");
        assert!(err.message.contains(message), "{text:?}: {err}");
        assert!(
            err.to_string()
                .starts_with(&format!("{}:{line}:{column}: ", err.file.display()))
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn a_procfile_is_read_as_foreman_reads_it() {
    let (dir, loaded) = written(
        "Procfile",
        "# the app\nweb: bundle exec rails s -p $PORT\n\nworker:   sidekiq -c 5\nrelease: rake db:migrate\n",
    );
    let project = loaded.unwrap();
    let read: Vec<(&str, &str)> = project
        .processes
        .iter()
        .map(|p| (p.name.as_str(), p.cmd.as_str()))
        .collect();
    assert_eq!(
        read,
        [
            ("web", "bundle exec rails s -p $PORT"),
            ("worker", "sidekiq -c 5"),
            ("release", "rake db:migrate")
        ]
    );
    assert!(project.processes.iter().all(|p| p.cwd == dir));
    // Heroku's release step (migrations) never starts by itself.
    let autostart: Vec<bool> = project.processes.iter().map(|p| p.autostart).collect();
    assert_eq!(autostart, [true, true, false]);
    for (text, line, column) in [
        ("web: a\nno colon here\n", 2, 1),
        ("web:\n", 1, 5),
        ("web: a\nweb: b\n", 2, 1),
        ("\n# only a comment\n", 1, 1),
    ] {
        let (dir, loaded) = written(&format!("p{line}{column}/Procfile"), text);
        let err = loaded.unwrap_err();
        assert_eq!((err.line, err.column), (line, column), "{text:?}: {err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_folder_has_its_oino_toml_else_its_procfile_else_nothing() {
    let dir = std::env::temp_dir().join(format!("oino-find-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(Project::find(&dir), Ok(None));
    std::fs::write(dir.join(PROCFILE), "worker: sleep 1\n").unwrap();
    assert_eq!(
        Project::find(&dir).unwrap().unwrap().processes[0].name,
        "worker"
    );
    std::fs::write(dir.join(PROJECT_FILE), "[processes.web]\ncmd = \"x\"\n").unwrap();
    assert_eq!(
        Project::find(&dir).unwrap().unwrap().processes[0].name,
        "web"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_command_longer_than_bash_takes_is_refused_at_load_in_either_file() {
    let long = "x".repeat(140 * 1024);
    for (name, text, line, column) in [
        (
            "long/oino.toml",
            format!("[processes.web]\ncmd = \"{long}\"\n"),
            2,
            7,
        ),
        ("long/Procfile", format!("web: {long}\n"), 1, 5),
    ] {
        let (dir, loaded) = written(name, &text);
        let err = loaded.unwrap_err();
        assert_eq!((err.line, err.column), (line, column), "{name}: {err}");
        assert!(
            err.message.contains("more than `bash -c` takes"),
            "{name}: {err}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// A project file with every new key, its `.env` and an env file beside it: its folder, loaded.
fn full_project() -> (PathBuf, Result<Project, ProjectError>) {
    let (dir, _) = written("full/.env", "DB_PORT=5432\nHOST=db.local\n");
    std::fs::write(dir.join("full/.env.local"), "PORT=3000\nDB_PORT=6543\n").unwrap();
    let loaded = beside(
        &dir.join("full/oino.toml"),
        r#"
name = "shop"
env_file = [".env.local"]

[processes.migrate]
cmd = "migrate --db ${HOST}:${DB_PORT}"

[processes.db]
cmd = "postgres -p ${DB_PORT}"
ready_cmd = "pg_isready -p ${DB_PORT}"
ready_interval = 0.5
ready_timeout = 30

[processes.web]
cmd = "serve --port $PORT ${PORT} ${UNSET_HERE}"
env = { URL = "http://${HOST}:${PORT}", PORT = "3001" }
after = { migrate = "succeeded", db = "ready" }
ready_http = "http://127.0.0.1:${PORT}/health"
alive_http = "http://127.0.0.1:${PORT}/alive"
alive_interval = 5
alive_failures = 2
"#,
    );
    (dir, loaded)
}

#[test]
fn conditions_probes_names_and_environment_files_are_read() {
    let (dir, loaded) = full_project();
    let project = loaded.unwrap();
    assert_eq!(project.name, "shop");
    let full = dir.join("full");
    let [migrate, db, web] = &project.processes[..] else {
        panic!("three processes: {project:?}");
    };
    // .env first, the file's env_file over it, a process's own env over both.
    assert_eq!(migrate.cmd, "migrate --db db.local:6543");
    assert_eq!(
        migrate.env_files,
        [full.join(".env"), full.join(".env.local")]
    );
    let ready = Some(Probe::Cmd("pg_isready -p 6543".into()));
    let probes = &db.probes;
    assert_eq!(
        (
            &db.cmd[..],
            &probes.ready,
            probes.ready_interval_ms,
            probes.ready_timeout_ms
        ),
        ("postgres -p 6543", &ready, 500, Some(30_000))
    );
    assert_eq!(web.cmd, "serve --port $PORT 3001 ${UNSET_HERE}");
    assert_env(
        web,
        &[
            ("HOST", "db.local"),
            ("DB_PORT", "6543"),
            ("PORT", "3001"),
            ("URL", "http://db.local:3000"),
        ],
    );
    assert_eq!(
        web.after,
        [
            After {
                name: "db".into(),
                condition: Condition::Ready
            },
            After {
                name: "migrate".into(),
                condition: Condition::Succeeded
            },
        ]
    );
    assert_eq!(
        web.probes.ready,
        Some(Probe::Http("http://127.0.0.1:3001/health".into()))
    );
    assert_eq!(
        (web.probes.alive_interval_ms, web.probes.alive_failures),
        (5000, 2)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_project_with_no_name_is_named_after_its_folder() {
    let (other, loaded) = written("unnamed-shop/oino.toml", "[processes.a]\ncmd = \"x\"\n");
    assert_eq!(loaded.unwrap().name, "unnamed-shop");
    std::fs::remove_dir_all(other).unwrap();
}

#[test]
fn mistakes_in_the_new_keys_are_refused_with_their_place() {
    let cases = [
        (
            "[processes.web]\ncmd = \"x\"\nenv_file = [\"missing.env\"]\n",
            3,
            13,
            "missing.env is no file",
        ),
        (
            "[processes.web]\ncmd = \"x\"\nready_http = \"https://localhost/\"\n",
            3,
            14,
            "is no http:// address",
        ),
        (
            "[processes.web]\ncmd = \"x\"\nready = \"up\"\nready_cmd = \"true\"\n",
            1,
            12,
            "give one way to tell it is ready",
        ),
        (
            "[processes.db]\ncmd = \"y\"\n[processes.web]\ncmd = \"x\"\nafter = { db = \"healthy\" }\n",
            5,
            9,
            "`healthy` is no condition",
        ),
        (
            "[processes.web]\ncmd = \"x\"\nafter = 3\n",
            3,
            9,
            "after is a list of names, or a table",
        ),
        (
            "[processes.web]\ncmd = \"x\"\nready_timeout = -1\n",
            3,
            17,
            "ready_timeout is seconds",
        ),
    ];
    for (index, (text, line, column, message)) in cases.into_iter().enumerate() {
        let (dir, loaded) = written(&format!("new{index}/oino.toml"), text);
        let err = loaded.unwrap_err();
        assert_eq!((err.line, err.column), (line, column), "{text:?}: {err}");
        assert!(err.message.contains(message), "{text:?}: {err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
    // A mistake in an environment file names that file and its line.
    let (dir, _) = written("badenv/.env", "A=1\nnot a line\n");
    let err = beside(&dir.join("badenv/Procfile"), "web: x\n").unwrap_err();
    assert_eq!(err.file, dir.join("badenv/.env"));
    assert_eq!(err.line, 2, "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `process`'s variables are `expected`, in order.
fn assert_env(process: &ProjectProcess, expected: &[(&str, &str)]) {
    let env: Vec<(&str, &str)> = process
        .env
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    assert_eq!(env, expected);
}

/// Writes `text` to `file` and loads it.
fn beside(file: &std::path::Path, text: &str) -> Result<Project, ProjectError> {
    std::fs::write(file, text).unwrap();
    Project::load(file)
}

#[test]
fn a_mistyped_key_is_said_with_the_one_meant() {
    let (dir, loaded) = written(
        "typo/oino.toml",
        "[processes.web]\ncmd = \"x\"\nrestrat = \"always\"\n",
    );
    let err = loaded.unwrap_err();
    assert_eq!((err.line, err.column), (3, 1), "{err}");
    assert!(
        err.to_string()
            .contains("unknown key `restrat`: did you mean `restart`?"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
