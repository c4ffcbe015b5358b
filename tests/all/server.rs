//! The server: two clients, socket modes and peers, bad requests, racing starts, kill-server.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Output, Stdio};

use crate::support::{DEADLINE, ServerGuard, processes_of, wait_until_blocking};
use oino::remote::protocol::Travel as _;
use oino::remote::protocol::requests as ask;

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Starts the server in the background, as a client would.
fn start(server: &ServerGuard) {
    let output = server.oino(&["server"]).output().expect("oino server");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(server.socket.exists());
}

/// `oino server --socket PATH`, the socket named on the command line: the server it starts in
/// the background once took the command itself (`oino server … PATH`) for an elder server and
/// gave way, and the command waited 10 s for none and failed.
#[test]
fn oino_server_with_its_socket_on_the_command_line_starts_one() {
    let server = ServerGuard::new("socket-flag");
    let socket = server.socket.to_str().expect("a UTF-8 path");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_oino"));
    command
        .args(["server", "--socket", socket])
        .env("XDG_STATE_HOME", &server.state)
        .env_remove("OINO_SOCKET");
    let output = command.output().expect("oino server");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text(&output).starts_with(&format!("oino server on {socket}")),
        "{}",
        text(&output)
    );
    let listed = server.oino(&["ls"]).output().expect("oino ls");
    assert!(listed.status.success());
    assert_eq!(servers_of(&server), 1);
}

#[test]
fn a_call_run_in_one_client_is_detached_from_another_and_followed_by_a_third() {
    let server = ServerGuard::new("two-clients");
    let command = "echo begin; for i in $(seq 1 40); do echo \"n $i\"; sleep 0.05; done; echo end";
    let waiter = server
        .oino(&["run", "--", command])
        .stdout(Stdio::piped())
        .spawn()
        .expect("oino run");
    let id = format!("run-{}", waiter.id());
    wait_until_blocking("the call to print", || {
        let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
        text(&listed).contains(&id)
            && text(&listed).contains("\"bytes\": ")
            && !text(&listed).contains("\"bytes\": 0,")
    });
    let detached = server
        .oino(&["detach", &id, "--name", "counter"])
        .output()
        .expect("oino detach");
    assert_eq!(
        text(&detached),
        "t1 counter\n",
        "{}",
        String::from_utf8_lossy(&detached.stderr)
    );

    let result = waiter.wait_with_output().expect("the waiter");
    assert_eq!(result.status.code(), Some(0));
    let printed = text(&result);
    let marker = "\n\n[Detached to background task t1: detached by `oino detach`]\n";
    let before = printed
        .strip_suffix(marker)
        .unwrap_or_else(|| panic!("no exact marker: {printed:?}"));

    let followed = server
        .oino(&["logs", "-f", "counter"])
        .output()
        .expect("oino logs");
    assert_eq!(followed.status.code(), Some(0));
    let expected: String = std::iter::once("begin\n".to_owned())
        .chain((1..=40).map(|n| format!("n {n}\n")))
        .chain(std::iter::once("end\n".to_owned()))
        .collect();
    assert_eq!(format!("{before}{}", text(&followed)), expected);
}

#[test]
fn a_call_runs_in_the_clients_folder_with_the_clients_environment() {
    let server = ServerGuard::new("cwd-env");
    start(&server);
    let folder = crate::support::temp_dir("client-folder");
    let output = server
        .oino(&["run", "--", "pwd; echo $CLIENT_ONLY"])
        .current_dir(&folder)
        .env("CLIENT_ONLY", "from the client")
        .output()
        .expect("oino run");
    assert_eq!(
        text(&output),
        format!("{}\nfrom the client\n", folder.display())
    );
}

