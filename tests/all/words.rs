//! What each command says, the real binary: a line for what it did, the typo of a subcommand,
//! an empty list, a missing server, the help, the manual and the completion.

use std::process::Output;

use crate::support::{ServerGuard, temp_dir, wait_until_blocking};

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Starts `command` on `server` as a task named `name`, detached at once.
fn task(server: &ServerGuard, name: &str, command: &str) {
    let started = server
        .oino(&[
            "run",
            "--detach-after",
            "0.1",
            "--name",
            name,
            "--",
            command,
        ])
        .output()
        .expect("oino run");
    assert!(started.status.success(), "{started:?}");
}

#[test]
fn kill_says_what_it_killed_and_what_had_ended_already() {
    let server = ServerGuard::new("words-kill");
    task(&server, "web", "echo up; sleep 600");
    let killed = server.oino(&["kill", "web"]).output().expect("oino kill");
    assert_eq!(killed.status.code(), Some(0), "{killed:?}");
    assert_eq!(stderr(&killed), "oino kill: killed `web` (TERM)\n");
    assert_eq!(stdout(&killed), "");

    // A shell with children: they are counted, and --json says how many the tree had.
    task(&server, "pair", "echo up; sleep 600 & sleep 600 & wait");
    wait_until_blocking("the shell and its two children", || {
        oino::pty::proc_scan::with_env(
            "OINO_CALL_ID",
            &server.id_of("echo up; sleep 600 & sleep 600 & wait"),
        )
        .len()
            == 3
    });
    let killed = server
        .oino(&["kill", "pair", "--json"])
        .output()
        .expect("oino kill");
    assert_eq!(
        stderr(&killed),
        "oino kill: killed `pair` (TERM) and 2 processes\n"
    );
    let json: serde_json::Value = serde_json::from_slice(&killed.stdout).expect("JSON");
    assert_eq!(
        (&json["state"], &json["processes"]),
        (&"killed".into(), &3.into())
    );

    let ended = server
        .oino(&["run", "--", "exit 3"])
        .output()
        .expect("oino run");
    assert_eq!(ended.status.code(), Some(3), "{ended:?}");
    let id = server.id_of("exit 3");
    let again = server.oino(&["kill", &id]).output().expect("oino kill");
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert_eq!(
        stderr(&again),
        format!("oino kill: `{id}` had ended already (exited 3)\n")
    );
    // With --json, standard output is JSON alone.
    let json = server
        .oino(&["kill", &id, "--json"])
        .output()
        .expect("oino kill");
    serde_json::from_slice::<serde_json::Value>(&json.stdout).expect("pure JSON");
}

#[test]
fn wait_that_runs_out_says_it_still_runs() {
    let server = ServerGuard::new("words-wait");
    task(&server, "web", "echo up; sleep 600");
    let waited = server
        .oino(&["wait", "web", "--timeout", "1"])
        .output()
        .expect("oino wait");
    assert_eq!(waited.status.code(), Some(124), "{waited:?}");
    assert_eq!(stderr(&waited), "oino wait: `web` still runs after 1 s\n");
    let json = server
        .oino(&["wait", "web", "--timeout", "0.2", "--json"])
        .output()
        .expect("oino wait");
    assert_eq!(json.status.code(), Some(124), "{json:?}");
    serde_json::from_slice::<serde_json::Value>(&json.stdout).expect("pure JSON");
}

#[test]
fn kill_server_says_what_it_ended() {
    let server = ServerGuard::new("words-kill-server");
    task(&server, "web", "echo up; sleep 600");
    task(&server, "db", "echo up; sleep 600");
    let ended = server
        .oino(&["run", "--", "true"])
        .output()
        .expect("oino run");
    assert!(ended.status.success());
    let stopped = server.oino(&["kill-server"]).output().expect("kill-server");
    assert_eq!(stopped.status.code(), Some(0), "{stopped:?}");
    assert_eq!(
        stderr(&stopped),
        "oino kill-server: ended 2 tasks; the server stopped\n"
    );
}

