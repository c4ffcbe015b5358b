//! The agent bridge: rmcp's client over the real `oino mcp`, which talks to a real server.

use std::process::Output;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};

use crate::support::{
    DEADLINE, FullDisk, ServerGuard, processes_of, server_pid, temp_dir, wait_until,
};

const MARKER_PREFIX: &str = "\n\n[Detached to background task ";

/// An agent: rmcp's client, connected to `oino mcp` on its own server.
struct Agent {
    client: RunningService<RoleClient, ()>,
    server: ServerGuard,
}

/// `oino mcp` on `server`, as an agent starts it.
fn bridge(server: &ServerGuard) -> TokioChildProcess {
    bridge_with_env(server, &[])
}

/// `oino mcp` on `server`, started by an agent whose environment has `env` too.
fn bridge_with_env(server: &ServerGuard, env: &[(&str, &str)]) -> TokioChildProcess {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_oino"));
    command
        .arg("mcp")
        .env("OINO_SOCKET", &server.socket)
        .env("XDG_STATE_HOME", &server.state)
        .envs(env.iter().copied());
    TokioChildProcess::new(command).expect("oino mcp")
}

/// The server's entries, as `oino ls --json` gives them.
fn entries_of(server: &ServerGuard) -> Vec<Value> {
    let listed = server.oino(&["ls", "--json"]).output().expect("oino ls");
    serde_json::from_slice(&listed.stdout).unwrap_or_default()
}

/// The id of the server's entry whose command is `command`.
fn id_of(server: &ServerGuard, command: &str) -> Option<String> {
    entries_of(server)
        .into_iter()
        .find(|entry| entry["command"] == command)
        .and_then(|entry| entry["id"].as_str().map(str::to_owned))
}

impl Agent {
    async fn start(label: &str) -> Self {
        let server = ServerGuard::new(label);
        let client = ().serve(bridge(&server)).await.expect("the MCP handshake");
        Self { client, server }
    }

    /// An agent whose bridge starts in `folder`.
    async fn start_in(label: &str, folder: &std::path::Path) -> Self {
        let server = ServerGuard::new(label);
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_oino"));
        command
            .arg("mcp")
            .current_dir(folder)
            .env("OINO_SOCKET", &server.socket)
            .env("XDG_STATE_HOME", &server.state);
        let bridge = TokioChildProcess::new(command).expect("oino mcp");
        let client = ().serve(bridge).await.expect("the MCP handshake");
        Self { client, server }
    }

    fn peer(&self) -> Peer<RoleClient> {
        self.client.peer().clone()
    }

    async fn call(&self, tool: &str, arguments: Value) -> CallToolResult {
        let shown = arguments.to_string();
        call(&self.peer(), tool, arguments)
            .await
            .unwrap_or_else(|err| panic!("{tool} {shown}: {err}"))
    }

    /// `oino ARGS` on the agent's server.
    fn oino(&self, args: &[&str]) -> Output {
        self.server.oino(args).output().expect("oino")
    }

    fn entries(&self) -> Vec<Value> {
        entries_of(&self.server)
    }

    /// The running call whose command is `command`, once it has printed something.
    async fn running_call(&self, command: &str) -> String {
        let mut id = None;
        wait_until("the call to be listed with output", || {
            id = self
                .entries()
                .into_iter()
                .find(|entry| {
                    entry["command"] == command
                        && entry["kind"] == "call"
                        && entry["bytes"].as_u64() > Some(0)
                })
                .and_then(|entry| entry["id"].as_str().map(str::to_owned));
            id.is_some()
        })
        .await;
        id.unwrap_or_default()
    }
}

async fn call(
    peer: &Peer<RoleClient>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    peer.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
}

/// A tool call made in the background, as an agent waits for it.
fn call_in_background(
    peer: &Peer<RoleClient>,
    tool: &'static str,
    arguments: Value,
) -> tokio::task::JoinHandle<Result<CallToolResult, ServiceError>> {
    let peer = peer.clone();
    tokio::spawn(async move { call(&peer, tool, arguments).await })
}

/// The result of a tool call made in the background, once it returns.
async fn returned(
    waiting: tokio::task::JoinHandle<Result<CallToolResult, ServiceError>>,
) -> CallToolResult {
    tokio::time::timeout(DEADLINE, waiting)
        .await
        .expect("the tool call to return")
        .expect("the waiter")
        .expect("a tool result, not a protocol error")
}

/// The text blocks of a result.
fn texts(result: &CallToolResult) -> Vec<String> {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect()
}

/// The blocks of a finished bash call's result but its notes (how it ended, how long it ran),
/// which must be there, second.
fn ended_texts(result: &CallToolResult) -> Vec<String> {
    let mut blocks = texts(result);
    assert!(blocks.len() >= 2, "no notes: {blocks:?}");
    let notes = blocks.remove(1);
    let first = notes.lines().next().unwrap_or_default();
    assert!(
        (first.starts_with("[ran ")
            || first.starts_with("[exit code ")
            || first.starts_with("[killed"))
            && first.ends_with(" s]")
            && notes.ends_with('\n'),
        "notes: {notes:?}"
    );
    blocks
}

fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// A `task_output` answer: the output (empty when none came) and the notes after it.
fn output_and_notes(result: &CallToolResult) -> (String, String) {
    let mut blocks = texts(result);
    // A task that ended meanwhile is told of in a block of its own, last.
    if blocks
        .last()
        .is_some_and(|last| last.starts_with("[task ") && last.ends_with("shows its output]"))
    {
        blocks.pop();
    }
    let notes = blocks.pop().expect("a notes block");
    assert!(notes.starts_with('['), "notes: {notes:?}");
    assert!(blocks.len() <= 1, "{blocks:?}");
    (blocks.pop().unwrap_or_default(), notes)
}

/// A task's output read with `task_output` and no offset, page after page, through the line
/// `last` (written before the first read: no page waits, none comes back empty, none skips).
async fn read_through(agent: &Agent, task: &str, last: &str) -> String {
    let mut read = String::new();
    while !read.ends_with(last) {
        let page = agent.call("task_output", json!({"task": task})).await;
        let (text, notes) = output_and_notes(&page);
        assert!(!notes.contains("skipped"), "{notes}");
        assert!(!text.is_empty(), "the read stopped short: {notes}");
        read.push_str(&text);
    }
    read
}

/// The `next since=N` of a `task_output` answer's notes.
fn next_since(notes: &str) -> u64 {
    let (_, after) = notes
        .rsplit_once("next since=")
        .unwrap_or_else(|| panic!("no next offset in {notes:?}"));
    assert!(
        notes.ends_with("]\n"),
        "a notes block ends with a newline: {notes:?}"
    );
    after
        .trim_end()
        .trim_end_matches(']')
        .parse()
        .expect("an offset")
}

#[tokio::test]
async fn tools_are_listed_and_quick_commands_return_their_text_and_status() {
    let agent = Agent::start("mcp-quick").await;
    let tools = agent.client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "bash",
            "task_output",
            "task_screen",
            "task_list",
            "task_kill",
            "task_input"
        ]
    );
    for tool in &tools {
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(description.len() > 80, "{}: {description}", tool.name);
    }
    let bash = &tools[0];
    assert_eq!(bash.input_schema["required"], json!(["command"]));
    assert!(bash.input_schema["properties"]["detach_after_ms"].is_object());
    assert!(
        bash.description
            .as_deref()
            .is_some_and(|text| text.contains("[Detached to background task"))
    );

    let hello = agent
        .call(
            "bash",
            json!({"command": "echo hello; echo oops >&2", "description": "say hello"}),
        )
        .await;
    assert!(!is_error(&hello));
    assert_eq!(ended_texts(&hello), ["hello\noops\n"]);
    // The person watching sees the description as the call's title.
    assert!(
        agent
            .entries()
            .iter()
            .any(|entry| entry["title"] == "say hello"
                && entry["command"] == "echo hello; echo oops >&2")
    );

    let failed = agent
        .call("bash", json!({"command": "echo partial; exit 3"}))
        .await;
    assert!(is_error(&failed));
    let text = texts(&failed).concat();
    assert!(
        text.starts_with("partial\n") && text.contains('3'),
        "{text}"
    );

    let folder = temp_dir("mcp-cwd");
    let here = agent
        .call(
            "bash",
            json!({"command": "pwd", "cwd": folder.to_str().expect("utf-8")}),
        )
        .await;
    assert_eq!(ended_texts(&here), [format!("{}\n", folder.display())]);

    let home = agent
        .call("bash", json!({"command": "pwd", "cwd": "~"}))
        .await;
    let expected = std::env::var("HOME").expect("HOME");
    assert_eq!(
        ended_texts(&home),
        [format!("{}\n", expected.trim_end_matches('/'))]
    );

    let timed_out = agent
        .call(
            "bash",
            json!({"command": "echo slow; sleep 600", "timeout_ms": 300}),
        )
        .await;
    assert!(is_error(&timed_out));
    assert!(texts(&timed_out).concat().contains("timed out"));
}

