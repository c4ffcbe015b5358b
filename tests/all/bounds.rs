//! Limits at the door, tried as a hostile client would: every request kind of the table, each of
//! its numbers set to 0, -1, 2^64-1, 1e400 and 65535 (a size of 65535x65535), against a server
//! under `ulimit -v` so that a failure cannot take the machine. The kinds come from the table's
//! golden lines (a kind cannot be added without one), so a new kind is walked as soon as it
//! exists.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::{ServerGuard, output_within, running, server_pid, wait_until_blocking};
use oino::remote::protocol::Travel as _;
use oino::remote::protocol::requests as ask;

/// The server's address space: ten times what it uses, far below what an unbounded request
/// asks (a 65535x65535 screen is billions of cells).
pub const SERVER_VMEM_KIB: u64 = 3 << 20;

/// Starts the server of `server` under `ulimit -v KIB`; its pid.
pub fn start_limited_server(server: &ServerGuard, vmem_kib: u64) -> i32 {
    let started = output_within(
        "a server under ulimit -v",
        std::process::Command::new("bash")
            .args([
                "-c",
                &format!("ulimit -v {vmem_kib} && exec \"$0\" server"),
                env!("CARGO_BIN_EXE_oino"),
            ])
            .env("OINO_SOCKET", &server.socket)
            .env("XDG_STATE_HOME", &server.state),
    );
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    server_pid(&server.socket).expect("the server's pid")
}

/// What the largest request within bounds may cost the server for a moment: a screen of the
/// largest size (1000x500 cells), its wire form and its line.
const ONE_REQUEST_KIB: u64 = 256 * 1024;

/// Whether the server `pid` still runs (looked up by its pid: a child it forks has its command
/// line until it execs, and a search by command line may find that one).
fn lives(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|words| words.split(|byte| *byte == 0).nth(1) == Some(b"server".as_slice()))
}

/// A line of `/proc/PID/status`, in KiB.
pub fn status_kib(pid: i32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|err| panic!("the server {pid} is gone ({err})"))
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} of {pid}"))
}

/// The golden request lines of the table, one per kind.
fn golden_requests() -> Vec<Value> {
    let pinned = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "src/remote/protocol/requests/snapshots/\
         oino__remote__protocol__requests__tests__every_request_reply_and_event_reads_and_writes_as_pinned.snap",
    );
    let text = std::fs::read_to_string(&pinned).expect("the golden lines");
    let requests: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("> "))
        .map(|line| serde_json::from_str(line).expect("a golden request"))
        .collect();
    assert!(requests.len() >= 21, "every kind: {}", requests.len());
    requests
}

