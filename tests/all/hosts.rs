//! Servers elsewhere: every command through a transport (`--via`, as `--host` runs ssh) that
//! reaches `oino proxy` on the far side, and what a client says when the far side is another
//! version, something else than oino, or out of reach.

use std::path::Path;

use crate::support::{ServerGuard, output_within, temp_dir, wait_until_blocking};

/// A near side whose own server must stay untouched, and a far side reached through `--via`.
pub(crate) struct Sides {
    pub near: ServerGuard,
    pub far: ServerGuard,
}

impl Sides {
    pub fn new(label: &str) -> Self {
        Self {
            near: ServerGuard::new(&format!("{label}-near")),
            far: ServerGuard::new(&format!("{label}-far")),
        }
    }

    /// The transport: a plain command that runs `oino proxy` for the far side's server.
    pub fn via(&self) -> String {
        format!(
            "env OINO_SOCKET={} XDG_STATE_HOME={} {} proxy",
            self.far.socket.display(),
            self.far.state.display(),
            env!("CARGO_BIN_EXE_oino")
        )
    }

    /// `oino --via … ARGS` from the near side.
    fn oino(&self, args: &[&str]) -> std::process::Command {
        let via = self.via();
        let mut command = self.near.oino(&["--via", &via]);
        command.args(args);
        command
    }