#[tokio::test]
async fn an_agents_pager_and_terminal_never_win_over_oinos() {
    let server = ServerGuard::new("mcp-pager");
    let agent_env = [
        ("PAGER", "less"),
        ("GIT_PAGER", "less"),
        ("MANPAGER", "less"),
        ("TERM", "xterm"),
    ];
    let client = ().serve(bridge_with_env(&server, &agent_env)).await.expect("the MCP handshake");
    let agent = Agent { client, server };
    let printed = agent
        .call(
            "bash",
            json!({"command": "echo \"$TERM $PAGER $GIT_PAGER $MANPAGER\""}),
        )
        .await;
    assert_eq!(ended_texts(&printed), ["xterm-256color cat cat cat\n"]);
    // With `less` as its pager, pydoc would wait at less's prompt until the timeout.
    let doc = agent
        .call(
            "bash",
            json!({"command": "python3 -m pydoc json.dumps", "timeout_ms": 20000}),
        )
        .await;
    assert!(!is_error(&doc), "{:?}", texts(&doc));
    assert!(texts(&doc)[0].contains("dumps("), "{:?}", texts(&doc));
}

#[tokio::test]
async fn a_call_detached_from_outside_returns_its_output_so_far_and_lives_on_as_a_task() {
    let agent = Agent::start("mcp-detach").await;
    let folder = temp_dir("mcp-detach-go");
    let command = "echo begin; i=0; while [ ! -e GO ]; do i=$((i+1)); echo \"n $i\"; \
                   sleep 0.02; done; echo ready; for j in 1 2 3; do echo \"after $j\"; done; \
                   sleep 0.2; echo end; exit 7";
    let arguments = json!({"command": command, "cwd": folder.to_str().expect("utf-8")});
    let waiting = call_in_background(&agent.peer(), "bash", arguments);

    let id = agent.running_call(command).await;
    let detached = agent.oino(&["detach", &id, "--name", "counter"]);
    assert!(detached.status.success(), "{detached:?}");
    let result = returned(waiting).await;
    assert!(!is_error(&result), "a detach is not an error");
    let blocks = texts(&result);
    let before = blocks[0]
        .strip_suffix(&format!("{MARKER_PREFIX}t1: detached by `oino detach`]"))
        .unwrap_or_else(|| panic!("no exact marker: {:?}", blocks[0]));
    assert!(blocks[1].contains("task_output"), "{blocks:?}");
    std::fs::write(folder.join("GO"), "").expect("GO");

    // The pattern is met in what the task wrote after the detach.
    let ready = agent
        .call(
            "task_output",
            json!({"task": "counter", "pattern": "^rea.y$", "wait_ms": 30_000}),
        )
        .await;
    assert!(!is_error(&ready));
    let (mut after, notes) = output_and_notes(&ready);
    assert!(notes.contains("[matched /^rea.y$/: \"ready\"]"), "{notes}");
    let mut since = next_since(&notes);

    // Then the rest, to the exit.
    let mut final_notes = String::new();
    while !final_notes.contains("exited with code 7") || final_notes.contains("more to read") {
        let read = agent
            .call(
                "task_output",
                json!({"task": "t1", "since": since, "wait_ms": 30_000}),
            )
            .await;
        let (text, notes) = output_and_notes(&read);
        after.push_str(&text);
        since = next_since(&notes);
        final_notes = notes;
    }
    assert!(
        final_notes.contains("task t1 (\"counter\")"),
        "{final_notes}"
    );

    // The text's last line is whole: the marker took its newline.
    let whole = format!("{before}\n{after}");
    let lines: Vec<&str> = whole.lines().collect();
    let counted = lines.len() - 6;
    let mut expected = vec!["begin".to_owned()];
    expected.extend((1..=counted).map(|n| format!("n {n}")));
    expected.extend(["ready", "after 1", "after 2", "after 3", "end"].map(str::to_owned));
    assert_eq!(lines, expected, "nothing lost, nothing repeated");
    assert!(
        before.lines().count() >= 2,
        "detached mid-stream: {before:?}"
    );

    let listed = agent.call("task_list", json!({})).await;
    let listed = texts(&listed).concat();
    assert!(
        listed.starts_with("t1 \"counter\": exited with code 7"),
        "{listed}"
    );
}

#[tokio::test]
async fn on_a_full_disk_the_agent_still_gets_all_output_and_is_told() {
    let agent = Agent::start("mcp-full-disk").await;
    let _disk = FullDisk::at(&agent.server.state.join("oino/logs"));
    let quick = agent.call("bash", json!({"command": "seq 1 3"})).await;
    let text = texts(&quick).concat();
    assert!(
        text.starts_with("1\n2\n3\n[oino could not write this call's log (writing ")
            && text.contains("no space left on device"),
        "{text:?}"
    );
    agent
        .call(
            "bash",
            json!({"command": "sleep 0.3; echo from memory", "run_in_background": true}),
        )
        .await;
    let read = agent
        .call(
            "task_output",
            json!({"task": "t1", "since": 0, "pattern": "memory", "wait_ms": 30_000}),
        )
        .await;
    let (output, notes) = output_and_notes(&read);
    assert_eq!(output, "from memory\n", "{notes}");
    assert!(notes.contains("could not write this call's log"), "{notes}");
}

#[tokio::test]
async fn reading_a_task_while_it_writes_never_splits_a_character() {
    let agent = Agent::start("mcp-split").await;
    let file = temp_dir("mcp-colorful").join("color.txt");
    let raw: String = (0..30_000)
        .map(|n| format!("\x1b[31m{n} ж€😀\x1b[0m\n"))
        .collect();
    std::fs::write(&file, raw).expect("write");
    let clean: String = (0..30_000).map(|n| format!("{n} ж€😀\n")).collect();
    let command = format!("sleep 0.3; cat {}", file.display());
    agent
        .call(
            "bash",
            json!({"command": command, "run_in_background": true}),
        )
        .await;
    let mut since = 0;
    let mut read = String::new();
    loop {
        let answer = agent
            .call(
                "task_output",
                json!({"task": "t1", "since": since, "max_bytes": 997, "wait_ms": 30_000}),
            )
            .await;
        let (output, notes) = output_and_notes(&answer);
        read.push_str(&output);
        since = next_since(&notes);
        if notes.contains("exited with code") && !notes.contains("more to read") {
            break;
        }
    }
    assert_eq!(read, clean);
}

#[tokio::test]
async fn an_ended_task_is_still_read_after_hundreds_of_later_calls() {
    let agent = Agent::start("mcp-many").await;
    agent
        .call(
            "bash",
            json!({"command": "sleep 0.3; echo kept output", "run_in_background": true}),
        )
        .await;
    let ended = agent
        .call(
            "task_output",
            json!({"task": "t1", "since": 0, "pattern": "kept", "wait_ms": 30_000}),
        )
        .await;
    assert!(output_and_notes(&ended).1.contains("matched"));
    for _ in 0..210 {
        let quick = agent.call("bash", json!({"command": "true"})).await;
        assert!(!is_error(&quick), "{:?}", texts(&quick));
    }
    let read = agent
        .call(
            "task_output",
            json!({"task": "t1", "since": 0, "wait_ms": 30_000}),
        )
        .await;
    assert!(!is_error(&read), "{:?}", texts(&read));
    let (output, notes) = output_and_notes(&read);
    assert_eq!(output, "kept output\n", "{notes}");
}