#[test]
fn the_socket_is_private_and_other_users_are_refused() {
    assert!(
        nix::unistd::getuid().is_root(),
        "this test switches uid: run the tests as root, as CI does"
    );
    let server = ServerGuard::new("modes");
    start(&server);
    let dir = server.socket.parent().expect("folder");
    assert_eq!(
        std::fs::metadata(dir).expect("folder").mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&server.socket).expect("socket").mode() & 0o777,
        0o600
    );

    // Opened up by hand, the socket still answers another uid with a refusal.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(&server.socket, std::fs::Permissions::from_mode(0o666))
        .expect("chmod");
    // A copy of oino that the other user can reach, wherever the build lives.
    let bin = crate::support::temp_dir("nobody-bin");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let reachable = bin.join("oino");
    std::fs::copy(env!("CARGO_BIN_EXE_oino"), &reachable).expect("copy oino");
    std::fs::set_permissions(&reachable, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let as_nobody = || {
        std::process::Command::new(&reachable)
            .arg("ls")
            .env("OINO_SOCKET", &server.socket)
            .current_dir("/")
            .uid(65534)
            .gid(65534)
            .env("HOME", "/tmp")
            .output()
    };
    // A process forked by another test meanwhile may still hold the copy open for writing
    // until it execs (ETXTBSY): that passes.
    let mut stranger = as_nobody();
    wait_until_blocking("the copy of oino to be free to run", || {
        let busy = matches!(&stranger, Err(err) if err.raw_os_error() == Some(26));
        if busy {
            stranger = as_nobody();
        }
        !busy
    });
    let stranger = stranger.expect("oino ls as nobody");
    let stderr = String::from_utf8_lossy(&stranger.stderr);
    // The client refuses first: the folder is not nobody's.
    assert_eq!(stranger.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("belongs to root (uid 0)"), "{stderr}");
    // A client that does not check (any program) is refused by the server, in words.
    let raw = std::process::Command::new("perl")
        .args([
            "-MIO::Socket::UNIX",
            "-e",
            r#"my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!";
               print $s qq({"op":"hello","version":3}\n); print scalar <$s>;"#,
        ])
        .arg(&server.socket)
        .current_dir("/")
        .uid(65534)
        .gid(65534)
        .output()
        .expect("perl as nobody");
    let reply = String::from_utf8_lossy(&raw.stdout);
    assert!(
        reply.contains("refused: this oino server belongs to uid 0"),
        "{reply} {}",
        String::from_utf8_lossy(&raw.stderr)
    );
    // And the owner is served as before.
    assert!(
        server
            .oino(&["ls"])
            .output()
            .expect("oino ls")
            .status
            .success()
    );
}

fn exchange(stream: &mut UnixStream, line: &[u8]) -> serde_json::Value {
    stream.write_all(line).expect("send");
    let mut reply = String::new();
    BufReader::new(stream.try_clone().expect("clone"))
        .read_line(&mut reply)
        .expect("reply");
    serde_json::from_str(&reply).unwrap_or_else(|err| panic!("{err}: {reply:?}"))
}

fn error_of(reply: &serde_json::Value) -> &str {
    assert_eq!(reply["ok"], false, "{reply}");
    reply["error"].as_str().expect("an error message")
}

#[test]
fn runs_from_other_pid_namespaces_get_ids_of_their_own() {
    // In a new pid namespace `oino run` is pid 1 each time, so both want the id `run-1`.
    let server = ServerGuard::new("pid-ns-ids");
    // Started outside: a server started from within would end with its namespace.
    start(&server);
    for word in ["first", "second"] {
        let output = std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc"])
            .arg(env!("CARGO_BIN_EXE_oino"))
            .args(["run", "--", &format!("echo {word}")])
            .env("OINO_SOCKET", &server.socket)
            .env("XDG_STATE_HOME", &server.state)
            .output()
            .expect("unshare (util-linux) runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("unshare failed"),
            "this test needs a new pid namespace (CI runs as root): {stderr}"
        );
        assert!(output.status.success(), "{word}: {stderr}");
        assert_eq!(text(&output), format!("{word}\n"));
    }
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).expect("json");
    let ids: Vec<&str> = entries
        .iter()
        .filter_map(|entry| entry["id"].as_str())
        .collect();
    assert_eq!(ids, ["run-1", "run-1-2"]);
}