/// The paths to every number in `value` (object keys and array indexes).
fn numbers(value: &Value, path: &mut Vec<Value>, found: &mut Vec<Vec<Value>>) {
    match value {
        Value::Number(_) => found.push(path.clone()),
        Value::Object(map) => {
            for (key, value) in map {
                path.push(Value::from(key.as_str()));
                numbers(value, path, found);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (index, value) in items.iter().enumerate() {
                path.push(Value::from(index));
                numbers(value, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at<'v>(value: &'v mut Value, path: &[Value]) -> &'v mut Value {
    path.iter().fold(value, |value, step| match step {
        Value::String(key) => &mut value[key.as_str()],
        Value::Number(index) => {
            &mut value[usize::try_from(index.as_u64().expect("an index")).expect("an index")]
        }
        _ => unreachable!("a path is keys and indexes"),
    })
}

/// Each request with its numbers made hostile: each number alone at each value, and every
/// number of one object at 65535 at once (a size of 65535x65535).
fn hostile(request: &Value) -> Vec<Value> {
    let raw = |text: &str| -> Value { serde_json::from_str(text).expect("a JSON number") };
    // 1e400 is no f64: it is sent as written, in the line, below.
    let extremes = ["0", "-1", "18446744073709551615", "65535"];
    let mut found = Vec::new();
    numbers(request, &mut Vec::new(), &mut found);
    let mut hostile = Vec::new();
    for path in &found {
        for extreme in extremes {
            let mut changed = request.clone();
            *at(&mut changed, path) = raw(extreme);
            hostile.push(changed);
        }
        let mut changed = request.clone();
        *at(&mut changed, path) = Value::from("1e400-here");
        hostile.push(changed);
    }
    let mut objects: Vec<&[Value]> = found.iter().map(|path| &path[..path.len() - 1]).collect();
    objects.dedup();
    for object in objects {
        let mut changed = request.clone();
        for path in found.iter().filter(|path| path.starts_with(object)) {
            *at(&mut changed, path) = raw("65535");
        }
        hostile.push(changed);
    }
    hostile
}

/// Sends one line on a connection of its own and reads its first reply, if one comes soon (a
/// wait for a month does not answer, and is let go).
fn send(socket: &Path, line: &str) -> Option<String> {
    let mut stream = UnixStream::connect(socket).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("a read timeout");
    stream.write_all(line.as_bytes()).expect("send");
    stream.write_all(b"\n").expect("send");
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).ok()?;
    Some(reply)
}

/// The request made to act on `key` and on folders that exist, with nothing that must be
/// unique (an id, a task name) so that each try reaches its handler.
fn aimed(mut request: Value, key: &str, folder: &Path) -> Value {
    let object = request.as_object_mut().expect("a request is an object");
    if object.contains_key("key") {
        object.insert("key".into(), key.into());
    }
    if object.get("op") == Some(&Value::from("run")) {
        object.remove("id");
        object.remove("name");
        object.insert("command".into(), "printf x".into());
    }
    if object.contains_key("cwd") {
        object.insert("cwd".into(), folder.to_str().expect("UTF-8").into());
    }
    if let Some(project) = object.get_mut("project") {
        project["file"] = folder.join("oino.toml").to_str().expect("UTF-8").into();
        for process in project["processes"].as_array_mut().expect("processes") {
            process["cwd"] = folder.to_str().expect("UTF-8").into();
            process["cmd"] = "sleep 30".into();
            process["env_files"] = Value::Array(Vec::new());
            process["after"] = Value::Array(Vec::new());
            process["probes"]["alive"] = serde_json::json!({"cmd": "true"});
        }
    }
    request
}

#[test]
fn every_request_kind_with_hostile_numbers_leaves_the_server_flat_and_answering() {
    let server = ServerGuard::new("door");
    let folder = server.state.parent().expect("the test's folder").to_owned();
    let pid = start_limited_server(&server, SERVER_VMEM_KIB);
    // An ended call, and a task that runs.
    let ended = output_within(
        "an ended call",
        &mut server.oino(&["run", "--", "seq 1 300"]),
    );
    assert!(ended.status.success());
    let done = server.id_of("seq 1 300");
    server.task("live", "while :; do echo tick; sleep 0.2; done");
    let before = status_kib(pid, "VmRSS");
    let (mut tried, mut answered) = (0, 0);
    for request in golden_requests() {
        // Its own end: it is tried as the last thing below.
        if request["op"] == "kill_server" {
            continue;
        }
        for key in [done.as_str(), "live"] {
            for changed in hostile(&aimed(request.clone(), key, &folder)) {
                let line = changed.to_string().replace("\"1e400-here\"", "1e400");
                let reply = send(&server.socket, &line).unwrap_or_default();
                tried += 1;
                answered += usize::from(reply.starts_with(r#"{"ok":true"#));
                assert!(lives(pid), "the server died of {line}");
                let rss = status_kib(pid, "VmRSS");
                assert!(
                    rss < before + ONE_REQUEST_KIB,
                    "{line} grew the server from {before} to {rss} KiB"
                );
            }
        }
        // It answers others still, at once.
        let listed = send(&server.socket, r#"{"op":"list"}"#).unwrap_or_default();
        assert!(
            listed.starts_with(r#"{"ok":true"#),
            "after {request}: {listed}"
        );
    }
    assert!(tried > 200, "{tried} hostile requests");
    // Most reached their handler and were served (within bounds), not only refused.
    assert!(answered * 3 > tried, "{answered} of {tried} served");
    let peak = status_kib(pid, "VmHWM");
    assert!(
        peak < before + ONE_REQUEST_KIB,
        "the server peaked at {peak} KiB, from {before}"
    );
    // No handler panicked on a number (a panic ends its connection, not the server).
    for log in std::fs::read_dir(server.state.join("oino")).expect("the server's folder") {
        let log = log.expect("an entry").path();
        if log.extension().is_some_and(|ext| ext == "log") {
            let text = std::fs::read_to_string(&log).expect("the server's log");
            assert!(!text.contains("panicked"), "{}: {text}", log.display());
        }
    }
    let stopped = send(&server.socket, r#"{"op":"kill_server"}"#).unwrap_or_default();
    assert!(stopped.contains("stopping"), "{stopped}");
    wait_until_blocking("the server to stop", || {
        server_pid(&server.socket).is_none()
    });
}

/// The same door in process: a front end with a core of its own (`--embedded`, the headless
/// mode) asks through its link, which holds each request as the server does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_core_in_process_holds_requests_within_the_same_bounds() {
    use oino::link::Link;
    use oino::pty::TermSize;
    let core = crate::support::test_core("door-in-process");
    let id = crate::support::unique_id("ended");
    let handle = core
        .start(crate::support::request(&id, "seq 1 3"))
        .expect("a call");
    handle.result().await;
    let link = Link::Local(core);
    // Past the bounds, yet small enough that a core without them would not take the test
    // harness down with it.
    let huge = TermSize {
        cols: 1500,
        rows: 700,
    };
    let screen = link
        .ask(ask::Snapshot {
            key: String::from(&id),
            size: (Some(huge)).to_wire(),
        })
        .await
        .expect("a screen");
    assert_eq!(
        (screen.size.cols, screen.size.rows, screen.rows.len()),
        (1000, 500, 500)
    );
    let page = link
        .ask(ask::HistoryPage {
            key: String::from(&id),
            lines_back: u64::MAX,
            rows: usize::MAX,
        })
        .await
        .expect("a page");
    assert_eq!(page.lines, ["1", "2", "3", ""]);
    let slice = link
        .ask(ask::Output {
            key: String::from(&id),
            since: Some(u64::MAX),
            max_bytes: Some(usize::MAX),
        })
        .await
        .expect("a read");
    assert!(slice.text.is_empty(), "{slice:?}");
    link.close().await;
}

/// The descriptors a process holds.
fn descriptors(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

#[test]
fn a_wait_for_a_month_ends_when_its_client_leaves() {
    let server = ServerGuard::new("door-wait");
    let pid = start_limited_server(&server, SERVER_VMEM_KIB);
    server.task("live", "while :; do sleep 1; done");
    let before = descriptors(pid);
    let waits: Vec<UnixStream> = (0..20)
        .map(|n| {
            let mut stream = UnixStream::connect(&server.socket).expect("connect");
            let line = if n % 2 == 0 {
                r#"{"op":"wait","key":"live","timeout_ms":2592000000}"#
            } else {
                r#"{"op":"wait_output","key":"live","offset":18446744073709551615,"timeout_ms":2592000000}"#
            };
            writeln!(stream, "{line}").expect("send");
            stream
        })
        .collect();
    wait_until_blocking("the server to hold the waits", || {
        descriptors(pid) >= before + 20
    });
    drop(waits);
    // Each wait let go of its connection: nothing is held for a month.
    wait_until_blocking("the waits to end with their clients", || {
        descriptors(pid) <= before
    });
}

/// `oino ARGS` in `dir` under `ulimit -v KIB`: what it printed, and its status.
fn oino_limited(
    server: &ServerGuard,
    dir: &Path,
    vmem_kib: u64,
    args: &str,
) -> std::process::Output {
    output_within(
        "oino under ulimit -v",
        std::process::Command::new("bash")
            .args([
                "-c",
                &format!("ulimit -v {vmem_kib} && exec \"$0\" {args}"),
                env!("CARGO_BIN_EXE_oino"),
            ])
            .current_dir(dir)
            .env("OINO_SOCKET", &server.socket)
            .env("XDG_STATE_HOME", &server.state),
    )
}

/// A 2 KB `.env` whose each variable repeats the one before it: gigabytes once expanded.
fn env_bomb() -> String {
    let mut text = String::from("V0=0123456789abcdef0123456789abcdef\n");
    for n in 1..=40 {
        let previous = format!("${{V{}}}", n - 1);
        let _ = writeln!(text, "V{n}={}", previous.repeat(50));
    }
    text
}

/// A process-compose file of 190 KB that names one 100 KB string through 30,000 aliases.
fn alias_bomb() -> String {
    let mut text = format!(
        "x-big: &big \"{}\"\nprocesses:\n  web:\n    command: echo hi\n    environment:\n",
        "b".repeat(100_000)
    );
    text.push_str("x-list:\n");
    for _ in 0..30_000 {
        text.push_str("  - *big\n");
    }
    text
}

#[test]
fn a_file_that_expands_past_its_budget_is_refused_at_its_place() {
    let server = ServerGuard::new("file-bombs");
    for (label, file, text, place) in [
        ("env", ".env", env_bomb(), ".env:"),
        (
            "alias",
            "process-compose.yaml",
            alias_bomb(),
            "process-compose.yaml:",
        ),
    ] {
        let dir = server.state.parent().expect("the folder").join(label);
        std::fs::create_dir_all(&dir).expect("a project folder");
        std::fs::write(dir.join(file), &text).expect("the file");
        if file == ".env" {
            std::fs::write(
                dir.join("oino.toml"),
                "[processes.web]\ncmd = \"echo ${V40}\"\n",
            )
            .expect("oino.toml");
        }
        // 512 MiB: the client reads the file, and a gigabyte of it would fail here.
        let up = oino_limited(&server, &dir, 512 << 10, "up");
        let said = String::from_utf8_lossy(&up.stderr);
        assert_eq!(up.status.code(), Some(2), "{label}: {said}");
        assert!(
            said.contains(place),
            "{label}: the place in the file: {said}"
        );
        assert!(
            said.contains("MiB") && !said.contains("memory allocation"),
            "{label}: in words: {said}"
        );
    }
}

#[test]
fn a_running_projects_file_that_becomes_a_bomb_is_a_notice_not_a_crash() {
    let server = ServerGuard::new("file-bomb-live");
    let pid = start_limited_server(&server, SERVER_VMEM_KIB);
    let dir = server.state.parent().expect("the folder").join("live");
    std::fs::create_dir_all(&dir).expect("a project folder");
    std::fs::write(dir.join(".env"), "V0=ok\n").expect(".env");
    std::fs::write(
        dir.join("oino.toml"),
        "[processes.web]\ncmd = \"echo ${V0}; sleep 600\"\n",
    )
    .expect("oino.toml");
    let up = output_within("oino up", server.oino(&["up"]).current_dir(&dir));
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    // A `git pull` brings a bomb: the server reads the changed file again by itself.
    std::fs::write(dir.join(".env"), env_bomb()).expect("the bomb");
    let log = std::fs::read_dir(server.state.join("oino"))
        .expect("the server's folder")
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "log"))
        .expect("the server's log");
    wait_until_blocking("the server to say the file cannot be applied", || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("cannot be applied"))
    });
    assert!(lives(pid), "the server lives");
    let listed = output_within("oino ls", &mut server.oino(&["ls"]));
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("web"),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
}

/// A far side of oino's protocol that lies: it answers `hello` as a server of this version, an
/// entry with the golden example, each `output` with `text` and a `run` with a result of `text`
/// (given in JSON, escapes as the far side pleases). Run as `--via 'python3 FILE'`.
fn lying_far_side(dir: &Path, text: &str) -> String {
    let golden = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "src/remote/protocol/requests/snapshots/\
         oino__remote__protocol__requests__tests__every_request_reply_and_event_reads_and_writes_as_pinned.snap",
    ))
    .expect("the golden lines");
    let reply_of = |kind: &str| -> String {
        let mut lines = golden.lines();
        lines.find(|line| *line == kind).expect("the kind");
        lines
            .nth(1)
            .and_then(|line| line.strip_prefix("< "))
            .expect("its reply")
            .to_owned()
    };
    let script = format!(
        r#"import json, sys
entry = json.loads(r'''{entry}''')
result = json.loads(r'''{result}''')
snapshot = json.loads(r'''{snapshot}''')
text = json.loads(r'''{text}''')
def say(value, more=False):
    # As the server writes a reply: its request's id, then whether another follows.
    reply = {{"req": request["req"], "more": True}} if more else {{"req": request["req"]}}
    reply.update(ok=True, result=value)
    sys.stdout.write(json.dumps(reply, separators=(",", ":")) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    op = request["op"]
    if op == "hello":
        say({{"version": request["version"], "server_pid": 1, "oino": "0.1.0"}})
    elif op in ("entry", "detach"):
        say(entry)
    elif op == "list":
        say([entry])
    elif op == "output":
        since = request.get("since") or 0
        say({{"text": text if since < entry["bytes"] else "", "from": since, "next_offset": entry["bytes"]}})
    elif op == "snapshot":
        snapshot["rows"][0][0]["t"] = text
        say(snapshot)
    elif op == "wait_output":
        say(False)
    elif op == "run":
        say(entry, more=True)
        say(dict(result, text=text, detached=None))
    else:
        say("ok")
"#,
        entry = reply_of("Entry"),
        result = reply_of("Run"),
        snapshot = reply_of("Snapshot"),
        text = serde_json::to_string(text).expect("JSON"),
    );
    let file = dir.join("far.py");
    std::fs::write(&file, script).expect("the far side");
    format!("python3 {}", file.display())
}

#[test]
fn a_far_sides_text_is_inert_on_this_terminal() {
    let server = ServerGuard::new("far-inert");
    let dir = server.state.parent().expect("the folder").to_owned();
    // A title, a clipboard write and four tmux paste buffers, as a far log may hold them.
    let hostile = "build ok\n\u{1b}]0;pwned\u{7}\u{1b}]52;c;aGk=\u{7}\u{1b}Ptmux;\u{1b}\u{1b}]52;c;eA==\u{7}\u{1b}\\\u{9b}2J done\n";
    let via = lying_far_side(&dir, hostile);
    let sgr = regex::Regex::new("\x1b\\[[0-9;:]*m").expect("a pattern");
    for args in [
        vec!["logs", "t1"],
        vec!["run", "--", "make"],
        vec!["screen", "t1"],
        vec!["screen", "--ansi", "t1"],
    ] {
        let mut command = server.oino(&["--via", &via]);
        command.args(&args);
        let out = output_within("a command through the far side", &mut command);
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            printed.contains("build ok") && printed.contains("done") || args[0] == "screen",
            "{args:?}: {printed:?} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Only the SGR sequences `screen --ansi` writes itself, and line feeds.
        let without_sgr = sgr.replace_all(&printed, "");
        assert!(
            !without_sgr
                .chars()
                .any(|c| matches!(c, '\0'..='\x09' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}')),
            "{args:?} printed a control character: {printed:?}"
        );
    }
}

#[test]
fn a_far_side_that_never_ends_its_line_is_refused_before_it_costs_memory() {
    let server = ServerGuard::new("far-long-line");
    let dir = server.state.parent().expect("the folder").to_owned();
    // A compromised container: its `oino proxy` answers with one line that never ends.
    let far = dir.join("endless.sh");
    std::fs::write(&far, "read -r hello\nyes | tr -d '\\n'\n").expect("the far side");
    // 512 MiB of address space: the client grew past that in a second without the cap.
    let out = oino_limited(
        &server,
        &dir,
        512 << 10,
        &format!("--via 'bash {}' ls", far.display()),
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("a line longer than 16 MiB"), "{said}");
    assert!(!said.contains("memory allocation"), "{said}");
}

#[test]
fn a_silent_far_side_is_given_up_on_and_garbage_exits_2() {
    let server = ServerGuard::new("far-silent");
    let started = std::time::Instant::now();
    let out = output_within(
        "a command through a silent far side",
        &mut server.oino(&["--via", "sleep 1000", "ls"]),
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("gave no answer within 20 s"), "{said}");
    assert!(
        started.elapsed() < Duration::from_secs(29),
        "it waited {:?}",
        started.elapsed()
    );
    let out = output_within(
        "a command through a far side speaking garbage",
        &mut server.oino(&["--via", "echo Welcome to the box!", "ls"]),
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("something other than oino's protocol"),
        "{said}"
    );
}

#[test]
fn an_interface_on_a_far_side_that_never_ends_its_line_lists_it_and_goes_on() {
    let server = ServerGuard::new("far-long-line-ui");
    let dir = server.state.parent().expect("the folder").to_owned();
    let far = dir.join("endless.sh");
    std::fs::write(&far, "read -r hello\nyes | tr -d '\\n'\n").expect("the far side");
    let script = dir.join("script");
    std::fs::write(
        &script,
        "run --title near-job echo near-done\n\
         wait-for near-done\n\
         wait-for longer than 16 MiB --timeout 20\n\
         snapshot\n",
    )
    .expect("the script");
    // 1 GiB of address space: the interface grew to 1.8 GB in half a second without the cap.
    let out = oino_limited(
        &server,
        &dir,
        1 << 20,
        &format!(
            "headless --server --size 110x24 --via 'bash {}' --script {}",
            far.display(),
            script.display()
        ),
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{shown}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(shown.contains("near-done"), "{shown}");
}

/// A project folder holding `toml` as its `oino.toml`.
fn project_folder(server: &ServerGuard, label: &str, toml: &str) -> std::path::PathBuf {
    let dir = server.state.parent().expect("the folder").join(label);
    std::fs::create_dir_all(&dir).expect("a project folder");
    std::fs::write(dir.join("oino.toml"), toml).expect("oino.toml");
    dir
}

#[test]
fn a_probe_leaves_nothing_running_after_each_try_nor_after_a_stop() {
    let server = ServerGuard::new("probe-whole");
    // Unique words, to count this test's own processes.
    let (left, piped) = (
        format!("1004.{}", std::process::id()),
        format!("1006.{}", std::process::id()),
    );
    let dir = project_folder(
        &server,
        "probes",
        &format!(
            "[processes.web]\ncmd = \"sleep 600\"\n\
             ready_cmd = \"echo try >> tries; sleep {left} >/dev/null 2>&1 & false\"\n\
             ready_interval = 0.2\n\n\
             [processes.api]\ncmd = \"sleep 600\"\nready_cmd = \"sleep {piped} | cat\"\n\
             ready_interval = 0.2\n"
        ),
    );
    let up = output_within("oino up", server.oino(&["up"]).current_dir(&dir));
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let tries =
        || std::fs::read_to_string(dir.join("tries")).map_or(0, |text| text.lines().count());
    wait_until_blocking("ten tries of the probe", || tries() >= 10);
    // What each try left in the background was ended with it: at most the one of a try under
    // way now (without the group ended, one a try: ten and more).
    let leftover = running(&["sleep", &left]);
    assert!(leftover <= 1, "{leftover} sleeps left by {} tries", tries());
    wait_until_blocking("the piped probe to run", || {
        running(&["sleep", &piped]) == 1
    });
    // A stop while a try runs ends its whole group (its `sleep` went to pid 1).
    let down = output_within("oino down", server.oino(&["down"]).current_dir(&dir));
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    wait_until_blocking("nothing of the probes to be left", || {
        running(&["sleep", &left]) + running(&["sleep", &piped]) == 0
    });
    // And at the server's end, with a try under way.
    let up = output_within("oino up", server.oino(&["up"]).current_dir(&dir));
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    wait_until_blocking("the piped probe to run again", || {
        running(&["sleep", &piped]) == 1
    });
    let stopped = output_within("kill-server", &mut server.oino(&["kill-server"]));
    assert!(stopped.status.success());
    wait_until_blocking(
        "nothing of the probes to be left at the server's end",
        || running(&["sleep", &left]) + running(&["sleep", &piped]) == 0,
    );
}

#[test]
fn a_probe_interval_below_the_floor_or_no_failures_is_refused_at_its_place() {
    let server = ServerGuard::new("floors");
    for (label, key, said) in [
        (
            "zero",
            "ready_interval = 0",
            "ready_interval is at least 0.1 s",
        ),
        (
            "tiny",
            "ready_interval = 1e-9",
            "ready_interval is at least 0.1 s",
        ),
        (
            "alive",
            "alive_interval = 0.01",
            "alive_interval is at least 0.1 s",
        ),
        (
            "failures",
            "alive_failures = 0",
            "alive_failures is at least 1",
        ),
    ] {
        let dir = project_folder(
            &server,
            label,
            &format!(
                "[processes.web]\ncmd = \"sleep 600\"\nready_cmd = \"true\"\n\
                 alive_cmd = \"true\"\n{key}\n"
            ),
        );
        let up = output_within("oino up", server.oino(&["up"]).current_dir(&dir));
        let stderr = String::from_utf8_lossy(&up.stderr);
        assert_eq!(up.status.code(), Some(2), "{key}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "oino.toml:5:{}: {said}",
                key.find('=').expect("=") + 3
            )),
            "{key}: {stderr}"
        );
    }
}

/// The moments (ns) a probe wrote into `file`, one a line.
fn tries_at(file: &Path) -> Vec<u128> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// The shortest time between two tries, in ms.
fn shortest_gap_ms(tries: &[u128]) -> u128 {
    tries
        .windows(2)
        .map(|pair| pair[1].saturating_sub(pair[0]) / 1_000_000)
        .min()
        .unwrap_or(u128::MAX)
}

#[test]
fn probes_are_tried_no_faster_than_the_floor_whatever_a_request_or_a_compose_file_says() {
    let server = ServerGuard::new("floors-live");
    let dir = server.state.parent().expect("the folder").join("live");
    std::fs::create_dir_all(&dir).expect("a folder");
    let raw = dir.join("raw-tries");
    // A request straight to the server, past the file readers: 0 ms between tries.
    let request = serde_json::json!({
        "op": "project",
        "project": {
            "name": "raw", "file": dir.join("oino.toml"),
            "processes": [{
                "name": "web", "cmd": "sleep 600", "cwd": dir, "env": [], "env_files": [],
                "autostart": true, "restart": "never", "restart_limit": 0, "backoff_ms": 0,
                "ready": null, "after": [],
                "probes": {
                    "ready": {"cmd": format!("date +%s%N >> {}; false", raw.display())},
                    "ready_interval_ms": 0, "ready_timeout_ms": null,
                    "alive": null, "alive_interval_ms": 0, "alive_failures": 0
                }
            }]
        }
    });
    let _ = output_within("a server", &mut server.oino(&["ls"]));
    let reply = send(&server.socket, &request.to_string()).unwrap_or_default();
    assert!(reply.starts_with(r#"{"ok":true"#), "{reply}");
    wait_until_blocking("six tries", || tries_at(&raw).len() >= 6);
    let gap = shortest_gap_ms(&tries_at(&raw));
    assert!(gap >= 90, "tries {gap} ms apart");
    // A process-compose file's 0 is its default (1 s), not a flood.
    let compose = dir.join("compose");
    std::fs::create_dir_all(&compose).expect("a folder");
    let file_tries = compose.join("tries");
    std::fs::write(
        compose.join("process-compose.yaml"),
        format!(
            "processes:\n  db:\n    command: sleep 600\n    readiness_probe:\n      exec:\n        \
             command: \"date +%s%N >> {}; false\"\n      period_seconds: 0\n",
            file_tries.display()
        ),
    )
    .expect("the file");
    let up = output_within("oino up", server.oino(&["up"]).current_dir(&compose));
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    wait_until_blocking("three tries", || tries_at(&file_tries).len() >= 3);
    let gap = shortest_gap_ms(&tries_at(&file_tries));
    assert!(gap >= 500, "tries {gap} ms apart");
}