#[tokio::test]
async fn a_task_started_in_the_background_is_read_typed_into_and_killed_with_its_children() {
    let agent = Agent::start("mcp-kill").await;
    let command = "echo ready; sleep 600 & while read line; do echo \"got $line\"; done";
    let started = agent
        .call(
            "bash",
            json!({"command": command, "run_in_background": true}),
        )
        .await;
    assert!(!is_error(&started));
    let blocks = texts(&started);
    assert!(
        blocks[0].ends_with(&format!("{MARKER_PREFIX}t1: started in the background]")),
        "{blocks:?}"
    );
    let entry = agent
        .entries()
        .into_iter()
        .find(|entry| entry["task_id"] == "t1")
        .expect("the task is listed");
    let call_id = entry["id"].as_str().expect("an id").to_owned();

    let ready = agent
        .call(
            "task_output",
            json!({"task": "t1", "since": 0, "pattern": "ready", "wait_ms": 30_000}),
        )
        .await;
    let (_, notes) = output_and_notes(&ready);
    assert!(notes.contains("matched"), "{notes}");

    let typed = agent
        .call("task_input", json!({"task": "t1", "text": "hi there"}))
        .await;
    assert!(!is_error(&typed), "{:?}", texts(&typed));
    let answer = agent
        .call(
            "task_output",
            json!({"task": "t1", "pattern": "^got hi there$", "wait_ms": 30_000}),
        )
        .await;
    let (_, notes) = output_and_notes(&answer);
    assert!(notes.contains("matched"), "{notes}");

    wait_until("the task's processes", || processes_of(&call_id).len() >= 2).await;
    let killed = agent.call("task_kill", json!({"task": "t1"})).await;
    assert!(!is_error(&killed));
    assert!(
        texts(&killed).concat().contains("killed by signal"),
        "{:?}",
        texts(&killed)
    );
    wait_until("nothing of the task left", || {
        processes_of(&call_id).is_empty()
    })
    .await;
    let again = agent.call("task_kill", json!({"task": "t1"})).await;
    assert!(texts(&again).concat().contains("had already ended"));
}

#[tokio::test]
async fn bad_arguments_to_every_tool_give_tool_errors_that_say_what_to_do() {
    let agent = Agent::start("mcp-bad").await;
    let cases = [
        ("bash", json!({}), "missing field `command`"),
        ("bash", json!({"command": 5}), "invalid type"),
        ("bash", json!({"command": "   "}), "`command` is empty"),
        (
            "bash",
            json!({"command": "#".repeat(200_000)}),
            "more than `bash -c` takes",
        ),
        // Past what one request used to carry: still the command's own limit, not a server
        // that "went away".
        (
            "bash",
            json!({"command": "#".repeat(3_000_000)}),
            "the command is 3000000 bytes, more than `bash -c` takes (131071)",
        ),
        // Past what one request to the server can carry, too.
        (
            "bash",
            json!({"command": "#".repeat(20_000_000)}),
            "the command is 20000000 bytes, more than `bash -c` takes (131071)",
        ),
        (
            "bash",
            json!({"command": "true", "timeout": 5}),
            "unknown field `timeout`",
        ),
        (
            "bash",
            json!({"command": "true", "timeout_ms": 0}),
            "more than 0",
        ),
        (
            "bash",
            json!({"command": "pwd", "cwd": "/no/such/folder"}),
            "does not exist",
        ),
        ("task_output", json!({}), "missing field `task`"),
        ("task_output", json!({"task": "nope"}), "no task `nope`"),
        (
            "task_output",
            json!({"task": "nope", "pattern": "("}),
            "not a valid regular expression",
        ),
        (
            "task_output",
            json!({"task": "nope", "max_bytes": 0}),
            "more than 0",
        ),
        (
            "task_output",
            json!({"task": "nope", "idle_ms": 0}),
            "`idle_ms` must be more than 0",
        ),
        (
            "bash",
            json!({"command": "true", "timeout_ms": 86_400_001}),
            "`timeout_ms` is at most 86400000",
        ),
        ("task_screen", json!({"task": "nope"}), "no task `nope`"),
        ("task_list", json!({"every": true}), "unknown field `every`"),
        ("task_kill", json!({"task": "nope"}), "no task `nope`"),
        ("task_kill", json!({"name": "x"}), "unknown field `name`"),
        (
            "task_input",
            json!({"task": "nope", "text": "x"}),
            "no task `nope`",
        ),
        (
            "task_input",
            json!({"task": "nope", "text": 1}),
            "invalid type",
        ),
        (
            "task_input",
            json!({"task": "nope", "text": "", "enter": false}),
            "nothing to type",
        ),
    ];
    for (tool, arguments, expected) in cases {
        let result = agent.call(tool, arguments.clone()).await;
        let text = texts(&result).concat();
        assert!(is_error(&result), "{tool} {arguments}: {text}");
        assert!(text.contains(expected), "{tool} {arguments}: {text}");
    }
    // A call that is not a task is not one to read, type into or kill.
    let plain = agent.call("bash", json!({"command": "echo done"})).await;
    assert_eq!(ended_texts(&plain), ["done\n"]);
    let id = agent.entries()[0]["id"].as_str().expect("id").to_owned();
    let result = agent.call("task_kill", json!({"task": id})).await;
    assert!(texts(&result).concat().contains("not a background task"));
    // An unknown tool is the protocol's error; the bridge goes on.
    assert!(call(&agent.peer(), "rm", json!({})).await.is_err());
    let still = agent
        .call("bash", json!({"command": "echo still here"}))
        .await;
    assert_eq!(ended_texts(&still), ["still here\n"]);
}

/// The pid of the server listening at `socket`, read from /proc.
#[tokio::test]
async fn the_bridge_survives_its_server_dying_and_starts_another() {
    let agent = Agent::start("mcp-restart").await;
    // Stopped on purpose: the call it ran says why it ended.
    let waiting = call_in_background(
        &agent.peer(),
        "bash",
        json!({"command": "echo going; sleep 600"}),
    );
    agent.running_call("echo going; sleep 600").await;
    assert!(agent.oino(&["kill-server"]).status.success());
    let stopped = returned(waiting).await;
    assert!(is_error(&stopped));
    let text = texts(&stopped).concat();
    assert!(
        text.contains("oino was stopped") || text.contains("the oino server went away"),
        "{text}"
    );

    // Killed outright: the bridge says it lost the server, then starts another.
    let first = agent.call("bash", json!({"command": "echo one"})).await;
    assert_eq!(ended_texts(&first), ["one\n"]);
    let pid = server_pid(&agent.server.socket).expect("the server's pid");

    let waiting = call_in_background(
        &agent.peer(),
        "bash",
        json!({"command": "echo started; sleep 600"}),
    );
    let id = agent.running_call("echo started; sleep 600").await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the server");
    // The agent gets what the call printed, and that its command may still run.
    let lost = returned(waiting).await;
    assert!(is_error(&lost));
    let text = texts(&lost).concat();
    assert!(
        text.starts_with("started\n") && text.contains("may still run"),
        "{text}"
    );
    wait_until("the call's processes to end with their terminal", || {
        processes_of(&id).is_empty()
    })
    .await;

    let back = agent.call("bash", json!({"command": "echo back"})).await;
    assert_eq!(ended_texts(&back), ["back\n"]);
    let new_pid = server_pid(&agent.server.socket).expect("a new server");
    assert_ne!(new_pid, pid);
}

#[tokio::test]
async fn a_tool_call_the_agent_abandons_ends_its_command() {
    let agent = Agent::start("mcp-cancel").await;
    let command = "echo waiting; sleep 600";
    let waiting = call_in_background(&agent.peer(), "bash", json!({"command": command}));
    let id = agent.running_call(command).await;
    wait_until("the call's processes", || !processes_of(&id).is_empty()).await;
    // Dropping the request's future is how rmcp's client cancels it.
    waiting.abort();
    wait_until("the cancelled call to end", || processes_of(&id).is_empty()).await;
    // Its processes gone, the entry says how it ended a moment later.
    wait_until("the cancelled call to be listed as killed", || {
        agent
            .entries()
            .iter()
            .any(|entry| entry["id"] == id.as_str() && entry["state"] == "killed")
    })
    .await;
    let after = agent.call("bash", json!({"command": "echo next"})).await;
    assert_eq!(ended_texts(&after), ["next\n"]);
}