#[test]
fn every_command_that_needs_a_server_says_none_runs() {
    let server = ServerGuard::new("words-no-server");
    let socket = server.socket.display().to_string();
    for args in [
        &["logs", "c1"][..],
        &["screen", "c1"],
        &["wait", "c1"],
        &["kill", "c1"],
        &["restart", "c1"],
        &["send", "c1", "x"],
        &["detach", "c1"],
        &["attach", "c1"],
        &["kill-server"],
    ] {
        let output = server.oino(args).output().expect("oino");
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {said}");
        assert!(
            said.contains(&format!("no oino server is running on {socket}")),
            "{args:?}: {said}"
        );
        assert!(
            said.contains("`oino server` starts one"),
            "{args:?}: {said}"
        );
        assert!(!said.contains("os error"), "{args:?}: {said}");
    }
    // None of them started one.
    assert!(!server.socket.exists());
}

#[test]
fn send_to_an_ended_call_names_it_and_how_it_ended() {
    let server = ServerGuard::new("words-send");
    let ended = server
        .oino(&["run", "--", "exit 4"])
        .output()
        .expect("oino run");
    assert_eq!(ended.status.code(), Some(4));
    let id = server.id_of("exit 4");
    let sent = server
        .oino(&["send", &id, "hi"])
        .output()
        .expect("oino send");
    assert_eq!(sent.status.code(), Some(2), "{sent:?}");
    assert_eq!(
        stderr(&sent),
        format!(
            "oino send: `{id}` has ended (exited 4): it reads no input; `oino restart {id}` \
             runs it again\n"
        )
    );
}

#[test]
fn a_typo_of_a_subcommand_is_said_and_a_command_on_the_path_runs() {
    let server = ServerGuard::new("words-typo");
    for (typo, meant) in [("lss", "ls"), ("kil", "kill"), ("complet", "completions")] {
        let output = server.oino(&[typo]).output().expect("oino");
        assert_eq!(output.status.code(), Some(2), "{typo}: {output:?}");
        assert_eq!(
            stderr(&output),
            format!(
                "oino: no subcommand `{typo}`: did you mean `{meant}`? (`oino -- {typo}` runs \
                 it as a command)\n"
            )
        );
    }
    // After `--` it is a call of the interface (which needs a terminal here).
    let escaped = server.oino(&["--", "lss"]).output().expect("oino");
    assert!(
        stderr(&escaped).contains("the interface needs a terminal"),
        "{escaped:?}"
    );
    // A word far from every subcommand, and a path, are calls too.
    for word in ["frobnicate-the-thing", "./lss"] {
        let call = server.oino(&[word]).output().expect("oino");
        assert!(
            stderr(&call).contains("the interface needs a terminal"),
            "{word}: {call:?}"
        );
    }
    // A program on the PATH runs as a call, however close its name is.
    let bin = temp_dir("words-typo-bin");
    let program = bin.join("lss");
    std::fs::write(&program, "#!/bin/sh\necho here\n").expect("program");
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let on_path = server
        .oino(&["lss"])
        .env("PATH", path)
        .output()
        .expect("oino");
    assert!(
        stderr(&on_path).contains("the interface needs a terminal"),
        "{on_path:?}"
    );
    // A shell builtin is a command as well: `set` is two edits from `send`, and no program.
    let builtin = server.oino(&["set"]).output().expect("oino");
    assert!(
        stderr(&builtin).contains("the interface needs a terminal"),
        "{builtin:?}"
    );
}

