//! Reading mprocs files: what is taken, what is listed as ignored, and each mistake with its
//! place.
use std::path::PathBuf;

use super::super::{Project, ProjectError, ProjectProcess, Restart};
use super::quoted;
use pretty_assertions::assert_eq;

/// `text` as `mprocs.yaml` in a folder of its own (with `.env` and `web/`), loaded.
fn loaded(label: &str, text: &str) -> (PathBuf, Result<Project, ProjectError>) {
    let dir = std::env::temp_dir().join(format!("oino-mprocs-{}-{label}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("web")).unwrap();
    std::fs::write(dir.join(".env"), "HOST=localhost\n").unwrap();
    std::fs::write(dir.join("mprocs.yaml"), text).unwrap();
    let dir = dir.canonicalize().unwrap();
    let loaded = Project::load(&dir.join("mprocs.yaml"));
    (dir, loaded)
}

const DEV: &str = r#"hide_keymap_window: true
procs:
  server:
    shell: "npm run dev -- --port ${PORT}"
    cwd: "<CONFIG_DIR>/web"
    env:
      PORT: 3000
      DEBUG: ~
  tests:
    cmd: ["cargo", "watch", "-x", "test --lib", "--why=it's"]
    autostart: false
    autorestart: true
    stop: SIGINT
  logs: "tail -f log/dev.log"
  off: ~
"#;

#[test]
fn an_mprocs_file_reads_into_the_project_it_describes_and_says_what_it_ignored() {
    let (dir, loaded) = loaded("dev", DEV);
    let project = loaded.unwrap();
    let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    };
    let with_env = |mut process: ProjectProcess, pairs: &[(&str, &str)]| {
        process.env = env(pairs);
        process.env_files = vec![dir.join(".env")];
        process
    };
    // mprocs expands nothing: bash does, as the command runs.
    let server = ProjectProcess::new("server", "npm run dev -- --port ${PORT}", dir.join("web"));
    let mut tests = ProjectProcess::new(
        "tests",
        r"cargo watch -x 'test --lib' '--why=it'\''s'",
        dir.clone(),
    );
    tests.autostart = false;
    tests.restart = Restart::Always;
    let logs = ProjectProcess::new("logs", "tail -f log/dev.log", dir.clone());
    let expected = Project {
        name: dir.file_name().unwrap().to_string_lossy().into_owned(),
        file: dir.join("mprocs.yaml"),
        processes: vec![
            with_env(server, &[("HOST", "localhost"), ("PORT", "3000")]),
            with_env(tests, &[("HOST", "localhost")]),
            with_env(logs, &[("HOST", "localhost")]),
        ],
        ignored: vec![
            "hide_keymap_window at mprocs.yaml:1:1".into(),
            "DEBUG: ~ (mprocs unsets it; oino only sets variables) at mprocs.yaml:8:7".into(),
            "stop at mprocs.yaml:13:5".into(),
            "off: ~ (mprocs leaves it out) at mprocs.yaml:15:3".into(),
        ],
    };
    assert_eq!(project, expected);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_value_for_this_system_is_selected_as_mprocs_selects_it() {
    let (dir, loaded) = loaded(
        "select",
        "procs:\n  a:\n    shell:\n      $select: os\n      windows: dir\n      $else: ls\n  \
         b:\n    $select: os\n    linux: uname\n    macos: uname\n    $else: ver\n",
    );
    let project = loaded.unwrap();
    let commands: Vec<&str> = project.processes.iter().map(|p| p.cmd.as_str()).collect();
    assert_eq!(commands, ["ls", "uname"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn arguments_are_quoted_only_when_bash_would_read_more_into_them() {
    let cases = [
        ("plain-word_1.0:x,y+z@h%", false, "plain-word_1.0:x,y+z@h%"),
        ("", false, "''"),
        ("two words", false, "'two words'"),
        ("$HOME", false, "'$HOME'"),
        ("it's", false, r"'it'\''s'"),
        ("A=1", true, "'A=1'"),
        ("A=1", false, "A=1"),
        ("~", false, "'~'"),
    ];
    for (arg, first, expected) in cases {
        assert_eq!(quoted(arg, first), expected, "{arg:?}");
    }
}

#[test]
fn mistakes_are_refused_with_their_line_and_column() {
    let cases = [
        (
            "procs:\n  a:\n    shell: x\n    cmd: [x]\n",
            2,
            3,
            "give one of shell and cmd",
        ),
        (
            "procs:\n  a:\n    cwd: web\n",
            2,
            3,
            "a has no command: give shell: ... or cmd: [...]",
        ),
        ("procs:\n  a:\n    cmd: []\n", 3, 10, "cmd is empty"),
        (
            "procs:\n  a:\n    shell: x\n    autostart: yes\n",
            4,
            16,
            "autostart is true or false, not text",
        ),
        (
            "procs:\n  a:\n    shell: x\n    env:\n      A: [1]\n",
            5,
            10,
            "env A is text or a number, not a list",
        ),
        (
            "procs:\n  a:\n    shell: x\n    cwd: nowhere\n",
            4,
            10,
            "is no folder",
        ),
        ("procs:\n  a: 3\n", 2, 6, "process a is a mapping"),
        ("procs:\n  a: ~\n", 1, 1, "no processes"),
        (
            "procs:\n  a:\n    shell: x\n    env: {\"A=B\": \"1\"}\n",
            4,
            10,
            "cannot name an environment variable",
        ),
        (
            "procs:\n  a:\n    shell: {$select: arch, x86: a}\n",
            3,
            22,
            "$select: os is the only choice",
        ),
        (
            "procs:\n  a:\n    shell: \"\"\n",
            3,
            12,
            "the command is empty",
        ),
    ];
    for (index, (text, line, column, message)) in cases.into_iter().enumerate() {
        let (dir, loaded) = loaded(&format!("case{index}"), text);
        let err = loaded.unwrap_err();
        assert_eq!((err.line, err.column), (line, column), "{text:?}: {err}");
        assert!(err.message.contains(message), "{text:?}: {err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