#[tokio::test]
async fn calls_waited_for_end_with_the_bridge_and_tasks_live_on() {
    let Agent { client, server } = Agent::start("mcp-exit").await;
    let agent_peer = client.peer().clone();
    let task = call(
        &agent_peer,
        "bash",
        json!({"command": "echo task; sleep 600", "run_in_background": true}),
    )
    .await
    .expect("bash");
    assert!(texts(&task)[0].contains("[Detached to background task t1"));
    let waited = call_in_background(
        &agent_peer,
        "bash",
        json!({"command": "echo waited; sleep 600"}),
    );
    let mut waited_id = None;
    wait_until("the waited call to start", || {
        waited_id = id_of(&server, "echo waited; sleep 600");
        waited_id.is_some()
    })
    .await;
    let waited_id = waited_id.unwrap_or_default();
    let task_id = id_of(&server, "echo task; sleep 600").expect("the task");
    wait_until("the waited call's processes", || {
        !processes_of(&waited_id).is_empty()
    })
    .await;

    // The agent goes (its MCP client closes the bridge's input and ends it).
    drop(client);
    waited.abort();
    wait_until("the waited call to end", || {
        processes_of(&waited_id).is_empty()
    })
    .await;
    assert!(!processes_of(&task_id).is_empty(), "the task lives on");
    let listed = entries_of(&server);
    let task = listed.iter().find(|entry| entry["id"] == task_id.as_str());
    assert!(
        task.is_some_and(|task| task["state"] == "running"),
        "{task:?}"
    );
}

#[tokio::test]
async fn detach_after_ms_returns_on_time_and_waits_say_how_they_ended() {
    let agent = Agent::start("mcp-after").await;
    let result = agent
        .call(
            "bash",
            json!({"command": "echo first; sleep 600", "detach_after_ms": 1000, "description": "sleeper"}),
        )
        .await;
    assert!(!is_error(&result));
    assert_eq!(
        texts(&result)[0],
        format!("first{MARKER_PREFIX}t1: still running after 1 s]")
    );

    // A command that ends before its detach time gives its own result.
    let quick = agent
        .call(
            "bash",
            json!({"command": "echo quick", "detach_after_ms": 600_000}),
        )
        .await;
    assert_eq!(ended_texts(&quick), ["quick\n"]);

    let quiet = agent
        .call(
            "task_output",
            json!({"task": "t1", "pattern": "never", "wait_ms": 200}),
        )
        .await;
    let (text, notes) = output_and_notes(&quiet);
    assert_eq!(text, "");
    assert!(
        notes.contains("[no line matched /never/ within 200 ms]"),
        "{notes}"
    );
    assert!(notes.contains("running"), "{notes}");

    let killed = agent.call("task_kill", json!({"task": "t1"})).await;
    assert!(!is_error(&killed), "{:?}", texts(&killed));
    let typed = agent
        .call("task_input", json!({"task": "t1", "text": "hello"}))
        .await;
    assert!(is_error(&typed));
    assert!(texts(&typed).concat().contains("has ended"));

    // A task that ends while a pattern is awaited ends the wait.
    let folder = temp_dir("mcp-after-go");
    agent
        .call(
            "bash",
            json!({
                "command": "while [ ! -e GO ]; do sleep 0.02; done; echo bye",
                "cwd": folder.to_str().expect("utf-8"),
                "run_in_background": true,
            }),
        )
        .await;
    let waiting = call_in_background(
        &agent.peer(),
        "task_output",
        json!({"task": "t2", "pattern": "never", "wait_ms": 30_000}),
    );
    std::fs::write(folder.join("GO"), "").expect("GO");
    let ended = returned(waiting).await;
    let (text, notes) = output_and_notes(&ended);
    assert_eq!(text, "bye\n");
    assert!(
        notes.contains("[the task ended with no line matching /never/]"),
        "{notes}"
    );
    assert!(notes.contains("exited with code 0"), "{notes}");
}