#[test]
fn an_empty_list_says_why_on_standard_error() {
    let server = ServerGuard::new("words-empty-ls");
    let listed = server.oino(&["ls"]).output().expect("oino ls");
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(stdout(&listed), "");
    assert_eq!(
        stderr(&listed),
        format!(
            "oino ls: no calls or tasks on the server at {}; calls of `oino --embedded` and of \
             the demo live in their own window\n",
            server.socket.display()
        )
    );
    let json = server.oino(&["ls", "--json"]).output().expect("oino ls");
    assert_eq!(stdout(&json), "[]\n");
    assert_eq!(stderr(&json), "");
}

#[test]
fn help_has_a_usage_that_reads_and_a_description_for_every_flag() {
    let server = ServerGuard::new("words-help");
    let help = server.oino(&["--help"]).output().expect("oino --help");
    let text = stdout(&help);
    assert!(
        text.contains("Usage: oino [OPTIONS] [SUBCOMMAND | [--] COMMAND...]"),
        "{text}"
    );
    for subcommand in [
        "detach",
        "logs",
        "wait",
        "send",
        "kill-server",
        "kill",
        "ls",
    ] {
        let help = server.oino(&[subcommand, "--help"]).output().expect("help");
        let text = stdout(&help);
        let json = text
            .lines()
            .find(|line| line.trim_start().starts_with("--json"))
            .unwrap_or_else(|| panic!("{subcommand}: no --json in\n{text}"));
        assert!(
            json.trim_start().trim_start_matches("--json").trim().len() > 3,
            "{subcommand}: --json has no description: {json:?}"
        );
    }
    let mcp = stdout(&server.oino(&["mcp", "--help"]).output().expect("help"));
    for tool in [
        "bash",
        "task_output",
        "task_screen",
        "task_list",
        "task_kill",
        "task_input",
    ] {
        assert!(mcp.contains(tool), "{tool} missing from:\n{mcp}");
    }
}

/// `oino man`, rendered by man(1) at 100 columns.
fn rendered_manual(server: &ServerGuard) -> (String, String) {
    let page = server.oino(&["man"]).output().expect("oino man");
    assert!(page.status.success(), "{page:?}");
    let rendered = crate::support::rendered_man(&page.stdout, 100);
    (stdout(&page), rendered)
}

#[test]
fn the_manual_is_one_whole_page() {
    let server = ServerGuard::new("words-man");
    let (roff, text) = rendered_manual(&server);
    for heading in [
        "NAME",
        "SYNOPSIS",
        "SUBCOMMANDS",
        "KEYS",
        "SETTINGS",
        "PROJECT FILE",
        "ENVIRONMENT",
        "FILES",
        "EXIT STATUS",
    ] {
        assert!(
            text.lines().any(|line| line == heading),
            "no section {heading} in:\n{text}"
        );
    }
    // No page that does not exist is referred to.
    let others = regex::Regex::new(r"oino-[a-z-]+\s*\(1\)").expect("regex");
    assert!(!others.is_match(&text), "{text}");
    assert!(!others.is_match(&roff.replace("\\-", "-").replace("\\fR", "")));
    // Each subcommand, with its flags; keys, settings and variables from the code.
    for part in [
        "oino kill-server",
        "oino logs",
        "--follow",
        "detach the selected call",
        "list_width",
        "[keys]",
        "OINO_SOCKET",
        "XDG_RUNTIME_DIR",
        "NO_COLOR",
        "oino.toml",
        "124",
    ] {
        assert!(text.contains(part), "{part} missing from:\n{text}");
    }
}

