//! One connection per client, counted through a logging transport: each start of the transport
//! (an ssh connection, with `--host`) leaves a line, and each request the client sends is kept.
//! An agent's bridge running five calls, an interface killing, detaching and restarting far
//! entries, and a command each use one transport; `oino kill web` is one request.

use std::path::{Path, PathBuf};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::hosts::{Sides, text};
use crate::support::{output_within, temp_dir};

/// A transport that logs each of its starts and every request it carries, to the far side of
/// `sides`; the log's folder.
struct Logging {
    via: String,
    dir: PathBuf,
}

impl Logging {
    fn new(sides: &Sides, label: &str) -> Self {
        let dir = temp_dir(label);
        let via = shell_words::join([
            "sh",
            "-c",
            &format!(
                "echo start >> {starts}; tee -a {requests} | {proxy}",
                starts = dir.join("starts").display(),
                requests = dir.join("requests").display(),
                proxy = sides.via()
            ),
        ]);
        Self { via, dir }
    }

    /// How many transports were started.
    fn starts(&self) -> usize {
        lines(&self.dir.join("starts")).len()
    }

    /// The requests sent, each as its `op`.
    fn ops(&self) -> Vec<String> {
        lines(&self.dir.join("requests"))
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|request| request["op"].as_str().unwrap_or("?").to_owned())
            .collect()
    }
}

fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn kill_is_one_request_over_one_transport() {
    let sides = Sides::new("one-link-kill");
    sides.far.task("web", "sleep 600");
    let logging = Logging::new(&sides, "one-link-kill-log");
    let killed = output_within(
        "oino kill web",
        &mut sides.near.oino(&["--via", &logging.via, "kill", "web"]),
    );
    assert!(killed.status.success(), "{}", text(&killed.stderr));
    assert!(
        text(&killed.stderr).contains("killed `web`"),
        "{}",
        text(&killed.stderr)
    );
    assert_eq!(logging.starts(), 1);
    // The hello, and the kill (its reply names what it killed: no question before it).
    assert_eq!(logging.ops(), ["hello", "kill"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_five_calls_go_over_one_transport() {
    let sides = Sides::new("one-link-mcp");
    let logging = Logging::new(&sides, "one-link-mcp-log");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_oino"));
    command
        .args(["mcp", "--via", &logging.via])
        .env("OINO_SOCKET", &sides.near.socket)
        .env("XDG_STATE_HOME", &sides.near.state);
    let bridge = rmcp::transport::TokioChildProcess::new(command).expect("oino mcp");
    let client = ().serve(bridge).await.expect("the MCP handshake");
    for n in 0..5 {
        let Value::Object(arguments) = json!({"command": format!("echo call-{n}")}) else {
            unreachable!("an object");
        };
        let result = client
            .peer()
            .call_tool(CallToolRequestParams::new("bash").with_arguments(arguments))
            .await
            .expect("a bash call");
        let said = serde_json::to_string(&result.content).expect("JSON");
        assert!(said.contains(&format!("call-{n}")), "{said}");
    }
    client.cancel().await.expect("the bridge ends");
    assert_eq!(logging.starts(), 1, "{:?}", logging.ops());
    let runs = logging.ops().iter().filter(|op| *op == "run").count();
    assert_eq!(runs, 5, "{:?}", logging.ops());
}

#[test]
fn an_interface_acting_on_far_entries_uses_one_transport() {
    let sides = Sides::new("one-link-ui");
    for name in ["one", "two", "three"] {
        sides.far.task(name, &format!("echo {name}-up; sleep 600"));
    }
    let logging = Logging::new(&sides, "one-link-ui-log");
    let script = "\
        wait-for three --timeout 20\n\
        key G\n\
        wait-for three-up\n\
        key x\n\
        wait-for and all its processes?\n\
        key y\n\
        wait-for killed `three`\n\
        key k\n\
        wait-for two-up\n\
        key r\n\
        wait-for start it again\n\
        key y\n\
        wait-for two-up --timeout 20\n\
        snapshot\n";
    let script_file = logging.dir.join("script");
    std::fs::write(&script_file, script).expect("the script");
    let out = output_within(
        "an interface on the far side",
        &mut sides.near.oino(&[
            "headless",
            "--server",
            "--size",
            "110x24",
            "--via",
            &logging.via,
            "--script",
            script_file.to_str().expect("UTF-8"),
        ]),
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    assert_eq!(logging.starts(), 1, "{:?}", logging.ops());
    let ops = logging.ops();
    for op in ["subscribe", "kill", "restart"] {
        assert!(ops.iter().any(|done| done == op), "{op}: {ops:?}");
    }
}