#[tokio::test]
async fn the_person_watching_detaches_an_agents_call_with_one_key() {
    let agent = Agent::start("mcp-tui").await;
    let command = "echo agent says hi; while true; do echo beat; sleep 0.1; done";
    let waiting = call_in_background(
        &agent.peer(),
        "bash",
        json!({"command": command, "description": "agent heartbeat"}),
    );
    agent.running_call(command).await;

    // The interface attached to the same server shows the call by its description.
    // `│beat` is a line of the pane, not the title, which holds "beat" too.
    let script = "wait-for agent heartbeat\nwait-for │beat\nkey ctrl-b\nwait-for as task t1\n";
    let mut watcher = agent
        .server
        .oino(&["headless", "--server", "--size", "100x20"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oino headless");
    std::io::Write::write_all(&mut watcher.stdin.take().expect("stdin"), script.as_bytes())
        .expect("the script");
    let played = tokio::task::spawn_blocking(move || watcher.wait_with_output())
        .await
        .expect("join")
        .expect("oino headless");
    assert!(
        played.status.success(),
        "{}",
        String::from_utf8_lossy(&played.stderr)
    );

    let result = returned(waiting).await;
    assert!(!is_error(&result));
    let text = &texts(&result)[0];
    let before = text
        .strip_suffix(&format!("{MARKER_PREFIX}t1: detached from the TUI]"))
        .unwrap_or_else(|| panic!("no exact marker: {text:?}"));
    assert!(before.starts_with("agent says hi\nbeat"), "{before:?}");
    let streaming = agent
        .call(
            "task_output",
            json!({"task": "t1", "pattern": "beat", "wait_ms": 30_000}),
        )
        .await;
    assert!(output_and_notes(&streaming).1.contains("matched"));
}

/// Whether process `pid` has ended (gone, or a zombie waiting to be reaped).
fn ended(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

#[tokio::test]
async fn the_bridge_ends_on_sigterm_with_its_input_still_open_and_ends_its_calls() {
    let server = ServerGuard::new("mcp-sigterm");
    let transport = bridge(&server);
    let bridge = transport.id().expect("the bridge's pid");
    let client = ().serve(transport).await.expect("the MCP handshake");
    let peer = client.peer().clone();
    let waiting = call_in_background(&peer, "bash", json!({"command": "echo long; sleep 600"}));
    let mut id = None;
    wait_until("the call to run", || {
        id = id_of(&server, "echo long; sleep 600");
        id.as_ref().is_some_and(|id| !processes_of(id).is_empty())
    })
    .await;
    let id = id.unwrap_or_default();

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(bridge).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    wait_until("the bridge to end", || ended(bridge)).await;
    wait_until("its call to end", || processes_of(&id).is_empty()).await;
    waiting.abort();
    drop(client);
}

#[tokio::test]
async fn reads_without_an_offset_go_on_where_the_last_stopped_and_lose_nothing() {
    let agent = Agent::start("mcp-cursor").await;
    let started = agent
        .call(
            "bash",
            json!({"command": "sleep 0.2; seq 1 20000", "run_in_background": true}),
        )
        .await;
    let before = texts(&started)[0]
        .strip_suffix(&format!("{MARKER_PREFIX}t1: started in the background]"))
        .expect("the marker")
        .to_owned();
    wait_until("the task to end", || {
        agent
            .entries()
            .iter()
            .any(|entry| entry["task_id"] == "t1" && entry["state"] == "exited")
    })
    .await;
    let expected: String = (1..=20_000).map(|n| format!("{n}\n")).collect();
    let mut read = before;
    let mut calls = 0;
    loop {
        let page = agent.call("task_output", json!({"task": "t1"})).await;
        calls += 1;
        let (text, notes) = output_and_notes(&page);
        if text.is_empty() {
            assert!(notes.contains("[no new output]"), "{notes}");
            break;
        }
        assert!(text.len() <= 30_000, "a page of {} bytes", text.len());
        if read.len() + text.len() < expected.len() {
            assert!(notes.contains("more to read"), "{notes}");
        }
        read.push_str(&text);
        assert!(calls < 20, "paging never ends: {notes}");
    }
    assert_eq!(read.len(), expected.len());
    assert!(read == expected, "output lost or repeated");
    // 108,894 bytes in pages of 30,000, and one call that finds nothing new.
    assert_eq!(calls, 5);

    // Reading old output again with `since` leaves the cursor where it was.
    let again = agent
        .call(
            "task_output",
            json!({"task": "t1", "since": 0, "max_bytes": 10}),
        )
        .await;
    let (old, _) = output_and_notes(&again);
    assert!(old.starts_with("1\n2\n3\n") && old.len() <= 10, "{old:?}");
    let (text, _) = output_and_notes(&agent.call("task_output", json!({"task": "t1"})).await);
    assert_eq!(text, "");
}

#[tokio::test]
async fn a_wait_returns_with_max_bytes_of_output_at_the_end_or_once_quiet() {
    let agent = Agent::start("mcp-waits").await;
    // 5 s of a line every 50 ms: a wait for 100 bytes returns with 100, not the first line.
    agent
        .call(
            "bash",
            json!({
                "command": "sleep 0.3; for i in $(seq 10 99); do echo line-$i; sleep 0.05; done",
                "run_in_background": true,
            }),
        )
        .await;
    let full = agent
        .call(
            "task_output",
            json!({"task": "t1", "wait_ms": 60_000, "max_bytes": 100}),
        )
        .await;
    let (text, notes) = output_and_notes(&full);
    // Twelve whole lines of 8 bytes: the page ends at a line's end.
    assert_eq!(text.len(), 96, "{text:?} {notes}");
    assert!(text.starts_with("line-10\nline-11\n"), "{text:?}");

    // A wait ends with the task, long before its time is up.
    agent
        .call(
            "bash",
            json!({"command": "sleep 0.5; echo bye", "run_in_background": true}),
        )
        .await;
    let asked = std::time::Instant::now();
    let end = agent
        .call("task_output", json!({"task": "t2", "wait_ms": 60_000}))
        .await;
    let (text, notes) = output_and_notes(&end);
    assert_eq!(text, "bye\n");
    assert!(notes.contains("exited with code 0"), "{notes}");
    assert!(asked.elapsed() < std::time::Duration::from_secs(30));

    // A server done starting: the wait returns once it has been quiet, with all it said.
    let started = agent
        .call(
            "bash",
            json!({
                "command": "sleep 0.3; echo starting; sleep 0.2; echo loading; sleep 0.2; \
                            echo ready; sleep 600",
                "run_in_background": true,
            }),
        )
        .await;
    let quiet = agent
        .call("task_output", json!({"task": "t3", "idle_ms": 1000}))
        .await;
    let (text, notes) = output_and_notes(&quiet);
    let all = texts(&started)[0].clone() + &text;
    assert!(
        all.contains("starting\nloading\nready\n"),
        "{all:?} {notes}"
    );
    assert!(notes.contains("[quiet for 1000 ms]"), "{notes}");
    assert!(notes.contains("running"), "{notes}");
}

/// A client whose JSON-RPC ids are strings with a newline (the protocol allows any string): the
/// call runs, and its id breaks no line of `oino ls`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_with_a_newline_makes_no_broken_call_id() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let server = ServerGuard::new("mcp-string-id");
    let mut bridge = tokio::process::Command::new(env!("CARGO_BIN_EXE_oino"))
        .arg("mcp")
        .env("OINO_SOCKET", &server.socket)
        .env("XDG_STATE_HOME", &server.state)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("oino mcp");
    let mut stdin = bridge.stdin.take().expect("stdin");
    let mut lines = BufReader::new(bridge.stdout.take().expect("stdout")).lines();
    let messages = [
        json!({"jsonrpc": "2.0", "id": "init\nx", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": "a\nb c\t|", "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": "echo from-a-string-id"}}}),
    ];
    for message in messages {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("write");
    }
    let answer = tokio::time::timeout(DEADLINE, async {
        loop {
            let line = lines.next_line().await.expect("read").expect("a reply");
            let reply: Value = serde_json::from_str(&line).expect("json");
            if reply["id"] == "a\nb c\t|" {
                return reply;
            }
        }
    })
    .await
    .expect("the tool's reply in time");
    assert!(answer.to_string().contains("from-a-string-id"), "{answer}");
    let listed = server.oino(&["ls"]).output().expect("oino ls");
    let table = String::from_utf8_lossy(&listed.stdout);
    // A header and one line, each a row of the table.
    assert_eq!(table.lines().count(), 2, "{table}");
    assert!(
        table
            .lines()
            .nth(1)
            .is_some_and(|row| row.contains("echo from-a-string-id")),
        "{table}"
    );
}

/// `oino mcp` driven line by line, as a client that writes JSON-RPC by hand would.
struct RawBridge {
    child: std::process::Child,
    input: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
}

impl RawBridge {
    /// The bridge, past the MCP handshake.
    fn start(server: &ServerGuard) -> Self {
        Self::start_in(server, &std::env::current_dir().expect("a folder"))
    }

    /// The bridge started in `folder`, past the MCP handshake.
    fn start_in(server: &ServerGuard, folder: &std::path::Path) -> Self {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_oino"))
            .arg("mcp")
            .current_dir(folder)
            .env("OINO_SOCKET", &server.socket)
            .env("XDG_STATE_HOME", &server.state)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("oino mcp");
        let output = child.stdout.take().expect("stdout");
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in
                std::io::BufRead::lines(std::io::BufReader::new(output)).map_while(Result::ok)
            {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let mut bridge = Self {
            input: child.stdin.take(),
            child,
            lines,
        };
        bridge.send(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "by-hand", "version": "1"}},
        }));
        assert_eq!(bridge.reply()["id"], 0);
        bridge.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        bridge
    }

    fn send_line(&mut self, line: &str) {
        let input = self.input.as_mut().expect("input open");
        std::io::Write::write_all(input, format!("{line}\n").as_bytes()).expect("send");
    }

    fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    fn reply(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(DEADLINE)
            .expect("a reply within the deadline");
        serde_json::from_str(&line).unwrap_or_else(|err| panic!("{err}: {line}"))
    }
}

impl Drop for RawBridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_line_that_is_not_a_message_is_answered_and_the_bridge_goes_on() {
    let server = ServerGuard::new("mcp-not-json");
    let mut bridge = RawBridge::start(&server);
    bridge.send_line("this is not JSON");
    let reply = bridge.reply();
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert_eq!(reply["id"], Value::Null, "{reply}");
    assert!(
        reply
            .as_object()
            .is_some_and(|reply| reply.contains_key("id")),
        "{reply}"
    );
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    // JSON, but no message: an invalid request.
    bridge.send_line(r#"{"hello": "there"}"#);
    let reply = bridge.reply();
    assert_eq!(reply["id"], Value::Null, "{reply}");
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    bridge.send(&json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "echo still here"}},
    }));
    let reply = bridge.reply();
    assert_eq!(reply["id"], 7, "{reply}");
    assert_eq!(
        reply["result"]["content"][0]["text"], "still here\n",
        "{reply}"
    );
}

#[test]
fn closing_the_bridges_input_during_a_call_ends_the_call_and_the_bridge_at_once() {
    let server = ServerGuard::new("mcp-input-closed");
    let mut bridge = RawBridge::start(&server);
    let command = "echo long; sleep 600";
    bridge.send(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": command}},
    }));
    let mut id = None;
    crate::support::wait_until_blocking("the call to run", || {
        id = id_of(&server, command);
        id.as_ref().is_some_and(|id| !processes_of(id).is_empty())
    });
    let id = id.unwrap_or_default();

    let closed = std::time::Instant::now();
    drop(bridge.input.take());
    crate::support::wait_for_exit("the bridge", &mut bridge.child);
    // rmcp's own end waits 5 s for answers nobody will read; this one ends in milliseconds
    // (a few, measured), far inside the half second asked for, checked with room for a loaded
    // machine.
    let took = closed.elapsed();
    assert!(
        took < std::time::Duration::from_secs(3),
        "the bridge took {took:?} to end after its input closed"
    );
    crate::support::wait_until_blocking("its call to end, killed", || {
        processes_of(&id).is_empty()
            && entries_of(&server)
                .iter()
                .any(|entry| entry["id"] == id.as_str() && entry["state"] == "killed")
    });
}

#[test]
fn an_agent_in_a_folder_whose_name_is_not_utf8_is_told_so() {
    use std::os::unix::ffi::OsStrExt;
    let server = ServerGuard::new("mcp-non-utf8-folder");
    let folder = temp_dir("mcp-folder").join(std::ffi::OsStr::from_bytes(b"d\xff"));
    std::fs::create_dir_all(&folder).expect("the folder");
    let mut bridge = RawBridge::start_in(&server, &folder);
    bridge.send(&json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "pwd"}},
    }));
    let reply = bridge.reply();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("not UTF-8"), "{text}");
    assert!(!text.contains("went away"), "{text}");
}