    pub fn far_entries(&self) -> Vec<serde_json::Value> {
        let listed = output_within("far ls", &mut self.far.oino(&["ls", "--json"]));
        serde_json::from_slice(&listed.stdout).expect("a JSON list")
    }
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_ls_logs_and_kill_reach_the_far_server_and_never_the_near_one() {
    let sides = Sides::new("via-commands");
    let ran = output_within(
        "run",
        &mut sides.oino(&["run", "--", "echo far side says hi"]),
    );
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    assert_eq!(text(&ran.stdout).trim(), "far side says hi");

    let listed = output_within("ls", &mut sides.oino(&["ls", "--json"]));
    let near_view: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(
        near_view,
        sides.far_entries(),
        "ls through the link lists the far server"
    );
    assert_eq!(near_view[0]["command"], "echo far side says hi");

    // A task detached through the link, then followed to its end through it.
    let detached = output_within(
        "run --detach-after",
        &mut sides.oino(&[
            "run",
            "--detach-after",
            "0.2",
            "--name",
            "counter",
            "--",
            "for i in 1 2 3 4 5; do echo line-$i; sleep 0.2; done",
        ]),
    );
    assert!(text(&detached.stdout).contains("Detached to background task"));
    let followed = output_within(
        "logs -f",
        &mut sides.oino(&["logs", "-f", "--since", "0", "counter"]),
    );
    assert!(followed.status.success(), "{}", text(&followed.stderr));
    let followed = text(&followed.stdout);
    for n in 1..=5 {
        assert!(followed.contains(&format!("line-{n}")), "{followed}");
    }

    // A kill through the link ends the far task.
    let started = output_within(
        "a long task",
        &mut sides.oino(&[
            "run",
            "--detach-after",
            "0.01",
            "--name",
            "sleeper",
            "--",
            "sleep 600",
        ]),
    );
    assert!(started.status.success(), "{}", text(&started.stderr));
    let killed = output_within("kill", &mut sides.oino(&["kill", "sleeper"]));
    assert!(killed.status.success(), "{}", text(&killed.stderr));
    let sleeper = sides
        .far_entries()
        .into_iter()
        .find(|entry| entry["name"] == "sleeper")
        .expect("the task on the far server");
    assert_ne!(sleeper["state"], "running", "{sleeper}");

    assert!(
        !sides.near.socket.exists(),
        "nothing started a server on the near side"
    );
}

#[test]
fn a_call_runs_in_the_far_sides_environment_not_the_callers() {
    let sides = Sides::new("via-environment");
    // The far side's server is its own, not one the transport started with this environment.
    let started = output_within("far server", &mut sides.far.oino(&["server"]));
    assert!(started.status.success(), "{}", text(&started.stderr));
    let ran = output_within(
        "run",
        sides
            .oino(&["run", "--", "echo \"[${NEAR_SECRET:-unset}]\""])
            .env("NEAR_SECRET", "token-of-the-laptop"),
    );
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    assert_eq!(
        text(&ran.stdout).trim(),
        "[unset]",
        "the caller's environment stays on the caller's machine"
    );
}

/// A fake far side: answers the first line with `reply` and ends.
fn answering(dir: &Path, reply: &str) -> String {
    let script = dir.join("far.sh");
    std::fs::write(&script, format!("read -r line\nprintf '%s\\n' '{reply}'\n")).expect("script");
    format!("bash {}", script.display())
}

#[test]
fn a_far_side_of_another_version_is_refused_in_words() {
    let dir = temp_dir("via-version");
    let guard = ServerGuard::new("via-version-near");
    let cases = [
        (
            r#"{"ok":false,"code":"version","error":"this server runs oino 0.0.9 (protocol 3)","data":{"runs":"runs oino 0.0.9 (protocol 3)"}}"#,
            "runs oino 0.0.9 (protocol 3); this is oino",
        ),
        // A server from before versions were data: its own words.
        (
            r#"{"ok":false,"code":"version","error":"this server speaks protocol 3, not 8"}"#,
            "runs another version of oino (this server speaks protocol 3, not 8)",
        ),
        (
            "Welcome to the box!",
            "something other than oino's protocol",
        ),
    ];
    for (reply, said) in cases {
        let via = answering(&dir, reply);
        let out = output_within("ls", &mut guard.oino(&["--via", &via, "ls"]));
        let stderr = text(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains(said), "{reply}: {stderr}");
        assert!(
            stderr.contains("install the same version on both"),
            "{stderr}"
        );
        assert!(
            !stderr.contains("expected value"),
            "no decode error: {stderr}"
        );
    }
}

#[test]
fn a_transport_that_fails_is_reported_with_its_own_words() {
    let guard = ServerGuard::new("via-fails");
    let out = output_within(
        "ls",
        &mut guard.oino(&["--via", "sh -c 'echo no route to gpu >&2; exit 255'", "ls"]),
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("no route to gpu"), "{stderr}");
    assert!(stderr.contains("exit status: 255"), "{stderr}");
    let out = output_within("ls", &mut guard.oino(&["--host=-oProxyCommand=x", "ls"]));
    assert!(
        text(&out.stderr).contains("no host name"),
        "{}",
        text(&out.stderr)
    );
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_dropped_link_leaves_the_call_running_on_the_far_side() {
    let sides = Sides::new("via-dropped");
    let client = sides
        .oino(&["run", "--", "echo started; sleep 600"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oino run");
    let running = |sides: &Sides| {
        sides
            .far_entries()
            .into_iter()
            .find(|entry| entry["command"] == "echo started; sleep 600")
            .filter(|entry| entry["state"] == "running")
    };
    wait_until_blocking("the call runs on the far side", || {
        sides.far.socket.exists() && running(&sides).is_some()
    });
    // The link drops: its transport is killed outright.
    for proxy in children(client.id()) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(proxy),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("kill the transport");
    }
    let out = client.wait_with_output().expect("the client ends");
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("dropped"), "{stderr}");
    assert!(stderr.contains("logs -f"), "{stderr}");
    let call = running(&sides).expect("the call goes on there");
    let id = call["id"].as_str().expect("an id");
    let killed = output_within("kill", &mut sides.oino(&["kill", id]));
    assert!(killed.status.success(), "{}", text(&killed.stderr));
}

#[tokio::test]
async fn an_agent_runs_on_the_far_side_and_a_person_there_detaches_its_call() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let sides = Sides::new("via-mcp");
    let mut bridge = tokio::process::Command::new(env!("CARGO_BIN_EXE_oino"));
    bridge
        .args(["mcp", "--via", &sides.via()])
        .env("OINO_SOCKET", &sides.near.socket)
        .env("XDG_STATE_HOME", &sides.near.state);
    let transport = rmcp::transport::TokioChildProcess::new(bridge).expect("oino mcp");
    let agent = ().serve(transport).await.expect("the MCP handshake");
    let command = "echo waiting on the far side; sleep 600";
    let peer = agent.peer().clone();
    let waiting = tokio::spawn(async move {
        let arguments = serde_json::json!({"command": command});
        let serde_json::Value::Object(arguments) = arguments else {
            unreachable!("an object");
        };
        peer.call_tool(CallToolRequestParams::new("bash").with_arguments(arguments))
            .await
    });
    let mut id = None;
    crate::support::wait_until("the agent's call runs on the far side", || {
        id = sides
            .far_entries()
            .into_iter()
            .find(|entry| {
                entry["command"] == command
                    && entry["state"] == "running"
                    && entry["bytes"].as_u64() > Some(0)
            })
            .and_then(|entry| entry["id"].as_str().map(str::to_owned));
        id.is_some()
    })
    .await;
    let id = id.expect("an id");
    // The person watching the far side detaches it, as a key in their interface would.
    let detached = output_within("detach", &mut sides.far.oino(&["detach", &id]));
    assert!(detached.status.success(), "{}", text(&detached.stderr));
    let result = tokio::time::timeout(crate::support::DEADLINE, waiting)
        .await
        .expect("the agent's call returns")
        .expect("joined")
        .expect("a result");
    let first = result.content[0].as_text().expect("text").text.clone();
    assert!(
        first.starts_with("waiting on the far side")
            && first.ends_with("\n\n[Detached to background task t1: detached by `oino detach`]"),
        "{first:?}"
    );
    assert!(!sides.near.socket.exists(), "nothing ran on the near side");
    agent.cancel().await.expect("the agent leaves");
    let killed = output_within("kill", &mut sides.far.oino(&["kill", "t1"]));
    assert!(killed.status.success(), "{}", text(&killed.stderr));
}

#[test]
fn a_transport_that_says_much_on_its_standard_error_still_carries() {
    let sides = Sides::new("via-chatty");
    // Far more than a pipe holds, before the proxy starts: a banner, ssh's warnings.
    let chatty = format!("sh -c 'head -c 300000 /dev/zero >&2; exec {}'", sides.via());
    let out = output_within(
        "ls",
        &mut sides.near.oino(&["--via", &chatty, "ls", "--json"]),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "[]");
}

#[test]
fn a_project_file_here_is_not_sent_to_a_server_elsewhere() {
    let sides = Sides::new("via-project");
    let folder = temp_dir("via-project-here");
    std::fs::write(
        folder.join("oino.toml"),
        "[processes.web]\ncmd = \"echo $HOME\"\n",
    )
    .expect("oino.toml");
    for args in [["up"].as_slice(), &["down"], &["start", "web"]] {
        let out = output_within("project", sides.oino(args).current_dir(&folder));
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr.contains("a project file is this machine's"),
            "{args:?}: {stderr}"
        );
    }
    assert!(
        sides.far_entries().is_empty(),
        "nothing of it started there"
    );
    let out = output_within("via with -s", &mut sides.oino(&["-s", "work", "ls"]));
    assert!(
        text(&out.stderr).contains("name the far side's session"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "a usage mistake");
    // A command that talks to one server refuses two.
    let out = output_within(
        "two hosts",
        &mut sides.oino(&["--host", "box", "--host", "gpu", "ls"]),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("this command talks to one server"),
        "{}",
        text(&out.stderr)
    );
    // In this process is here: not with a far server.
    let out = output_within(
        "run --embedded",
        &mut sides.oino(&["run", "--embedded", "--", "echo where"]),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--embedded runs the call in this process"),
        "{}",
        text(&out.stderr)
    );
    assert!(!sides.near.socket.exists(), "nothing started here");
}

#[test]
fn a_proxy_whose_input_ends_lets_go_and_its_call_lives_on() {
    use std::io::Write as _;
    let sides = Sides::new("proxy-input-ends");
    let mut proxy = sides
        .far
        .oino(&["proxy"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("oino proxy");
    let mut input = proxy.stdin.take().expect("stdin");
    input
        .write_all(
            b"{\"op\":\"hello\",\"version\":9}\n{\"op\":\"run\",\"command\":\"sleep 600\",\
              \"id\":\"kept\",\"started\":true}\n",
        )
        .expect("requests");
    wait_until_blocking("the call runs", || {
        sides
            .far_entries()
            .iter()
            .any(|entry| entry["id"] == "kept" && entry["state"] == "running")
    });
    // The near side goes (its output may stay open, as some transports keep it).
    drop(input);
    crate::support::wait_for_exit("the proxy", &mut proxy);
    wait_until_blocking("the call to be a task", || {
        sides
            .far_entries()
            .iter()
            .any(|entry| entry["id"] == "kept" && entry["kind"] == "task")
    });
    let killed = output_within("kill", &mut sides.far.oino(&["kill", "kept"]));
    assert!(killed.status.success(), "{}", text(&killed.stderr));
}
