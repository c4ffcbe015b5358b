//! The README's quick start, command by command, as a newcomer types it: each line of its
//! blocks runs through bash with `oino` on the `PATH`, the interactive ones in a real terminal.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::e2e::Terminal;
use crate::support::{
    DEADLINE, ServerGuard, output_within, unique_id, wait_for_exit, wait_until_blocking,
};

/// The commands of the quick start's code blocks, in order, without their comments.
fn quick_start_commands() -> Vec<String> {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("## Quick start")
        .expect("README has a quick start");
    let section = &readme[start..];
    let section = &section[..section[3..]
        .find("\n## ")
        .map_or(section.len(), |end| end + 3)];
    let mut commands = Vec::new();
    let mut in_block = false;
    for line in section.lines() {
        if line.starts_with("```") {
            in_block = !in_block && line == "```sh";
            continue;
        }
        if in_block {
            let command = line.split("  #").next().unwrap_or_default().trim();
            if !command.is_empty() {
                commands.push(command.to_owned());
            }
        }
    }
    commands
}

/// What the newcomer has: `oino` on the `PATH`, and (for the test) a server of its own.
struct Newcomer {
    server: ServerGuard,
    path: PathBuf,
    mark: String,
}

impl Newcomer {
    fn new() -> Self {
        let bin = Path::new(env!("CARGO_BIN_EXE_oino"))
            .parent()
            .expect("the binary's folder");
        let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .expect("a PATH");
        Self {
            server: ServerGuard::new("readme"),
            path: PathBuf::from(path),
            mark: unique_id("readme"),
        }
    }

    fn env(&self) -> [(&str, &Path); 3] {
        [
            ("PATH", self.path.as_path()),
            ("OINO_SOCKET", self.server.socket.as_path()),
            ("XDG_STATE_HOME", self.server.state.as_path()),
        ]
    }

    /// The line in a real terminal.
    fn in_terminal(&self, line: &str) -> Terminal {
        Terminal::start_program("bash", &["-c", line], &self.mark, &self.env())
    }

    /// The line with no terminal: its status, output and errors.
    fn run(&self, line: &str) -> (bool, String, String) {
        let output = output_within(
            line,
            Command::new("bash")
                .args(["-c", line])
                .envs(self.env())
                .env("OINO_E2E_MARK", &self.mark)
                .stdin(Stdio::null()),
        );
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

impl Newcomer {
    /// Starts the MCP bridge `line` as an agent does and asks for its tools: the answer.
    fn ask_bridge(&self, line: &str) -> String {
        let mut bridge = Command::new("bash")
            .args(["-c", line])
            .envs(self.env())
            .env("OINO_E2E_MARK", &self.mark)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the bridge");
        let mut input = bridge.stdin.take().expect("its input");
        input.write_all(MCP_HELLO.as_bytes()).expect("ask");
        let (lines, answers) = std::sync::mpsc::channel();
        let output = BufReader::new(bridge.stdout.take().expect("its output"));
        std::thread::spawn(move || {
            for line in output.lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let answer = loop {
            let line = answers
                .recv_timeout(DEADLINE)
                .unwrap_or_else(|err| panic!("{line}: no answer to tools/list: {err}"));
            if line.contains(r#""id":2"#) {
                break line;
            }
        };
        // The agent goes: the bridge ends with its input.
        drop(input);
        wait_for_exit(line, &mut bridge);
        answer
    }
}

/// What an MCP client sends first: initialize, then the list of tools.
const MCP_HELLO: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","#,
    r#""capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    "\n",
);

#[test]
fn every_command_of_the_quick_start_does_what_the_readme_says() {
    let commands = quick_start_commands();
    assert!(commands.len() >= 7, "the quick start: {commands:?}");
    let newcomer = Newcomer::new();
    for line in &commands {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            // The first command: the interface on a call; `d` names it a task, `q` leaves.
            ["oino", first, ..] if first.starts_with('\'') => {
                let mut tui = newcomer.in_terminal(line);
                tui.wait_for("tick 2");
                tui.send(b"d");
                tui.wait_for("task name:");
                // As the README says: what is typed replaces the proposed name.
                tui.send(b"ticker\r");
                tui.wait_for("as task t1");
                tui.send(b"q");
                assert!(tui.wait_exit().success(), "{}", tui.contents());
                tui.wait_for_main_screen();
                tui.wait_for("1 task keeps running");
            }
            ["oino", "ls"] => {
                let (ok, out, err) = newcomer.run(line);
                assert!(ok, "{line}: {err}");
                let row = out.lines().find(|row| row.contains("ticker"));
                assert!(
                    row.is_some_and(|row| row.contains("running")),
                    "{line}: {out}"
                );
            }
            ["oino", "logs", "ticker"] => {
                // Since it became a task (a tick a second): the first ticks, seen in the window
                // before the detach, are not printed again.
                let mut out = String::new();
                wait_until_blocking("a tick since the detach", || {
                    let (ok, printed, err) = newcomer.run(line);
                    assert!(ok, "{line}: {err}");
                    out = printed;
                    out.contains("tick ")
                });
                assert!(!out.contains("tick 1\n"), "{line}: {out}");
            }
            ["oino", "attach", "ticker"] => {
                let mut tui = newcomer.in_terminal(line);
                let seen = |screen: &str| {
                    screen
                        .lines()
                        .filter_map(|row| row.strip_prefix("tick "))
                        .filter_map(|n| n.trim().parse::<u32>().ok())
                        .max()
                };
                wait_until_blocking("the task's ticks", || seen(&tui.contents()).is_some());
                let first = seen(&tui.contents());
                wait_until_blocking("a new tick, live", || seen(&tui.contents()) > first);
                tui.send(b"\x01");
                assert!(tui.wait_exit().success(), "{}", tui.contents());
            }
            ["oino", "kill", "ticker"] => {
                let (ok, _, err) = newcomer.run(line);
                // Its `sleep 1` with it, unless the kill came between two.
                assert!(ok, "{line}: {err}");
                assert!(
                    [
                        "oino kill: killed `ticker` (TERM) and 1 process\n",
                        "oino kill: killed `ticker` (TERM)\n"
                    ]
                    .contains(&err.as_str()),
                    "{line}: {err}"
                );
            }
            ["oino"] => {
                let mut tui = newcomer.in_terminal(line);
                tui.wait_for("ticker");
                tui.wait_for("Finished");
                tui.send(b"q");
                assert!(tui.wait_exit().success(), "{}", tui.contents());
            }
            // An agent's command line runs `oino mcp ...`: what the agent would start, asked
            // for its tools as an agent asks.
            [_agent, "mcp", "add", "oino", "--", ..] => {
                let bridge = line.split_once(" -- ").expect("a command after --").1;
                let tools = newcomer.ask_bridge(bridge);
                assert!(
                    tools.contains(r#""name":"bash""#) && tools.contains(r#""name":"task_output""#),
                    "{bridge}: {tools}"
                );
            }
            _ => panic!(
                "the README's quick start has `{line}`, which this test does not know: teach \
                 tests/all/readme.rs what a newcomer sees when typing it"
            ),
        }
    }
    let mark = newcomer.mark.clone();
    drop(newcomer);
    wait_until_blocking("every process of the quick start to end", || {
        oino::pty::proc_scan::with_env("OINO_E2E_MARK", &mark).is_empty()
    });
}
