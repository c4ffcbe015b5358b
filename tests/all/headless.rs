//! Headless mode: the scripts under tests/headless run through the real binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::support::temp_dir;

fn headless(args: &[&str], stdin: Option<&str>) -> Output {
    headless_with_settings(args, stdin, None)
}

/// Headless with the settings file `settings` (none: no settings, whatever this user has).
fn headless_with_settings(
    args: &[&str],
    stdin: Option<&str>,
    settings: Option<&std::path::Path>,
) -> Output {
    headless_with_env(args, stdin, settings, &[])
}

/// [`headless_with_settings`] with `env` over the test's environment.
fn headless_with_env(
    args: &[&str],
    stdin: Option<&str>,
    settings: Option<&std::path::Path>,
    env: &[(&str, &str)],
) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oino"));
    command
        .env("XDG_CONFIG_HOME", temp_dir("headless-config"))
        .env_remove("OINO_CONFIG")
        // A copy would reach the tmux the tests run in.
        .env_remove("TMUX")
        // Colours on, as a newcomer has them (the README's picture is compared whole).
        .env_remove("NO_COLOR");
    if let Some(settings) = settings {
        command.env("OINO_CONFIG", settings);
    }
    command.envs(env.iter().copied());
    let mut child = command
        .arg("headless")
        .args(args)
        .env("XDG_STATE_HOME", temp_dir("headless-state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start oino headless");
    let mut input = child.stdin.take().expect("stdin");
    // A run that stops before reading (bad settings) closes its input: its status says why.
    if let Err(err) = input.write_all(stdin.unwrap_or_default().as_bytes()) {
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::BrokenPipe,
            "write the script: {err}"
        );
    }
    drop(input);
    child.wait_with_output().expect("oino headless")
}

fn script(name: &str) -> String {
    let path = format!("{}/tests/headless/{name}.oino", env!("CARGO_MANIFEST_DIR"));
    let output = headless(&["--size", "100x16", "--script", &path], None);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{name}: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Runs `script` (given on standard input) at `size`; its output, once it has succeeded.
fn run_script(size: &str, script: &str) -> String {
    let output = headless(&["--size", size], Some(script));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The text between `=== result ID ... ===` and `=== end ===`.
fn result_block<'a>(stdout: &'a str, id: &str) -> &'a str {
    let start = stdout
        .find(&format!("=== result {id} (is_error: false) ===\n"))
        .unwrap_or_else(|| panic!("no result for {id}:\n{stdout}"));
    let body = &stdout[start..];
    let body = &body[body.find('\n').expect("header line") + 1..];
    &body[..body.find("\n=== end ===").expect("end of result")]
}

/// The result is the output so far, numbered lines from 1 with none missing, then the marker.
fn assert_detached_result(result: &str, first: &str, numbered: &str, task: &str) {
    let marker = format!("\n\n[Detached to background task {task}: detached from the TUI]");
    let before = result
        .strip_suffix(&marker)
        .unwrap_or_else(|| panic!("no exact marker in {result:?}"));
    let mut lines = before.lines();
    assert_eq!(lines.next(), Some(first));
    let rest: Vec<&str> = lines.collect();
    assert!(!rest.is_empty(), "nothing before the detach: {result:?}");
    for (index, line) in rest.iter().enumerate() {
        assert_eq!(*line, format!("{numbered} {}", index + 1), "{result:?}");
    }
}

#[test]
fn detaching_through_the_prompt_names_the_task_and_answers_the_waiter() {
    let stdout = script("detach-with-prompt");
    assert_detached_result(
        result_block(&stdout, "server"),
        "server up",
        "request",
        "t1",
    );
    let snapshot = &stdout[stdout.find("=== snapshot ===").expect("snapshot")..];
    assert!(snapshot.contains("Tasks"), "{snapshot}");
    assert!(snapshot.contains("◆ web"), "{snapshot}");
    // The task kept streaming after the detach.
    assert!(snapshot.contains("request 15"), "{snapshot}");
}