#[tokio::test]
async fn tasks_are_named_after_their_description_and_names_stay_unique() {
    let agent = Agent::start("mcp-names").await;
    for _ in 0..2 {
        let started = agent
            .call(
                "bash",
                json!({
                    "command": "sleep 600",
                    "description": "Start the dev server",
                    "run_in_background": true,
                }),
            )
            .await;
        assert!(!is_error(&started), "{:?}", texts(&started));
    }
    // A call the person detaches is named after its description too.
    let waiting = call_in_background(
        &agent.peer(),
        "bash",
        json!({"command": "echo up; sleep 600", "description": "Watch the CSS files"}),
    );
    let id = agent.running_call("echo up; sleep 600").await;
    let detached = agent.oino(&["detach", &id]);
    assert!(detached.status.success(), "{detached:?}");
    let result = returned(waiting).await;
    assert!(
        texts(&result)[1].contains("(\"watch-the-css-files\")"),
        "{:?}",
        texts(&result)
    );
    let listed = agent.call("task_list", json!({})).await;
    let listed = &texts(&listed)[0];
    for name in [
        "t1 \"start-the-dev-server\"",
        "t2 \"start-the-dev-server-2\"",
        "t3 \"watch-the-css-files\"",
    ] {
        assert!(listed.contains(name), "{name} in {listed}");
    }
}

