//! Big inputs: each limit is the one of the thing the user controls (the command, one variable,
//! the whole environment), and a refusal names that thing and its limit.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::Output;

use crate::support::{DEADLINE, ServerGuard};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Starts the server with a stack limit of `stack_kib` (`ulimit -s`): the kernel lets a program
/// start with arguments and environment of a quarter of that.
fn start_with_stack(server: &ServerGuard, stack_kib: u32) {
    let output = std::process::Command::new("bash")
        .args([
            "-c",
            &format!("ulimit -s {stack_kib} && exec \"$0\" server"),
            env!("CARGO_BIN_EXE_oino"),
        ])
        .env("OINO_SOCKET", &server.socket)
        .env("XDG_STATE_HOME", &server.state)
        .output()
        .expect("bash runs");
    assert!(
        output.status.success(),
        "setting the stack limit needs root or a hard limit above {stack_kib} KiB: {}",
        stderr(&output)
    );
}

/// Ten variables of 110,000 bytes: 1.1 MB, more than one request used to carry.
fn big_environment(command: &mut std::process::Command) -> &mut std::process::Command {
    for n in 1..=10 {
        command.env(format!("BIG_{n}"), "v".repeat(110_000));
    }
    command
}

#[test]
fn an_environment_within_the_kernels_limit_reaches_the_call() {
    let server = ServerGuard::new("big-env");
    // 8 MiB of stack: 2 MiB of arguments and environment.
    start_with_stack(&server, 8192);
    let output = big_environment(&mut server.oino(&["run", "--", "echo ${#BIG_1} ${#BIG_10}"]))
        .output()
        .expect("oino run");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "110000 110000\n",
        "{}",
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn an_environment_past_the_kernels_limit_is_refused_naming_it() {
    let server = ServerGuard::new("env-past-limit");
    // 4 MiB of stack: 1 MiB of arguments and environment, less than the 1.1 MB given.
    start_with_stack(&server, 4096);
    let output = big_environment(&mut server.oino(&["run", "--", "echo never"]))
        .output()
        .expect("oino run");
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(
        said.contains("environment") && said.contains("1048576") && said.contains("ulimit -s"),
        "the refusal names the environment, the limit and where it comes from: {said}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).is_empty());
    // Nothing was left behind: no entry, no log.
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "[]");
    let logs = std::fs::read_dir(server.state.join("oino/logs")).map_or(0, Iterator::count);
    assert_eq!(logs, 0, "a refused call leaves no log");
}

#[test]
fn many_arguments_are_refused_naming_the_command_and_its_limit() {
    let server = ServerGuard::new("many-args");
    let word = "a".repeat(99);
    let words = vec![word.as_str(); 12_000];
    let output = server
        .oino(&["run", "--"])
        .args(&words)
        .output()
        .expect("oino run");
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(
        said.contains("12000 words") && said.contains("1199999 bytes") && said.contains("131071"),
        "the refusal names the words, their length and the limit: {said}"
    );
    assert!(!said.contains("Broken pipe"), "{said}");
}

#[test]
fn a_variable_longer_than_one_argument_can_be_is_refused_naming_it() {
    let server = ServerGuard::new("long-variable");
    let mut stream = connect(&server);
    let request = serde_json::json!({
        "op": "start",
        "command": "echo never",
        "env": [["PATH", "/usr/bin:/bin"], ["HUGE_ONE", "x".repeat(200_000)]],
    });
    let reply = exchange(&mut stream, &request);
    assert_eq!(reply["code"], "too_large", "{reply}");
    let error = reply["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("HUGE_ONE") && error.contains("131071"),
        "the refusal names the variable and the limit: {error}"
    );
    // The connection goes on.
    let listed = exchange(&mut stream, &serde_json::json!({"op": "list"}));
    assert_eq!(listed["ok"], true, "{listed}");
    assert_eq!(
        listed["result"],
        serde_json::json!([]),
        "nothing was started"
    );
}

#[test]
fn a_request_past_the_cap_is_refused_and_the_connection_goes_on() {
    let server = ServerGuard::new("past-cap");
    let mut stream = connect(&server);
    let cap = oino::remote::protocol::MAX_REQUEST_BYTES;
    let mut huge = br#"{"op":"send","key":"c1","text":""#.to_vec();
    huge.resize(cap + 100, b'x');
    huge.extend_from_slice(b"\"}\n");
    // The whole line is written, not cut off by a server that stopped reading it.
    let mut writer = stream.try_clone().expect("clone");
    let sender = std::thread::spawn(move || writer.write_all(&huge));
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("a reply");
    sender
        .join()
        .expect("sender")
        .expect("the request was read whole");
    let reply: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(reply["code"], "too_large", "{reply}");
    assert!(
        reply["error"]
            .as_str()
            .is_some_and(|error| error.contains(&cap.to_string())),
        "{reply}"
    );
    stream.write_all(b"{\"op\":\"list\"}\n").expect("send");
    line.clear();
    reader.read_line(&mut line).expect("a reply");
    assert!(line.starts_with("{\"ok\":true"), "{line}");
}

/// A connection to the server, started first.
fn connect(server: &ServerGuard) -> UnixStream {
    let started = server.oino(&["server"]).output().expect("oino server");
    assert!(started.status.success(), "{}", stderr(&started));
    let stream = UnixStream::connect(&server.socket).expect("connect");
    stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
    stream
}

fn exchange(stream: &mut UnixStream, request: &serde_json::Value) -> serde_json::Value {
    let mut line = serde_json::to_vec(request).expect("JSON");
    line.push(b'\n');
    stream.write_all(&line).expect("send");
    let mut reply = String::new();
    BufReader::new(stream.try_clone().expect("clone"))
        .read_line(&mut reply)
        .expect("reply");
    serde_json::from_str(&reply).expect("JSON reply")
}

#[test]
fn a_variable_that_is_not_utf8_is_left_out_with_a_warning() {
    use std::os::unix::ffi::OsStrExt;
    let server = ServerGuard::new("non-utf8-env");
    let output = server
        .oino(&["run", "--", "echo \"[$GOOD] [${BAD-unset}]\""])
        .env("GOOD", "yes")
        .env("BAD", std::ffi::OsStr::from_bytes(b"\xff\xfe"))
        .output()
        .expect("oino run");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "[yes] [unset]\n",
        "{}",
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("BAD") && stderr(&output).contains("not UTF-8"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_folder_whose_name_is_not_utf8_is_refused_naming_it() {
    use std::os::unix::ffi::OsStrExt;
    let server = ServerGuard::new("non-utf8-folder");
    let folder = crate::support::temp_dir("folder").join(std::ffi::OsStr::from_bytes(b"d\xff"));
    std::fs::create_dir_all(&folder).expect("the folder");
    for args in [
        &["run", "--", "pwd"][..],
        &["run", "--cwd", ".", "--", "pwd"],
    ] {
        let output = server
            .oino(args)
            .current_dir(&folder)
            .output()
            .expect("oino run");
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains("not UTF-8") && said.contains("d\\xFF"),
            "{args:?}: {said}"
        );
    }
}