#[test]
fn bytes_sent_to_a_process_arrive_unchanged() {
    let server = ServerGuard::new("bytes");
    start(&server);
    let mut stream = UnixStream::connect(&server.socket).expect("connect");
    stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
    let started = exchange(&mut stream, b"{\"op\":\"start\",\"command\":\"cat -v\"}\n");
    let id = started["result"]["id"].as_str().expect("an id").to_owned();
    // Text, then bytes that are no text: an invalid byte and an arrow key.
    let send = format!(
        "{{\"op\":\"send\",\"key\":\"{id}\",\"text\":\"é\",\"bytes\":[255,27,91,65,13]}}\n"
    );
    assert_eq!(exchange(&mut stream, send.as_bytes())["ok"], true);
    let read = format!("{{\"op\":\"output\",\"key\":\"{id}\"}}\n");
    let mut text = String::new();
    wait_until_blocking("cat to show the bytes it read", || {
        text = exchange(&mut stream, read.as_bytes())["result"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        text.contains("M-CM-)M-^?^[[A")
    });
    let kill = format!("{{\"op\":\"kill\",\"key\":\"{id}\"}}\n");
    assert_eq!(exchange(&mut stream, kill.as_bytes())["ok"], true, "{text}");
}

#[test]
fn bad_requests_get_errors_and_the_server_stays_up() {
    let server = ServerGuard::new("garbage");
    start(&server);
    let connect = || {
        let stream = UnixStream::connect(&server.socket).expect("connect");
        stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
        stream
    };
    let mut stream = connect();
    assert!(error_of(&exchange(&mut stream, b"garbage\n")).contains("not a request"));
    assert!(error_of(&exchange(&mut stream, b"{\"op\":\"fly\"}\n")).contains("not a request"));
    assert!(error_of(&exchange(&mut stream, b"{\"op\":\"kill\"}\n")).contains("missing field"));
    let unknown = exchange(&mut stream, b"{\"op\":\"wait\",\"key\":\"nothing\"}\n");
    assert!(error_of(&unknown).contains("no call or task `nothing`"));
    let old = exchange(&mut stream, b"{\"op\":\"hello\",\"version\":99}\n");
    assert!(error_of(&old).contains("the client speaks protocol 99"));
    let runs = old["data"]["runs"].as_str().unwrap_or_default();
    assert!(runs.starts_with("runs oino "), "{old}");
    // The same connection still works.
    assert_eq!(exchange(&mut stream, b"{\"op\":\"list\"}\n")["ok"], true);

    let mut truncated = connect();
    truncated.write_all(b"{\"op\":\"list\"").expect("send");
    truncated
        .shutdown(std::net::Shutdown::Write)
        .expect("shutdown");
    let mut reply = String::new();
    BufReader::new(truncated)
        .read_line(&mut reply)
        .expect("reply");
    assert!(reply.contains("cut short"), "{reply}");

    let other = server.oino(&["ls"]).output().expect("oino ls");
    assert!(
        other.status.success(),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
}

/// Live `oino server` processes for this socket.
fn servers_of(server: &ServerGuard) -> usize {
    let socket = server.socket.display().to_string();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.parse::<u32>().is_ok())
        })
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .filter(|cmdline| {
            let args: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
            args.contains(&&b"server"[..]) && args.contains(&socket.as_bytes())
        })
        .count()
}

#[test]
fn two_clients_racing_to_start_the_server_end_with_one() {
    let server = ServerGuard::new("race");
    let racers: Vec<_> = (0..2)
        .map(|_| {
            server
                .oino(&["ls"])
                .stdout(Stdio::null())
                .spawn()
                .expect("oino ls")
        })
        .collect();
    for racer in racers {
        assert!(racer.wait_with_output().expect("racer").status.success());
    }
    wait_until_blocking("one server", || servers_of(&server) == 1);
}