/// The interface's `d` proposes the name the call's description gave it, and taking the
/// proposal names the task so, as a detach by the agent's bridge would.
#[tokio::test]
async fn a_call_a_person_detaches_with_d_is_named_after_its_description() {
    let agent = Agent::start("mcp-d-name").await;
    let waiting = call_in_background(
        &agent.peer(),
        "bash",
        json!({"command": "echo up; sleep 600", "description": "Watch the CSS files"}),
    );
    agent.running_call("echo up; sleep 600").await;
    let mut person = agent
        .server
        .oino(&["headless", "--server", "--size", "100x16"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oino headless");
    std::io::Write::write_all(
        &mut person.stdin.take().expect("stdin"),
        b"wait-for Watch the CSS files\nkey d\nwait-for task name: watch-the-css-files\n\
          key enter\nwait-for detached `watch-the-css-files` as task t1\n",
    )
    .expect("script");
    let shown = tokio::task::spawn_blocking(move || person.wait_with_output())
        .await
        .expect("the headless run")
        .expect("oino headless");
    assert!(
        shown.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&shown.stderr),
        String::from_utf8_lossy(&shown.stdout)
    );
    let result = returned(waiting).await;
    assert!(
        texts(&result)[1].contains("(\"watch-the-css-files\")"),
        "{:?}",
        texts(&result)
    );
}

/// A client that keeps the notifications the bridge sends: log messages and progress.
#[derive(Clone)]
struct Listener(tokio::sync::mpsc::UnboundedSender<(&'static str, String)>);

impl rmcp::ClientHandler for Listener {
    #[allow(deprecated)] // MCP's logging, which the bridge still uses for end notices.
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let text = params.data.as_str().map(str::to_owned).unwrap_or_default();
        let _ = self.0.send(("log", text));
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let _ = self
            .0
            .send(("progress", params.message.unwrap_or_default()));
    }
}

/// The next notification of `kind`, within the deadline.
async fn next_notification(
    notifications: &mut tokio::sync::mpsc::UnboundedReceiver<(&'static str, String)>,
    kind: &str,
) -> String {
    tokio::time::timeout(DEADLINE, async {
        loop {
            let (got, text) = notifications.recv().await.expect("the client");
            if got == kind {
                return text;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {kind} notification"))
}

#[tokio::test]
async fn a_tasks_end_is_told_once_in_the_next_result_and_as_a_log_message() {
    let server = ServerGuard::new("mcp-ends");
    let (sender, mut notifications) = tokio::sync::mpsc::unbounded_channel();
    let client = Listener(sender)
        .serve(bridge(&server))
        .await
        .expect("the MCP handshake");
    let peer = client.peer().clone();
    let call = |arguments: Value| {
        let peer = peer.clone();
        async move { call(&peer, "bash", arguments).await.expect("bash") }
    };
    call(json!({"command": "sleep 0.5; exit 3", "description": "Fail soon", "run_in_background": true}))
        .await;
    let logged = next_notification(&mut notifications, "log").await;
    let notice = "[task t1 \"fail-soon\" exited 3 after ";
    assert!(logged.starts_with(notice), "{logged}");
    assert!(
        logged.ends_with("s: task_output {\"task\":\"t1\"} shows its output]"),
        "{logged}"
    );

    let next = call(json!({"command": "echo next"})).await;
    let blocks = ended_texts(&next);
    assert_eq!(blocks, ["next\n".to_owned(), logged.clone()]);
    let later = call(json!({"command": "echo later"})).await;
    assert_eq!(ended_texts(&later), ["later\n"], "an end is told once");

    // A task whose end a read already showed is not told again.
    call(json!({"command": "sleep 0.3; echo x", "run_in_background": true})).await;
    let read = call_in_background(
        &peer,
        "task_output",
        json!({"task": "t2", "wait_ms": 60_000}),
    );
    let read = returned(read).await;
    assert!(
        texts(&read).concat().contains("exited with code 0"),
        "{:?}",
        texts(&read)
    );
    let after = call(json!({"command": "echo after"})).await;
    assert_eq!(ended_texts(&after), ["after\n"]);
    drop(client);
}

#[tokio::test]
async fn task_screen_shows_a_repl_as_a_person_sees_it_and_a_full_screen_program() {
    let agent = Agent::start("mcp-screen").await;
    agent
        .call(
            "bash",
            json!({"command": "python3 -q", "description": "Python", "run_in_background": true}),
        )
        .await;
    // Typed once the prompt is there (a terminal echoes what comes earlier before it).
    wait_until_async_screen(&agent, "t1", ">>>", &mut Vec::new()).await;
    agent
        .call("task_input", json!({"task": "python", "text": "6*7"}))
        .await;
    let mut screen = Vec::new();
    wait_until_async_screen(&agent, "t1", "42\n>>>", &mut screen).await;
    assert_eq!(screen[0], ">>> 6*7\n42\n>>>\n", "{screen:?}");
    assert!(
        screen[1].starts_with(
            "[screen of task t1 (\"python\"): 80x24 · cursor at row 3, column 5 · the last 21 \
             rows blank · running"
        ),
        "{}",
        screen[1]
    );

    agent
        .call(
            "bash",
            json!({
                "command": "printf '\\e[?1049h\\e[5;10HFULL SCREEN'; sleep 600",
                "run_in_background": true,
            }),
        )
        .await;
    let mut full = Vec::new();
    wait_until_async_screen(&agent, "t2", "FULL SCREEN", &mut full).await;
    assert_eq!(full[0], "\n\n\n\n         FULL SCREEN\n");
    assert!(full[1].contains("alternate screen"), "{}", full[1]);
}

/// A full-screen program that waits for keys detaches named by its program, with its screen's
/// rows as the text (not the stream that drew them: a line of `~` for each row).
#[tokio::test]
async fn a_full_screen_program_detaches_named_by_its_program_with_its_screen_as_the_text() {
    let agent = Agent::start("mcp-vim").await;
    let dir = temp_dir("mcp-vim-files");
    let started = agent
        .call(
            "bash",
            json!({"command": "vim -u NONE -i NONE -N somefile", "cwd": dir}),
        )
        .await;
    assert!(!is_error(&started), "{:?}", texts(&started));
    let text = &texts(&started)[0];
    let screen = text
        .strip_suffix(&format!(
            "{MARKER_PREFIX}t1: vim (full screen) waits for keys]"
        ))
        .unwrap_or_else(|| panic!("no full-screen marker: {text:?}"));
    let shown = texts(&agent.call("task_screen", json!({"task": "t1"})).await);
    // The screen's last newline is the first of the marker's two.
    assert_eq!(format!("{screen}\n"), shown[0]);
    assert!(shown[1].contains("alternate screen"), "{}", shown[1]);
    assert!(screen.starts_with("\n~\n~\n"), "{screen:?}");
    assert!(screen.contains("\"somefile\""), "{screen:?}");
    assert!(!screen.contains('\x1b'), "{screen:?}");
    agent.call("task_kill", json!({"task": "t1"})).await;
}

/// Reads the task's screen until it shows `text`.
async fn wait_until_async_screen(agent: &Agent, task: &str, text: &str, screen: &mut Vec<String>) {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        *screen = texts(&agent.call("task_screen", json!({"task": task})).await);
        if screen[0].contains(text) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never shown: {text} in {screen:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_call_detaches_the_moment_a_line_matches_detach_on_or_returns_if_it_ends_first() {
    let agent = Agent::start("mcp-ready").await;
    let started = agent
        .call(
            "bash",
            json!({
                "command": "echo compiling; sleep 0.3; echo 'listening on :3000'; sleep 600",
                "detach_on": "listening on :\\d+",
            }),
        )
        .await;
    assert!(!is_error(&started), "{:?}", texts(&started));
    assert_eq!(
        texts(&started)[0],
        format!(
            "compiling\nlistening on :3000{MARKER_PREFIX}t1: matched /listening on :\\d+/: \
             listening on :3000]"
        )
    );
    let ended = agent
        .call(
            "bash",
            json!({"command": "echo done", "detach_on": "never"}),
        )
        .await;
    assert_eq!(ended_texts(&ended), ["done\n"]);
    let bad = agent
        .call("bash", json!({"command": "true", "detach_on": "("}))
        .await;
    assert!(is_error(&bad) && texts(&bad)[0].contains("`detach_on` is not a valid"));
}

#[tokio::test]
async fn a_long_call_reports_progress_with_its_newest_line_when_asked() {
    let server = ServerGuard::new("mcp-progress");
    let (sender, mut notifications) = tokio::sync::mpsc::unbounded_channel();
    let client = Listener(sender)
        .serve(bridge(&server))
        .await
        .expect("the MCP handshake");
    let command = "echo step 1; sleep 1.5; echo step 2; sleep 1.5";
    let Value::Object(arguments) = json!({"command": command}) else {
        unreachable!()
    };
    let mut params = CallToolRequestParams::new("bash").with_arguments(arguments);
    params.meta = Some(rmcp::model::RequestMetaObject::with_progress_token(
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::String("long-1".into())),
    ));
    let result = client.peer().call_tool(params).await.expect("bash");
    assert_eq!(ended_texts(&result), ["step 1\nstep 2\n"]);
    let mut reports = Vec::new();
    while let Ok((kind, text)) = notifications.try_recv() {
        assert_eq!(kind, "progress");
        reports.push(text);
    }
    assert!(
        (2..=4).contains(&reports.len()),
        "about one report a second: {reports:?}"
    );
    assert!(reports[0].starts_with("1 s: step "), "{reports:?}");
    assert!(
        reports.iter().any(|report| report.ends_with(": step 2")),
        "{reports:?}"
    );

    drop(client);

    // No token (rmcp's client always sends one; this one is raw), no reports: the next message
    // is the result.
    let mut raw = RawBridge::start(&server);
    raw.send(&json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": command}},
    }));
    let reply = raw.reply();
    assert_eq!(reply["id"], 7, "{reply}");
    assert_eq!(reply["result"]["content"][0]["text"], "step 1\nstep 2\n");
}

#[tokio::test]
async fn oino_mcp_detach_after_detaches_calls_that_give_no_detach_of_their_own() {
    let server = ServerGuard::new("mcp-default-detach");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_oino"));
    command
        .args(["mcp", "--detach-after", "0.3"])
        .env("OINO_SOCKET", &server.socket)
        .env("XDG_STATE_HOME", &server.state);
    let client =
        ().serve(TokioChildProcess::new(command).expect("oino mcp"))
            .await
            .expect("the MCP handshake");
    let long = call(
        client.peer(),
        "bash",
        json!({"command": "echo up; sleep 600"}),
    )
    .await
    .expect("bash");
    assert_eq!(
        texts(&long)[0],
        format!("up{MARKER_PREFIX}t1: still running after 0.3 s]")
    );
    let own = call(
        client.peer(),
        "bash",
        json!({"command": "sleep 1; echo finished", "detach_after_ms": 60_000}),
    )
    .await
    .expect("bash");
    assert_eq!(ended_texts(&own), ["finished\n"]);
    drop(client);

    let bad = server
        .oino(&["mcp", "--detach-after", "-1"])
        .output()
        .expect("oino mcp");
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

#[tokio::test]
async fn a_call_that_asks_a_question_returns_its_prompt_and_the_agent_answers_it() {
    let agent = Agent::start("mcp-prompt").await;
    let asked = agent
        .call(
            "bash",
            json!({"command": "read -p 'Continue? [y/N] ' a; echo answer=$a", "description": "Ask"}),
        )
        .await;
    assert!(!is_error(&asked), "{:?}", texts(&asked));
    assert_eq!(
        texts(&asked)[0],
        format!("Continue? [y/N] {MARKER_PREFIX}t1: waiting for input: Continue? [y/N]]")
    );
    let listed = agent.call("task_list", json!({})).await;
    assert!(
        texts(&listed)[0].contains("t1 \"ask\": running, waiting for input: \"Continue? [y/N]\""),
        "{:?}",
        texts(&listed)
    );
    agent
        .call("task_input", json!({"task": "t1", "text": "y"}))
        .await;
    let answer = agent
        .call("task_output", json!({"task": "t1", "wait_ms": 60_000}))
        .await;
    let (text, notes) = output_and_notes(&answer);
    assert!(text.ends_with("answer=y\n"), "{text:?} {notes}");
}

#[tokio::test]
async fn run_in_background_is_a_task_from_its_first_byte() {
    let agent = Agent::start("mcp-background").await;
    // A command that ends at once is a task all the same, every time.
    for round in 1..=12 {
        let started = agent
            .call(
                "bash",
                json!({"command": "echo fast; exit 3", "run_in_background": true}),
            )
            .await;
        assert!(!is_error(&started), "{:?}", texts(&started));
        let task = format!("t{round}");
        assert_eq!(
            texts(&started)[0],
            format!("{MARKER_PREFIX}{task}: started in the background]"),
            "round {round}: the result is the marker alone"
        );
        let read = agent
            .call("task_output", json!({"task": task, "wait_ms": 30_000}))
            .await;
        let (text, notes) = output_and_notes(&read);
        assert_eq!(text, "fast\n", "round {round}: {notes}");
        assert!(
            notes.contains("exited with code 3"),
            "round {round}: {notes}"
        );
    }
    // A flood is all the task's: nothing of it before the marker, all of it in task_output.
    let started = agent
        .call(
            "bash",
            json!({"command": "seq 1 100000", "run_in_background": true}),
        )
        .await;
    assert_eq!(
        texts(&started)[0],
        format!("{MARKER_PREFIX}t13: started in the background]")
    );
    let mut read = String::new();
    loop {
        let page = agent
            .call(
                "task_output",
                json!({"task": "t13", "wait_ms": 30_000, "max_bytes": 1_048_576}),
            )
            .await;
        let (text, notes) = output_and_notes(&page);
        read.push_str(&text);
        if notes.contains("exited with code 0") && !notes.contains("more to read") {
            break;
        }
    }
    let expected: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    assert!(
        read == expected,
        "output lost or repeated: {} bytes",
        read.len()
    );
}

#[tokio::test]
async fn the_first_read_after_a_capped_result_starts_at_what_it_left_out() {
    let agent = Agent::start("mcp-capped").await;
    let detached = agent
        .call(
            "bash",
            json!({"command": "seq 1 100000; echo flood-done; sleep 600",
                   "detach_on": "^flood-done$"}),
        )
        .await;
    let text = texts(&detached)[0].clone();
    let (output, marker) = text.rsplit_once("\n\n[Detached").expect("the marker");
    assert!(
        marker.starts_with(" to background task t1: matched"),
        "{marker}"
    );
    let cap = output
        .lines()
        .find(|line| line.starts_with("[... "))
        .unwrap_or_else(|| panic!("the text is capped: {output}"));
    assert!(
        cap.contains("omitted; the task's output is read on from them;"),
        "{cap}"
    );
    let head: Vec<&str> = output
        .lines()
        .take_while(|line| !line.starts_with("[... "))
        .collect();
    let read = read_through(&agent, "t1", "flood-done\n").await;
    let whole: Vec<String> = head
        .iter()
        .map(|line| (*line).to_owned())
        .chain(read.lines().map(str::to_owned))
        .collect();
    let expected: Vec<String> = (1..=100_000)
        .map(|n| n.to_string())
        .chain(["flood-done".to_owned()])
        .collect();
    assert_eq!(whole.len(), expected.len(), "lines lost or repeated");
    assert!(whole == expected, "lines lost or repeated");
}

#[tokio::test]
async fn the_shells_folder_carries_over_to_the_next_call_and_nothing_else_does() {
    let repo = temp_dir("mcp-folder");
    let sub = repo.join("sub");
    std::fs::create_dir_all(&sub).expect("a folder");
    let agent = Agent::start_in("mcp-folder", &repo).await;
    let (repo, sub) = (repo.display().to_string(), sub.display().to_string());
    let moved = agent.call("bash", json!({"command": "cd sub"})).await;
    assert!(!is_error(&moved));
    let blocks = texts(&moved);
    assert_eq!(blocks[0], "(no output)");
    assert!(blocks[1].starts_with("[ran "), "{blocks:?}");
    assert!(
        blocks[1].ends_with(&format!("\n[cwd: {sub}]\n")),
        "{blocks:?}"
    );

    // A child's folder is not the shell's; nor is a subshell's.
    let stayed = agent
        .call(
            "bash",
            json!({"command": "bash -c 'cd /'; (cd /tmp); pwd; export X=1"}),
        )
        .await;
    let blocks = texts(&stayed);
    assert_eq!(blocks[0], format!("{sub}\n"));
    assert!(!blocks[1].contains("[cwd:"), "{blocks:?}");
    // Variables do not carry over.
    let unset = agent
        .call("bash", json!({"command": "echo ${X:-unset}"}))
        .await;
    assert_eq!(texts(&unset)[0], "unset\n");

    // A folder given is for that call only, relative to where the shell is.
    let there = agent
        .call("bash", json!({"command": "pwd; cd /", "cwd": ".."}))
        .await;
    assert_eq!(texts(&there)[0], format!("{repo}\n"));
    assert!(!texts(&there)[1].contains("[cwd:"), "{:?}", texts(&there));
    let here = agent.call("bash", json!({"command": "pwd"})).await;
    assert_eq!(texts(&here)[0], format!("{sub}\n"));

    // A failed call moves it too, and says how it ended and how long it ran.
    let failed = agent
        .call("bash", json!({"command": "cd ..; echo oops; exit 3"}))
        .await;
    assert!(is_error(&failed));
    let blocks = texts(&failed);
    assert_eq!(blocks[0], "oops\n");
    assert!(blocks[1].starts_with("[exit code 3 · "), "{blocks:?}");
    assert!(
        blocks[1].ends_with(&format!(" s]\n[cwd: {repo}]\n")),
        "{blocks:?}"
    );

    // A folder removed since is let go, and said.
    agent
        .call("bash", json!({"command": "mkdir -p gone && cd gone"}))
        .await;
    std::fs::remove_dir(format!("{repo}/gone")).expect("removed");
    let back = agent.call("bash", json!({"command": "pwd"})).await;
    let blocks = texts(&back);
    assert_eq!(blocks[0], format!("{repo}\n"), "{blocks:?}");
    assert!(
        blocks[1].contains(&format!("[cwd: {repo} ({repo}/gone no longer exists)]")),
        "{blocks:?}"
    );
}

#[tokio::test]
async fn a_wait_on_a_task_ends_when_it_waits_for_input() {
    let agent = Agent::start("mcp-wait-prompt").await;
    agent
        .call(
            "bash",
            json!({"command": "sleep 0.3; read -p 'Continue? [Y/n] ' a; echo \"got $a\"",
                   "run_in_background": true}),
        )
        .await;
    let began = std::time::Instant::now();
    let waited = agent
        .call("task_output", json!({"task": "t1", "wait_ms": 60_000}))
        .await;
    let (text, notes) = output_and_notes(&waited);
    assert_eq!(text, "Continue? [Y/n] ");
    assert!(
        notes.contains(
            "[task t1 (\"sleep-0.3\"): running, waiting for input: \"Continue? [Y/n]\" · "
        ),
        "{notes}"
    );
    assert!(began.elapsed() < DEADLINE, "the wait ran its time out");
    // Answered, it goes on; a wait that began at the answer is not ended by the old prompt.
    agent
        .call("task_input", json!({"task": "t1", "text": "y"}))
        .await;
    let answer = agent
        .call(
            "task_output",
            json!({"task": "t1", "wait_ms": 30_000, "pattern": "^got y$"}),
        )
        .await;
    let (_, notes) = output_and_notes(&answer);
    assert!(notes.contains("[matched /^got y$/: \"got y\"]"), "{notes}");
}

#[tokio::test]
async fn a_wait_on_a_task_at_a_prompt_returns_what_it_wrote_before() {
    let agent = Agent::start("mcp-prompt-unread").await;
    agent
        .call(
            "bash",
            json!({"command": "for i in 1 2 3; do echo line $i; done; read -p 'Name? ' n",
                   "run_in_background": true}),
        )
        .await;
    wait_until("the task to wait for input", || {
        agent
            .entries()
            .iter()
            .any(|entry| entry["task_id"] == "t1" && entry["waiting_for_input"].is_string())
    })
    .await;
    let waited = agent
        .call("task_output", json!({"task": "t1", "wait_ms": 30_000}))
        .await;
    let (text, notes) = output_and_notes(&waited);
    assert_eq!(text, "line 1\nline 2\nline 3\nName? ", "{notes}");
    assert!(notes.contains("waiting for input: \"Name?\""), "{notes}");
}

#[tokio::test]
async fn a_line_written_in_two_parts_across_the_cap_is_read_whole() {
    let agent = Agent::start("mcp-capped-parts").await;
    // 149 lines of 100 bytes, then a line written in two parts, then more than the tail keeps.
    let command = "for i in $(seq 1000 1148); do printf '%099d\\n' $i; done; printf AAAAAAAAAA; \
                   sleep 0.5; printf 'BBBBBBBBBB\\n'; seq 1 5000; echo flood-done; sleep 600";
    let detached = agent
        .call(
            "bash",
            json!({"command": command, "detach_on": "^flood-done$"}),
        )
        .await;
    let text = texts(&detached)[0].clone();
    let head: Vec<&str> = text
        .lines()
        .take_while(|line| !line.starts_with("[... "))
        .collect();
    let read = read_through(&agent, "t1", "flood-done\n").await;
    let mut whole: Vec<String> = head.iter().map(|line| (*line).to_owned()).collect();
    whole.extend(read.lines().map(str::to_owned));
    let mut expected: Vec<String> = (1000..=1148).map(|n| format!("{n:099}")).collect();
    expected.push("AAAAAAAAAABBBBBBBBBB".to_owned());
    expected.extend((1..=5000).map(|n| n.to_string()));
    expected.push("flood-done".to_owned());
    assert!(
        whole == expected,
        "lines lost or repeated: {} of {}",
        whole.len(),
        expected.len()
    );
}

#[tokio::test]
async fn of_two_calls_at_once_the_one_that_did_not_cd_undoes_nothing() {
    let folder = temp_dir("mcp-two-calls");
    let agent = Agent::start_in("mcp-two-calls", &folder).await;
    let slow = call_in_background(&agent.peer(), "bash", json!({"command": "sleep 1; pwd"}));
    wait_until("the slow call to start", || {
        id_of(&agent.server, "sleep 1; pwd").is_some()
    })
    .await;
    let moved = agent.call("bash", json!({"command": "cd /usr"})).await;
    assert!(
        texts(&moved)[1].ends_with("[cwd: /usr]\n"),
        "{:?}",
        texts(&moved)
    );
    let slow = returned(slow).await;
    assert_eq!(texts(&slow)[0], format!("{}\n", folder.display()));
    assert!(!texts(&slow)[1].contains("[cwd:"), "{:?}", texts(&slow));
    let here = agent.call("bash", json!({"command": "pwd"})).await;
    assert_eq!(texts(&here)[0], "/usr\n");
}

#[tokio::test]
async fn an_agents_call_left_by_a_dead_server_is_listed_with_the_agents_command() {
    let agent = Agent::start("mcp-orphan-command").await;
    // A command that outlives its terminal: the next server finds it.
    let command = "trap '' HUP; echo kept; sleep 600; true";
    let waiting = call_in_background(&agent.peer(), "bash", json!({"command": command}));
    agent.running_call(command).await;
    crate::support::kill_server_outright(&agent.server.socket);
    let _ = returned(waiting).await;
    // The next server lists it by the agent's command, not by the wrapper that reported the
    // shell's folder.
    let mut listed = Vec::new();
    wait_until("the orphan to be listed", || {
        listed = entries_of(&agent.server);
        listed.iter().any(|entry| entry["state"] == "orphaned")
    })
    .await;
    let orphan = listed
        .iter()
        .find(|entry| entry["state"] == "orphaned")
        .expect("the orphan");
    assert_eq!(orphan["command"], command, "{listed:#?}");
    let id = orphan["id"].as_str().expect("an id").to_owned();
    assert!(agent.oino(&["kill", &id]).status.success());
}