#[test]
fn ctrl_b_detaches_at_once_with_a_derived_name() {
    let stdout = script("detach-at-once");
    assert_detached_result(result_block(&stdout, "ticker"), "ticking", "tick", "t1");
    let snapshot = &stdout[stdout.find("=== snapshot ===").expect("snapshot")..];
    assert!(snapshot.contains("◆ echo-ticking"), "{snapshot}");
    assert!(snapshot.contains("tick 12"), "{snapshot}");
}

#[test]
fn a_call_is_killed_after_confirmation() {
    let stdout = script("kill-and-search");
    assert!(stdout.contains("killed by signal 15"), "{stdout}");
    assert!(stdout.contains("■ for w in"), "{stdout}");
}

#[test]
fn keys_reach_a_focused_process() {
    let stdout = script("type-into-a-process");
    assert_eq!(stdout.matches("hello oino").count(), 2, "{stdout}");
}

#[test]
fn a_wait_that_times_out_names_its_line_and_fails() {
    let output = headless(
        &["--size", "80x10"],
        Some("run echo hi\n# a comment\nwait-for never shown --timeout 0.3\nsnapshot\n"),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 3: `wait-for never shown --timeout 0.3`"),
        "{stderr}"
    );
    assert!(stderr.contains("did not show within 0.3 s"), "{stderr}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("=== snapshot"));
}

#[test]
fn a_malformed_line_stops_the_script_before_it_starts() {
    let output = headless(&[], Some("run echo hi\nkey hyper-x\n"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 2: `key hyper-x`: unknown key"),
        "{stderr}"
    );
}

#[test]
fn scrolling_and_search_reach_all_of_history() {
    let stdout = script("scroll-and-search");
    let snapshot = &stdout[stdout.find("=== snapshot ===").expect("snapshot")..];
    // The match, five thousand lines back, is in view with its neighbours.
    assert!(snapshot.contains("needle-in-history"), "{snapshot}");
    assert!(snapshot.contains("filler 20"), "{snapshot}");
    assert!(
        snapshot.contains("line 1\n") || snapshot.contains("line 1 "),
        "{snapshot}"
    );
}

#[test]
fn search_steps_through_counted_matches_and_the_filter_narrows_the_list() {
    // The script waits for each step: `n` older, `N` newer, `match i/N`, "no match for", a
    // regular expression, smart case, a pattern searched as text, the filter.
    let stdout = script("search-that-finds");
    let snapshot = &stdout[stdout.find("=== snapshot ===").expect("snapshot")..];
    // Filtered, the list holds only the call that has the text, selected and shown.
    assert!(snapshot.contains("filter: alp"), "{snapshot}");
    assert!(snapshot.contains("echo alpha-call"), "{snapshot}");
    assert!(!snapshot.contains("for i in"), "{snapshot}");
}

#[test]
fn resizing_the_terminal_resizes_the_processes() {
    let stdout = script("resize");
    for line in ["at 14 74", "now 28 89", "now 28 120"] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
}

#[test]
fn headless_mode_works_against_the_server_too() {
    let server = crate::support::ServerGuard::new("headless-server");
    let path = format!(
        "{}/tests/headless/detach-with-prompt.oino",
        env!("CARGO_MANIFEST_DIR")
    );
    let output = server
        .oino(&[
            "headless", "--server", "--size", "100x16", "--script", &path,
        ])
        .output()
        .expect("oino headless --server");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_detached_result(
        result_block(&stdout, "server"),
        "server up",
        "request",
        "t1",
    );
    // The task lives on in the server after the script.
    let listed = server.oino(&["ls"]).output().expect("oino ls");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("t1    web") && listed.contains("running"),
        "{listed}"
    );
}

#[test]
fn malformed_arguments_stop_the_script_with_their_line() {
    for (script, line) in [
        (
            "run echo hi\nrun --id\n",
            "line 2: `run --id`: `run --id ID` needs a command",
        ),
        (
            "run echo hi\nresize 0x0\n",
            "line 2: `resize 0x0`: `0x0` is not a size",
        ),
        (
            "resize 120x0\n",
            "line 1: `resize 120x0`: `120x0` is not a size",
        ),
        (
            "resize 5000x40\n",
            "line 1: `resize 5000x40`: `5000x40` is not a size",
        ),
    ] {
        let output = headless(&[], Some(script));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{script:?}: {stderr}");
        assert!(stderr.contains(line), "{script:?}: {stderr}");
    }
}

#[test]
fn a_call_waiting_for_input_is_marked_until_answered() {
    let stdout = script("answer-a-prompt");
    let (asking, answered) = stdout
        .split_once("hello Ada")
        .unwrap_or_else(|| panic!("never answered: {stdout}"));
    assert!(
        asking.contains(
            "`read -p 'Name? ' n; echo \"hel…` waits for input: Name? (Enter to type into it)"
        ),
        "{stdout}"
    );
    assert!(asking.contains("? read -p"), "{stdout}");
    assert!(!answered.contains("waiting for input"), "{stdout}");
}

#[test]
fn r_restarts_the_selected_call_asking_first_while_it_runs() {
    // A short command (the bar shows it in the question): a script that counts its runs.
    let dir = std::path::PathBuf::from(format!("/tmp/oino-r{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("folder");
    let counter = dir.join("count");
    std::fs::write(
        dir.join("run"),
        format!(
            "c=$(( $(cat {path} 2>/dev/null || echo 0) + 1 )); echo $c > {path}; \
             echo \"run number $c\"; sleep 600\n",
            path = counter.display()
        ),
    )
    .expect("the script");
    let script = format!(
        "run --id counted bash {dir}/run\n\
         wait-for run number 1\n\
         key r\n\
         wait-for still runs: end it and start it again?\n\
         key y\n\
         wait-for run number 2\n\
         wait-for restarted\n\
         snapshot\n\
         key ?\n\
         wait-for run the selected command again (asks first\n",
        dir = dir.display()
    );
    let stdout = run_script("120x16", &script);
    assert_eq!(
        std::fs::read_to_string(&counter).expect("the counter"),
        "2\n"
    );
    let snapshot = &stdout[stdout.find("=== snapshot ===").expect("snapshot")..];
    // The new run is selected and shown; the first one is listed as ended.
    assert!(snapshot.contains("run number 2"), "{snapshot}");
    assert!(!snapshot.contains("run number 1"), "{snapshot}");
    std::fs::remove_dir_all(dir).expect("clean up");
}

#[test]
fn a_split_view_shows_calls_side_by_side_each_at_its_panes_size() {
    let stdout = headless(
        &["--size", "200x30", "--script", "tests/headless/split.oino"],
        None,
    );
    let text = String::from_utf8_lossy(&stdout.stdout);
    assert!(
        stdout.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&stdout.stderr)
    );
    let snapshots: Vec<&str> = text.split("=== snapshot ===").skip(1).collect();
    assert_eq!(snapshots.len(), 2, "{text}");
    // Split: both panes at once, a header each on the first row, a rule between them.
    let split = snapshots[0];
    let header = split.lines().nth(1).expect("the headers");
    assert_eq!(header.matches("running · pid").count(), 2, "{header}");
    let sizes = split
        .lines()
        .find(|line| line.contains("L now 28 79"))
        .unwrap_or_else(|| panic!("no left pane at 79 columns:\n{split}"));
    let right = ["R at 28 159", "R now 28 79", "R at 28 79"]
        .iter()
        .find_map(|shown| sizes.find(shown));
    assert!(
        right.is_some_and(|at| sizes[..at].ends_with("│")),
        "the panes side by side, a rule between them: {sizes:?}"
    );
    assert!(split.contains("R now 28 79"), "{split}");
    // Tab moved the focus to the left pane, which S closed: the right one fills the pane.
    let single = snapshots[1];
    assert!(!single.contains("L now"), "{single}");
    assert_eq!(
        single
            .lines()
            .nth(1)
            .map(|line| line.matches("running · pid").count()),
        Some(1)
    );
}

#[test]
fn the_list_and_header_show_what_each_running_call_costs() {
    // 200 MiB held by one call, a core kept busy by another, a third asleep. Usage is sampled
    // every 2 s: the snapshot waits for the sample that shows the memory held and the CPU used,
    // not for the header's words, which show before it.
    let script = "run --id holder python3 -c \"b = bytearray(200 << 20); b[::4096] = b'x' * len(b[::4096]); print('held', flush=True); import time; time.sleep(600)\"\n\
                  run --id busy while :; do :; done\n\
                  run --id idle sleep 600\n\
                  wait-for held\n\
                  key j\n\
                  wait-match python3 .* [23][0-9][0-9]M \n\
                  wait-match while .*  cpu [0-9]+% · mem \n\
                  snapshot\n";
    let stdout = run_script("160x12", script);
    let snapshot = &stdout[stdout.find("=== snapshot ===").expect("snapshot")..];
    // The header of the selected call.
    let header = snapshot.lines().nth(1).expect("the header");
    assert!(
        header.contains("while") && header.contains("  cpu "),
        "{header}"
    );
    // The list: a column of CPU and one of memory for each running call.
    let row = |label: &str| {
        snapshot
            .lines()
            .filter_map(|line| line.split('│').next())
            .find(|list| list.contains(label))
            .unwrap_or_else(|| panic!("no {label} row:\n{snapshot}"))
            .to_owned()
    };
    let memory = |label: &str| {
        let row = row(label);
        let columns: Vec<&str> = row.split_whitespace().collect();
        let memory = columns[columns.len() - 2];
        memory
            .strip_suffix('M')
            .and_then(|number| number.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{label}: {columns:?}\n{snapshot}"))
    };
    // At least the 200 MiB held (the interpreter adds some); a shell or a sleep, a few.
    assert!((200.0..400.0).contains(&memory("python3")), "{snapshot}");
    assert!(memory("while") < 50.0, "{snapshot}");
    assert!(memory("sleep 600") < 50.0, "{snapshot}");
}

#[test]
fn a_project_shows_a_process_starting_until_its_ready_line_then_the_one_after_it() {
    let dir = temp_dir("headless-project");
    let flag = dir.join("go");
    std::fs::write(
        dir.join("oino.toml"),
        format!(
            "[processes.db]\n\
             cmd = \"echo booting; while [ ! -e {flag} ]; do sleep 0.05; done; echo now ready; sleep 600\"\n\
             ready = \"now ready\"\n\n\
             [processes.web]\n\
             cmd = \"echo web is up; sleep 600\"\n\
             after = [\"db\"]\n",
            flag = flag.display()
        ),
    )
    .expect("oino.toml");
    let script = format!(
        "project {dir}/oino.toml\n\
         wait-for booting\n\
         wait-for [starting: not ready yet]\n\
         snapshot\n\
         run touch {flag}\n\
         wait-for now ready\n\
         wait-for ◆ web\n\
         wait-for ✓ touch\n\
         key g\n\
         key j\n\
         wait-for web is up\n\
         snapshot\n",
        dir = dir.display(),
        flag = flag.display()
    );
    let stdout = run_script("100x12", &script);
    let mut snapshots = stdout.split("=== snapshot ===").skip(1);
    let starting = snapshots.next().expect("the first snapshot");
    let list = |snapshot: &str| -> Vec<String> {
        snapshot
            .lines()
            .filter_map(|line| line.split('│').next())
            .map(|list| list.trim().to_owned())
            .filter(|list| !list.is_empty())
            .collect()
    };
    // Under the project's name: db is starting (◌), web waits for it, and says so.
    let rows = list(starting);
    let project = dir.file_name().unwrap().to_string_lossy().into_owned();
    // The list is narrow: the name is cut (the cut marked), never the heading's mark.
    let heading = rows.first().expect("a heading");
    let shown = heading
        .strip_prefix("▾ ")
        .and_then(|name| name.strip_suffix('…'))
        .unwrap_or_else(|| panic!("{starting}"));
    assert!(project.starts_with(shown), "{starting}");
    assert!(rows.iter().any(|row| row.starts_with("◌ db")), "{starting}");
    assert!(
        rows.iter()
            .any(|row| row.starts_with("… web") && row.ends_with("waits db")),
        "{starting}"
    );
    let ready = snapshots.next().expect("the second snapshot");
    let rows = list(ready);
    assert!(rows.iter().any(|row| row.starts_with("◆ db")), "{ready}");
    assert!(rows.iter().any(|row| row.starts_with("◆ web")), "{ready}");
}

#[test]
fn settings_rebind_keys_in_the_help_and_the_list_takes_their_width() {
    let settings = temp_dir("settings").join("config.toml");
    std::fs::write(
        &settings,
        "list_width = 30\n[keys]\nrestart = \"R\"\nhelp = [\"?\", \"f1\"]\n[theme]\nrunning = \"blue\"\n",
    )
    .expect("settings");
    let script = "run --id one echo one-ran; sleep 600\n\
                  wait-for one-ran\n\
                  snapshot\n\
                  key f1\n\
                  wait-for oino help\n\
                  snapshot\n";
    let output = headless_with_settings(&["--size", "100x30"], Some(script), Some(&settings));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut snapshots = stdout.split("=== snapshot ===").skip(1);
    let list = snapshots.next().expect("the first snapshot");
    // The list is 30 columns: the rule is the 31st.
    let row = list.lines().nth(1).expect("a row");
    assert_eq!(row.chars().position(|c| c == '│'), Some(30), "{row}");
    let snapshot = snapshots.next().expect("the help's snapshot");
    // The help is written from the rebound keys.
    let restart = snapshot
        .lines()
        .find(|line| line.contains("run the selected command again"))
        .unwrap_or_else(|| panic!("no restart in the help:\n{snapshot}"));
    assert!(restart.contains("  R  "), "{restart}");
    assert!(snapshot.contains("? F1"), "{snapshot}");

    // A mistake: the script fails, saying where.
    std::fs::write(&settings, "[theme]\nrunning = \"plaid\"\n").expect("settings");
    let output = headless_with_settings(&["--size", "100x30"], Some("snapshot\n"), Some(&settings));
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains(&format!("{}:2:11: `plaid` is no color", settings.display())),
        "{said}"
    );
}

/// The interface shows a command's control characters escaped (ratatui would drop them
/// silently; a person should see what is there).
#[test]
fn a_commands_control_characters_show_escaped_in_the_list_and_header() {
    let script = "run --id sneaky sleep 600 # \u{1b}]0;PWNED\u{7}\nwait-for PWNED\nsnapshot\n";
    let stdout = run_script("120x8", script);
    let snapshot = &stdout[stdout.find("=== snapshot ===").expect("snapshot")..];
    assert!(snapshot.contains("\\e]0;PWNED\\x07"), "{snapshot}");
}

#[test]
fn a_project_says_its_restarts_and_give_up_and_its_keys_stop_and_apply_it() {
    let dir = temp_dir("headless-project-keys");
    let file = dir.join("oino.toml");
    let text = "name = \"shop\"\n\n[processes.crash]\ncmd = \"echo crashing; exit 3\"\n\
                restart = \"always\"\nrestart_limit = 1\nbackoff = 0.2\n\n\
                [processes.web]\ncmd = \"echo web v1; sleep 600\"\n";
    std::fs::write(&file, text).expect("oino.toml");
    // The edit: web's command changes, crash goes.
    let edited = dir.join("edited.toml");
    std::fs::write(
        &edited,
        "name = \"shop\"\n\n[processes.web]\ncmd = \"echo web v2; sleep 600\"\n",
    )
    .expect("edited");
    let script = format!(
        "project {file}\n\
         wait-for crash exited 3: restart 1/1 in 0.2 s\n\
         wait-for crash exited 3: gave up after 1 restart in a row\n\
         wait-for gave up ↻1\n\
         snapshot\n\
         run cp {edited} {file}\n\
         wait-for web (cmd); apply it with `oino up` or U\n\
         key g\n\
         key j\n\
         key U\n\
         wait-for applied `shop`: web restarted\n\
         wait-for web v2\n\
         key D\n\
         wait-for Stop every process of `shop`?\n\
         key y\n\
         wait-for stopped `shop`: web\n\
         snapshot\n",
        file = file.display(),
        edited = edited.display()
    );
    let stdout = run_script("100x12", &script);
    let mut snapshots = stdout.split("=== snapshot ===").skip(1);
    let gave_up = snapshots.next().expect("the first snapshot");
    assert!(gave_up.contains("▾ shop"), "{gave_up}");
    let stopped = snapshots.next().expect("the second snapshot");
    assert!(
        stopped.lines().any(|line| line.starts_with(" ■ web")),
        "{stopped}"
    );
}

#[test]
fn a_process_compose_file_shows_its_waits_and_probes_with_its_dot_env() {
    let dir = temp_dir("headless-compose");
    let flag = dir.join("up");
    std::fs::write(dir.join(".env"), "GREETING=hello from env\n").expect(".env");
    std::fs::write(
        dir.join("process-compose.yaml"),
        format!(
            "processes:\n  db:\n    command: \"echo booting; sleep 1; echo db ready; exec sleep 600\"\n    \
             ready_log_line: db ready\n  web:\n    command: \"echo ${{GREETING}}; exec sleep 600\"\n    \
             depends_on:\n      db:\n        condition: process_log_ready\n    \
             readiness_probe:\n      exec:\n        command: \"test -e {flag}\"\n      \
             period_seconds: 1\n",
            flag = flag.display()
        ),
    )
    .expect("process-compose.yaml");
    let script = format!(
        "project {dir}/process-compose.yaml\n\
         wait-for waits db\n\
         key g\n\
         key j\n\
         wait-for hello from env\n\
         wait-for [starting: not ready yet]\n\
         run touch {flag}\n\
         wait-for ◆ web\n\
         snapshot\n",
        dir = dir.display(),
        flag = flag.display()
    );
    let stdout = run_script("100x12", &script);
    let ready = stdout.split("=== snapshot ===").nth(1).expect("a snapshot");
    assert!(ready.contains("◆ db"), "{ready}");
}

#[test]
fn n_selects_the_call_it_starts() {
    let stdout = script("new-call-is-selected");
    let snapshot = &stdout[stdout.find("=== snapshot ===").expect("snapshot")..];
    let header = snapshot.lines().nth(1).expect("the header");
    assert!(header.contains("printf 'x%sy\\n' 42"), "{snapshot}");
}

#[test]
fn a_finished_calls_pane_is_filled_from_its_history_after_a_split_closes() {
    let stdout = script("split-closed-on-a-finished-call");
    let snapshot = &stdout[stdout.find("=== snapshot ===").expect("snapshot")..];
    // 100x16: the pane has 14 rows, right of the list: lines 28 to 40 from its first row, and
    // the empty line its cursor was on.
    let pane: Vec<&str> = snapshot
        .lines()
        .skip(2)
        .take(14)
        .map(|line| line.split_once('│').map_or("", |(_, pane)| pane))
        .collect();
    let mut expected: Vec<String> = (28..=40).map(|n| format!("line {n}")).collect();
    expected.push(String::new());
    assert_eq!(pane, expected, "{snapshot}");
}

#[test]
fn the_readme_picture_is_what_the_picture_script_draws() {
    let root = env!("CARGO_MANIFEST_DIR");
    let output = headless(&["--script", &format!("{root}/assets/picture.oino")], None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "assets/picture.oino: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let drawn = stdout
        .split_once("=== picture ===\n")
        .and_then(|(_, rest)| rest.split_once("=== end ==="))
        .map(|(picture, _)| picture)
        .expect("the script prints a picture");
    assert!(
        drawn.starts_with("<svg") && drawn.contains("fill=\"#"),
        "{drawn}"
    );
    let committed = std::fs::read_to_string(format!("{root}/assets/oino.svg"))
        .expect("assets/oino.svg is committed");
    assert!(
        drawn == committed,
        "assets/oino.svg is not what assets/picture.oino draws now: run scripts/picture \
         (and look at it) to draw it again"
    );
}

/// A tmux server of its own on a socket in a temporary folder, killed when dropped.
struct TmuxServer {
    socket: std::path::PathBuf,
}

impl TmuxServer {
    fn start() -> Self {
        let socket = temp_dir("tmux").join("tmux.sock");
        let server = Self { socket };
        let started = server.tmux(&["new-session", "-d"]).status().expect("tmux");
        assert!(started.success(), "tmux new-session -d: {started}");
        server
    }

    fn tmux(&self, args: &[&str]) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&self.socket).args(args);
        command
    }

    /// `$TMUX` as tmux sets it inside: the socket, the server's pid, the session.
    fn env(&self) -> String {
        let pid = self
            .tmux(&["display-message", "-p", "#{pid}"])
            .output()
            .expect("tmux display-message");
        let pid = String::from_utf8_lossy(&pid.stdout);
        format!("{},{},0", self.socket.display(), pid.trim())
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]).output();
    }
}