#[test]
fn servers_started_together_leave_exactly_one_serving() {
    const RACERS: usize = 3;
    // Each round starts servers at the same moment; each sees the others starting. Repeated
    // because the race is narrow: once in about twenty rounds all of them gave way.
    for round in 0..6 {
        let server = ServerGuard::new(&format!("together-{round}"));
        let socket = server.socket.display().to_string();
        let mut racers: Vec<_> = (0..RACERS)
            .map(|_| {
                server
                    .oino(&["server", "--socket", &socket, "--foreground"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("oino server")
            })
            .collect();
        let mut ended = 0;
        wait_until_blocking("all but one racing server ended", || {
            ended = racers
                .iter_mut()
                .filter_map(|racer| racer.try_wait().expect("try_wait"))
                .count();
            ended + 1 >= RACERS
        });
        assert_eq!(ended + 1, RACERS, "round {round}: no server stayed");
        let ls = server.oino(&["ls"]).output().expect("oino ls");
        assert!(
            ls.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&ls.stderr)
        );
        assert_eq!(servers_of(&server), 1, "round {round}");
        // The one serving is a racer, not a server `ls` had to start after all of them left.
        let serving = racers
            .iter_mut()
            .map(|racer| racer.try_wait().expect("try_wait"))
            .filter(Option::is_none)
            .count();
        assert_eq!(serving, 1, "round {round}: no racer stayed");
        drop(server);
        for mut racer in racers {
            racer.wait().expect("racer ends with kill-server");
        }
    }
}

#[test]
fn kill_server_ends_every_call_and_task() {
    let server = ServerGuard::new("kill-server");
    let run = server
        .oino(&[
            "run",
            "--detach-after",
            "0.5",
            "--",
            "sleep 600 & sleep 600",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("oino run");
    let id = format!("run-{}", run.id());
    assert!(run.wait_with_output().expect("oino run").status.success());
    assert!(processes_of(&id).len() >= 2, "the task is not running");
    let killed = server.oino(&["kill-server"]).output().expect("kill-server");
    assert!(killed.status.success());
    wait_until_blocking("every process to end", || processes_of(&id).is_empty());
    assert!(!server.socket.exists());
    // The socket goes just before the process does.
    wait_until_blocking("the server to end", || servers_of(&server) == 0);
}

/// A server ending (here: its task ignores TERM and HUP, so it waits out the kill grace) takes no
/// new client: a second `kill-server` is told at once that none answers, rather than reaching a
/// server that will never read it. The first returns once the server and its processes are gone.
#[test]
fn a_server_that_is_ending_takes_no_client_and_kill_server_waits_for_its_end() {
    let server = ServerGuard::new("ending");
    let run = server
        .oino(&[
            "run",
            "--detach-after",
            "0.2",
            "--",
            "trap '' TERM HUP; sleep 600",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("oino run");
    let id = format!("run-{}", run.id());
    assert!(run.wait_with_output().expect("oino run").status.success());
    assert!(!processes_of(&id).is_empty(), "the task is not running");
    let first = server.oino(&["kill-server"]).spawn().expect("kill-server");
    let log = server.state.join("oino").join(
        oino::remote::socket::server_log(&server.socket)
            .file_name()
            .expect("a log name"),
    );
    wait_until_blocking("the server to start ending", || {
        std::fs::read_to_string(&log).is_ok_and(|log| log.contains("stopping"))
    });
    let second = server.oino(&["kill-server"]).output().expect("kill-server");
    let said = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{said}");
    assert!(
        said.contains("does not answer") || said.contains("no server answers"),
        "{said}"
    );
    // Told while the server still waits out its task's grace: it was not left hanging.
    let mut first = first;
    assert!(
        first.try_wait().expect("kill-server").is_none(),
        "the second kill-server was answered only once the server had ended"
    );
    let first = first.wait_with_output().expect("kill-server");
    assert!(first.status.success());
    // Nothing is left once the first returns.
    assert!(
        processes_of(&id).is_empty(),
        "the task outlived kill-server"
    );
    wait_until_blocking("the server's process to be gone", || {
        servers_of(&server) == 0
    });
}

#[test]
fn an_idle_server_ends_by_itself_and_json_is_there_for_scripts() {
    let server = ServerGuard::new("idle");
    let mut hosting = server
        .oino(&["server", "--foreground", "--idle-exit", "1"])
        .stderr(Stdio::null())
        .spawn()
        .expect("oino server");
    wait_until_blocking("the socket", || server.socket.exists());
    // A client and a running call keep it; then a second with neither ends it.
    let run = server
        .oino(&["run", "--json", "--", "sleep 1.5; echo done"])
        .output()
        .expect("oino run");
    let result: serde_json::Value = serde_json::from_slice(&run.stdout).expect("JSON");
    assert_eq!(result["text"], "done\n");
    assert_eq!(result["is_error"], false);
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    let entries: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    assert_eq!(entries[0]["state"], "exited");
    assert_eq!(entries[0]["code"], 0);
    assert!(crate::support::wait_for_exit("the idle server to end", &mut hosting).success());
    assert!(!server.socket.exists());
}

#[test]
fn a_call_whose_waiter_dies_ends_and_a_run_is_acknowledged_first() {
    let server = ServerGuard::new("waiter-dies");
    let mut waiter = server
        .oino(&["run", "--", "echo up; sleep 600"])
        .stdout(Stdio::null())
        .spawn()
        .expect("oino run");
    let id = format!("run-{}", waiter.id());
    wait_until_blocking("the call's processes", || !processes_of(&id).is_empty());
    // Killed outright, it cannot end its call itself: the server sees its connection close.
    waiter.kill().expect("kill the waiter");
    waiter.wait().expect("reap the waiter");
    wait_until_blocking("the call to end", || processes_of(&id).is_empty());

    // With `started`, the entry comes first, then the result.
    let mut stream = UnixStream::connect(&server.socket).expect("connect");
    exchange(&mut stream, b"{\"op\":\"hello\",\"version\":1}\n");
    stream
        .write_all(b"{\"op\":\"run\",\"command\":\"echo hi\",\"id\":\"acked\",\"started\":true}\n")
        .expect("send");
    let mut replies = BufReader::new(&stream).lines();
    let mut next = || -> serde_json::Value {
        let line = replies.next().expect("a reply").expect("read");
        serde_json::from_str(&line).expect("json")
    };
    let entry = next();
    assert_eq!(entry["result"]["id"], "acked", "{entry}");
    let result = next();
    assert_eq!(result["result"]["text"], "hi\n", "{result}");
}

#[test]
fn servers_of_sockets_with_one_name_in_two_folders_keep_logs_apart() {
    let (a, b) = (ServerGuard::new("log-a"), ServerGuard::new("log-b"));
    // Both sockets are named test.sock; both servers log in one state folder.
    let mut logs = Vec::new();
    for server in [&a, &b] {
        let output = server
            .oino(&["server"])
            .env("XDG_STATE_HOME", &a.state)
            .output()
            .expect("oino server");
        let said = text(&output);
        let log = said
            .split("(log: ")
            .nth(1)
            .and_then(|rest| rest.strip_suffix(")\n"))
            .unwrap_or_else(|| panic!("no log path in {said:?}"))
            .to_owned();
        wait_until_blocking("the server's log", || {
            std::fs::read_to_string(&log).is_ok_and(|text| text.contains("listening on"))
        });
        logs.push(log);
    }
    assert_ne!(logs[0], logs[1]);
    for (log, server) in logs.iter().zip([&a, &b]) {
        let text = std::fs::read_to_string(log).expect("log");
        assert!(
            text.contains(&server.socket.display().to_string()),
            "{log}: {text}"
        );
    }
    let help = a.oino(&["server", "--help"]).output().expect("help");
    assert!(
        text(&help).contains("server-NAME-HASH.log"),
        "{}",
        text(&help)
    );
    let _ = b
        .oino(&["kill-server"])
        .env("XDG_STATE_HOME", &a.state)
        .output();
}

/// A connection to a started server, with a deadline on reads.
fn connect(server: &ServerGuard) -> UnixStream {
    start(server);
    let stream = UnixStream::connect(&server.socket).expect("connect");
    stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
    stream
}

fn listed(server: &ServerGuard) -> Vec<serde_json::Value> {
    let output = server.oino(&["ls", "--json"]).output().expect("oino ls");
    serde_json::from_slice(&output.stdout).expect("a JSON list")
}

/// Entry `id` once it is no longer running.
fn end_of(server: &ServerGuard, id: &str) -> serde_json::Value {
    let mut found = serde_json::Value::Null;
    wait_until_blocking(&format!("{id} to end"), || {
        found = listed(server)
            .into_iter()
            .find(|entry| entry["id"] == id)
            .unwrap_or_default();
        found["state"].is_string() && found["state"] != "running"
    });
    found
}

#[test]
fn a_whole_request_the_end_of_the_connection_cuts_off_its_newline_is_not_done() {
    let server = ServerGuard::new("no-newline");
    let mut stream = connect(&server);
    stream
        .write_all(br#"{"op":"start","command":"sleep 300"}"#)
        .expect("send");
    stream
        .shutdown(std::net::Shutdown::Write)
        .expect("shutdown");
    let mut replies = String::new();
    std::io::Read::read_to_string(&mut stream, &mut replies).expect("the reply, then the end");
    let reply: serde_json::Value = serde_json::from_str(&replies).expect("one reply");
    assert_eq!(reply["code"], "bad_request", "{reply}");
    assert!(error_of(&reply).contains("cut short"), "{reply}");
    assert_eq!(listed(&server), Vec::<serde_json::Value>::new());
}

#[test]
fn a_client_that_closes_its_run_connection_ends_its_call_even_after_sending_more() {
    let server = ServerGuard::new("run-left");
    for (id, more) in [("left-at-once", &b""[..]), ("left-after-a-byte", b"{")] {
        let mut stream = connect(&server);
        let run = format!(
            "{{\"op\":\"run\",\"id\":\"{id}\",\"command\":\"sleep 300\",\"started\":true}}\n"
        );
        assert_eq!(exchange(&mut stream, run.as_bytes())["ok"], true);
        stream.write_all(more).expect("send");
        drop(stream);
        let ended = end_of(&server, id);
        assert_eq!(ended["state"], "killed", "{id}: {ended}");
    }
}

#[test]
fn a_client_that_shuts_only_its_writing_half_after_run_gets_the_result() {
    let server = ServerGuard::new("run-half-closed");
    let mut stream = connect(&server);
    stream
        .write_all(b"{\"op\":\"run\",\"command\":\"sleep 0.5; echo done\"}\n")
        .expect("send");
    stream
        .shutdown(std::net::Shutdown::Write)
        .expect("shutdown");
    let mut replies = String::new();
    std::io::Read::read_to_string(&mut stream, &mut replies).expect("the result, then the end");
    let reply: serde_json::Value = serde_json::from_str(&replies).expect("one reply");
    assert_eq!(reply["ok"], true, "{reply}");
    assert_eq!(reply["result"]["text"], "done\n", "{reply}");
    assert_eq!(reply["result"]["exit"]["code"], 0, "{reply}");
}

#[test]
fn a_subscriber_that_leaves_no_longer_keeps_an_idle_server() {
    let server = ServerGuard::new("subscriber-left");
    let mut hosting = server
        .oino(&["server", "--foreground", "--idle-exit", "3"])
        .stderr(Stdio::null())
        .spawn()
        .expect("oino server");
    wait_until_blocking("the socket", || server.socket.exists());
    // An interface subscribes, then quits while nothing happens.
    let mut stream = UnixStream::connect(&server.socket).expect("connect");
    stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
    assert_eq!(
        exchange(&mut stream, b"{\"op\":\"subscribe\"}\n")["ok"],
        true
    );
    drop(stream);
    assert!(crate::support::wait_for_exit("the idle server to end", &mut hosting).success());
}

#[test]
fn a_session_named_on_the_command_line_wins_over_oino_socket() {
    let server = ServerGuard::new("session-wins");
    let runtime = crate::support::temp_dir("runtime");
    // Whatever happens below, the probe server is ended.
    let _probe = ServerGuard {
        socket: runtime.join("oino/probe.sock"),
        state: server.state.clone(),
    };
    let output = server
        .oino(&["server", "-s", "probe"])
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .expect("oino server");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let chosen = runtime.join("oino/probe.sock");
    assert!(chosen.exists(), "no server at {}", chosen.display());
    assert!(!server.socket.exists(), "OINO_SOCKET won over -s");
    let stopped = server
        .oino(&["kill-server", "-s", "probe"])
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .expect("oino kill-server");
    assert!(stopped.status.success());
}

#[test]
fn a_socket_in_a_folder_of_ones_own_leaves_that_folders_mode_alone() {
    let folder = crate::support::temp_dir("own-folder");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let socket = folder.join("s.sock");
    let server = ServerGuard {
        socket: socket.clone(),
        state: folder.join("state"),
    };
    start(&server);
    let mode = std::fs::metadata(&folder)
        .expect("folder")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(
        mode, 0o755,
        "oino changed the mode of a folder it did not make"
    );
    let socket_mode = std::fs::metadata(&socket)
        .expect("socket")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(socket_mode, 0o600);
}

#[test]
fn a_server_keeps_logs_as_long_as_the_settings_say() {
    let server = ServerGuard::new("log-retention");
    let logs = server.state.join("oino/logs");
    std::fs::create_dir_all(&logs).expect("logs folder");
    let touch = |name: &str, age: &str| {
        let file = logs.join(name);
        std::fs::write(&file, "old output\n").expect("a log");
        let touched = std::process::Command::new("touch")
            .args(["-d", age])
            .arg(&file)
            .status()
            .expect("touch");
        assert!(touched.success(), "touch -d {age}");
        file
    };
    let three_days = touch("c1-old.log", "3 days ago");
    let half_a_day = touch("c2-recent.log", "12 hours ago");
    let settings = crate::support::temp_dir("log-retention-settings").join("config.toml");
    std::fs::write(&settings, "log_retention_days = 1\n").expect("settings");
    let started = server
        .oino(&["server"])
        .env("OINO_CONFIG", &settings)
        .output()
        .expect("oino server");
    assert!(started.status.success(), "{started:?}");
    crate::support::wait_until_blocking("the old log to go", || !three_days.exists());
    assert!(half_a_day.exists(), "a log younger than the setting went");
}

/// What one link answered, in a form both sides can give alike (pids, times and paths differ).
#[derive(Debug, PartialEq)]
struct Answers {
    result: (String, Option<oino::pty::ProcessExit>),
    entry: (oino::core::EntryKind, oino::core::EntryState, u64),
    listed: Vec<String>,
    output: String,
    page: (Vec<String>, u64),
    found: oino::output::SearchHit,
    screen: Vec<String>,
    refusals: Vec<(Option<oino::core::ErrorCode>, String)>,
    killed: oino::core::EntryState,
}

async fn ask_everything(link: &oino::link::Link) -> Answers {
    use oino::core::CallRequest;
    let request = CallRequest {
        id: Some("door-1".into()),
        ..CallRequest::new("printf 'one\\ntwo\\nthree\\n'; exit 3")
    };
    let (id, result) = link.run(request).await.expect("run");
    let result = result.await.expect("the waiter").expect("a result");
    let entry = link
        .ask(ask::Entry {
            key: String::from(&id),
        })
        .await
        .expect("entry");
    let listed = link.ask(ask::List {}).await.expect("list");
    let output = link
        .ask(ask::Output {
            key: String::from(&id),
            since: Some(0),
            max_bytes: Some(1 << 16),
        })
        .await
        .expect("output");
    let page = link
        .ask(ask::HistoryPage {
            key: String::from(&id),
            lines_back: 0,
            rows: 10,
        })
        .await
        .expect("history");
    let found = link
        .ask(ask::FindLine {
            key: String::from(&id),
            from: page.total_lines,
            newer: false,
            query: String::from("t[wh]"),
        })
        .await
        .expect("find");
    let size = oino::pty::TermSize::new(20, 5);
    let screen = link
        .ask(ask::Snapshot {
            key: String::from(&id),
            size: (Some(size)).to_wire(),
        })
        .await
        .expect("snapshot");
    let refused = |err: oino::link::LinkError| (err.code(), err.to_string());
    let refusals = vec![
        refused(
            link.ask(ask::Entry {
                key: String::from("nothing"),
            })
            .await
            .expect_err("no such entry"),
        ),
        refused(
            link.ask(ask::Detach {
                key: String::from(&id),
                name: (None).map(str::to_owned),
                reason: Some(String::from("why")),
            })
            .await
            .expect_err("ended"),
        ),
        refused(
            link.ask(ask::Send::bytes(&id, b"x".to_vec()))
                .await
                .expect_err("ended"),
        ),
    ];
    Answers {
        result: (result.text, result.exit),
        entry: (entry.kind, entry.state, entry.bytes),
        listed: listed.into_iter().map(|entry| entry.id).collect(),
        output: output.text,
        page: (page.lines, page.total_lines),
        found,
        screen: screen.view().shown_lines().to_vec(),
        refusals,
        killed: link
            .ask(ask::Kill {
                key: String::from(&id),
            })
            .await
            .expect("kill")
            .state,
    }
}

/// The core has one door: every request means the same from a core in this process and from a
/// server through its socket, answers and refusals alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_means_the_same_in_process_and_through_a_server() {
    let server = ServerGuard::new("one-door");
    start(&server);
    let remote = oino::link::Link::connect(&oino::remote::address::Address::Socket(
        server.socket.clone(),
    ))
    .await
    .expect("connect");
    let core = oino::core::Core::new(oino::core::CoreConfig {
        log_dir: Some(server.state.join("local-logs")),
        ..oino::core::CoreConfig::default()
    })
    .expect("a core");
    let local = oino::link::Link::Local(core);
    let (here, there) = (ask_everything(&local).await, ask_everything(&remote).await);
    assert_eq!(here, there);
    // And what they answered is what was asked for.
    assert_eq!(here.output, "one\ntwo\nthree\n");
    assert_eq!(
        here.found,
        oino::output::SearchHit {
            line: Some(2),
            rank: 1,
            matches: 2
        }
    );
    assert_eq!(
        here.refusals[0],
        (
            Some(oino::core::ErrorCode::NoSuchEntry),
            "no call or task `nothing`".to_owned()
        )
    );
    local.close().await;
}

/// A question given up half way (a timeout) leaves its reply unread on the connection it was
/// asked on: that connection must not serve a later request, which would read that reply as its
/// own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_given_up_half_way_leaves_nothing_for_the_next_request_to_misread() {
    let server = ServerGuard::new("given-up");
    start(&server);
    let link = oino::link::Link::connect(&oino::remote::address::Address::Socket(
        server.socket.clone(),
    ))
    .await
    .expect("connect");
    let seen = link.ask(ask::List {}).await.expect("entries");
    assert!(seen.is_empty());
    for _ in 0..3 {
        // Polled once: the question is sent, its reply not read yet.
        let asked = link.ask(ask::List {});
        tokio::pin!(asked);
        tokio::select! {
            biased;
            // A reply read at once leaves nothing behind either.
            _ = &mut asked => {}
            () = std::future::ready(()) => {}
        }
    }
    let request = oino::core::CallRequest::new("echo after");
    let (id, result) = link.run(request).await.expect("the call runs");
    let result = result.await.expect("joined").expect("a result");
    assert!(result.text.contains("after"), "{id}: {:?}", result.text);
    let info = link
        .ask(ask::Entry {
            key: String::from(&id),
        })
        .await
        .expect("the entry");
    assert_eq!(info.id, id);
}