/// What bash offers for `line` (its last word being completed) in `cwd`, with `oino` on the
/// PATH and `server` as its server.
pub fn bash_offers(
    server: &ServerGuard,
    script: &std::path::Path,
    cwd: &std::path::Path,
    line: &str,
) -> Vec<String> {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_oino"))
        .parent()
        .expect("the binary's folder");
    // A line that ends in a space completes an empty word.
    let words = if line.ends_with(' ') {
        format!("{line}''")
    } else {
        line.to_owned()
    };
    let probe = format!(
        "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
         COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; COMP_TYPE=9; \
         _clap_complete_oino oino \"${{COMP_WORDS[COMP_CWORD]}}\" \
         \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = std::process::Command::new("bash")
        .args(["-c", &probe])
        .current_dir(cwd)
        .env("PATH", path)
        .env("OINO_SOCKET", &server.socket)
        .env("XDG_STATE_HOME", &server.state)
        .output()
        .expect("bash");
    assert!(output.status.success(), "{output:?}");
    let mut words: Vec<String> = stdout(&output)
        .lines()
        .map(|word| word.trim().to_owned())
        .filter(|word| !word.is_empty())
        .collect();
    words.sort();
    words
}

#[test]
fn bash_completes_ids_and_names_from_the_server_and_processes_from_the_project() {
    let server = ServerGuard::new("words-complete");
    task(&server, "webserver", "echo up; sleep 600");
    let script = temp_dir("words-complete-script").join("oino.bash");
    let generated = server
        .oino(&["completions", "bash"])
        .output()
        .expect("completions");
    assert!(generated.status.success(), "{generated:?}");
    std::fs::write(&script, &generated.stdout).expect("script");
    let project = temp_dir("words-complete-project");
    std::fs::write(
        project.join("oino.toml"),
        "[processes.frontend]\ncmd = \"sleep 600\"\n\n[processes.backend]\ncmd = \"sleep 600\"\n",
    )
    .expect("project");

    assert_eq!(
        bash_offers(&server, &script, &project, "oino l"),
        ["logs", "ls"]
    );
    for subcommand in ["logs", "attach", "kill", "wait", "send", "detach", "screen"] {
        let offered = bash_offers(&server, &script, &project, &format!("oino {subcommand} "));
        assert!(
            offered.contains(&"webserver".to_owned()) && offered.contains(&"t1".to_owned()),
            "{subcommand}: {offered:?}"
        );
    }
    assert_eq!(
        bash_offers(&server, &script, &project, "oino logs web"),
        ["webserver"]
    );
    for subcommand in ["start", "up", "down"] {
        // Beside the flags, which the engine offers too.
        let offered = bash_offers(&server, &script, &project, &format!("oino {subcommand} "));
        let names: Vec<&String> = offered
            .iter()
            .filter(|word| !word.starts_with('-'))
            .collect();
        assert_eq!(names, ["backend", "frontend"], "{subcommand}");
    }
    for shell in ["zsh", "fish"] {
        let output = server.oino(&["completions", shell]).output().expect("oino");
        assert!(
            output.status.success() && !output.stdout.is_empty(),
            "{shell}"
        );
    }
}

#[test]
fn completion_after_via_or_host_offers_the_far_servers_entries_or_none() {
    let near = ServerGuard::new("words-complete-near");
    let far = ServerGuard::new("words-complete-far");
    task(&near, "near-web", "sleep 600");
    task(&far, "far-web", "sleep 600");
    let script = temp_dir("words-complete-far-script").join("oino.bash");
    let generated = near
        .oino(&["completions", "bash"])
        .output()
        .expect("completions");
    std::fs::write(&script, &generated.stdout).expect("script");
    let folder = temp_dir("words-complete-far-folder");
    let via = format!(
        "env OINO_SOCKET={} XDG_STATE_HOME={} {} proxy",
        far.socket.display(),
        far.state.display(),
        env!("CARGO_BIN_EXE_oino")
    );
    let offered = bash_offers(
        &near,
        &script,
        &folder,
        &format!("oino --via '{via}' logs "),
    );
    assert!(
        offered.contains(&"far-web".to_owned()) && !offered.contains(&"near-web".to_owned()),
        "{offered:?}"
    );
    // A host that cannot be reached offers nothing, never this machine's entries.
    let offered = bash_offers(&near, &script, &folder, "oino --host nosuch.invalid logs ");
    assert!(!offered.contains(&"near-web".to_owned()), "{offered:?}");
}