/// Headless with `TMUX` set to `tmux`, on `script`: its standard output.
fn headless_in_tmux(tmux: &str, script: &str) -> String {
    headless_in_tmux_with(tmux, &[], script)
}

/// [`headless_in_tmux`] with `env` too.
fn headless_in_tmux_with(tmux: &str, env: &[(&str, &str)], script: &str) -> String {
    let env: Vec<(&str, &str)> = env.iter().copied().chain([("TMUX", tmux)]).collect();
    let output = headless_with_env(&["--size", "120x10"], Some(script), None, &env);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Selects the two lines a call printed (v at the cursor, up twice, to the row's start) and
/// copies them (y); waits for `notice`.
fn copy_script(notice: &str) -> String {
    format!(
        "run --id c1 printf 'alpha beta\\ngamma\\n'; sleep 600\n\
         wait-for │gamma\n\
         key v\nkey k\nkey k\nkey 0\nkey y\n\
         wait-for {notice}\n\
         snapshot\n"
    )
}

#[test]
fn inside_tmux_a_copy_reaches_tmuxs_buffer() {
    let tmux = TmuxServer::start();
    let stdout = headless_in_tmux(
        &tmux.env(),
        &copy_script("copied 17 characters to the clipboard and to tmux's buffer"),
    );
    let buffer = tmux
        .tmux(&["show-buffer"])
        .output()
        .expect("tmux show-buffer");
    assert_eq!(
        String::from_utf8_lossy(&buffer.stdout),
        "alpha beta\ngamma\n",
        "{stdout}"
    );
}

#[test]
fn a_tmux_before_3_2_that_refuses_w_gets_the_copy_without_it() {
    let bin = temp_dir("old-tmux");
    let fake = bin.join("tmux");
    std::fs::write(
        &fake,
        "#!/bin/sh\n\
         case \"$*\" in *-w*) echo 'usage: load-buffer [-b buffer-name] path' >&2; exit 1;; esac\n\
         cat > \"$(dirname \"$0\")/buffer\"\n",
    )
    .expect("the fake tmux");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The fake takes any socket: no tmux server is involved.
    headless_in_tmux_with(
        "/nonexistent/old-tmux.sock,1,0",
        &[("PATH", path.as_str())],
        &copy_script("copied 17 characters to the clipboard and to tmux's buffer"),
    );
    assert_eq!(
        std::fs::read_to_string(bin.join("buffer")).expect("the buffer"),
        "alpha beta\ngamma\n"
    );
}

#[test]
fn a_tmux_that_does_not_take_the_copy_is_said() {
    let gone = temp_dir("tmux-gone").join("tmux.sock");
    let stdout = headless_in_tmux(
        &format!("{},1,0", gone.display()),
        &copy_script("copied 17 characters, but not to tmux's buffer: "),
    );
    assert!(stdout.contains("error connecting to"), "{stdout}");
}
