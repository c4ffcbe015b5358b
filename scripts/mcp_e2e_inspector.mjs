// End to end: the MCP Inspector's command line (`@modelcontextprotocol/inspector --cli`) over the
// real `oino mcp`. Each Inspector run starts its own `oino mcp`, makes one request and closes it;
// the tasks live on in the oino server at SOCKET, so later runs see them.
//
// The Inspector turns each `--tool-arg key=value` into the type the tool's input schema gives the
// key (integer, boolean, …), so this checks that oino's schemas are ones a generic client can use.
//
// Usage: node mcp_e2e_inspector.mjs NODE_MODULES OINO_BINARY SOCKET
// NODE_MODULES is the folder the pinned Inspector was installed in (scripts/mcp-e2e-node installs
// it in target/mcp-node). Checks each step and exits non-zero with the reason at the first that
// fails.

import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

const [NODE_MODULES, OINO, SOCKET] = process.argv.slice(2);
if (!SOCKET) {
  console.error("usage: node mcp_e2e_inspector.mjs NODE_MODULES OINO_BINARY SOCKET");
  process.exit(2);
}
const INSPECTOR = join(NODE_MODULES, ".bin", "mcp-inspector");
const DEADLINE_MS = 30_000;
const TOOLS = ["bash", "task_input", "task_kill", "task_list", "task_output", "task_screen"];
const DETACHED = /^\[Detached to background task (t\d+): (.*)\]$/m;

/** One Inspector run: its JSON answer, or an error with what it printed. */
async function inspector(method, ...rest) {
  const args = ["--cli", OINO, "mcp", "--socket", SOCKET, "--method", method, ...rest];
  let stdout;
  try {
    ({ stdout } = await promisify(execFile)(INSPECTOR, args, { timeout: DEADLINE_MS }));
  } catch (error) {
    throw new Error(
      `mcp-inspector ${args.join(" ")} failed (${error.killed ? "timed out" : `exit ${error.code}`}):` +
        `\n${error.stdout}${error.stderr}`,
    );
  }
  try {
    return JSON.parse(stdout);
  } catch {
    throw new Error(`mcp-inspector ${args.join(" ")} printed no JSON:\n${stdout}`);
  }
}

/** tools/call with `--tool-arg key=value` for each pair. */
function callTool(name, args = {}) {
  const pairs = Object.entries(args).flatMap(([key, value]) => ["--tool-arg", `${key}=${value}`]);
  return inspector("tools/call", "--tool-name", name, ...pairs);
}

function texts(result) {
  return result.content.filter((block) => block.type === "text").map((block) => block.text);
}

function show(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function check(condition, message) {
  if (!condition) throw new Error(show(message));
}

/** A tool result that is no error: the arguments were taken, with their types. */
function accepted(result) {
  check(!result.isError, result);
  return result;
}

function step(name) {
  console.log(`ok: ${name}`);
}

async function main() {
  const listed = await inspector("tools/list");
  const names = listed.tools.map((tool) => tool.name).sort();
  check(JSON.stringify(names) === JSON.stringify(TOOLS), names);
  step("tools/list has the six tools");

  const quick = accepted(await callTool("bash", { command: "echo hi", timeout_ms: 5000 }));
  check(texts(quick)[0] === "hi\n" && /^\[ran \d+\.\d s\]\n$/.test(texts(quick)[1]), quick);
  const failed = await callTool("bash", { command: "exit 3", timeout_ms: 5000 });
  check(failed.isError === true, failed);
  step("bash with timeout_ms=5000 (an integer) returns text, and isError for a non-zero exit");

  let started = Date.now();
  const late = accepted(await callTool("bash", { command: "sleep 30", detach_after_ms: 300 }));
  const lateMs = Date.now() - started;
  const lateMatch = texts(late)[0].match(DETACHED);
  check(lateMatch, `no detach line: ${show(late)}`);
  const sleeper = lateMatch[1];
  step(`bash with detach_after_ms=300 detaches \`sleep 30\` as ${sleeper} (the run took ${lateMs} ms)`);

  started = Date.now();
  const background = accepted(
    await callTool("bash", { command: "sleep 30", run_in_background: true }),
  );
  const backgroundMs = Date.now() - started;
  const backgroundMatch = texts(background)[0].match(DETACHED);
  check(backgroundMatch?.[2] === "started in the background", background);
  const other = backgroundMatch[1];
  check(other !== sleeper, `two detaches, one task: ${sleeper}`);
  step(`bash with run_in_background=true (a boolean) starts ${other} (the run took ${backgroundMs} ms)`);

  // Each Inspector call is a bridge of its own: the tasks are another bridge's, listed with all.
  const mine = texts(accepted(await callTool("task_list")))[0];
  check(mine.includes("2 more tasks of the server, not started or read by you"), mine);
  const tasks = texts(accepted(await callTool("task_list", { all: true })))[0].split("\n");
  for (const task of [sleeper, other]) {
    const line = tasks.find((line) => line.startsWith(`${task} `));
    check(line?.includes("running"), `${task} not running in task_list: ${show(tasks)}`);
  }
  step("task_list lists only its own bridge's tasks, and with all=true (a boolean) both running");

  const killed = accepted(await callTool("task_kill", { task: sleeper }));
  check(texts(killed)[0].includes("killed by signal"), killed);
  step(`task_kill ends ${sleeper}`);

  const asked = accepted(await callTool("bash", { command: "read -p 'Name? ' n; echo hi $n" }));
  const askedMatch = texts(asked)[0].match(DETACHED);
  check(askedMatch?.[2] === "waiting for input: Name?", asked);
  accepted(await callTool("task_input", { task: askedMatch[1], text: "Ada" }));
  const greeted = accepted(
    await callTool("task_output", { task: askedMatch[1], since: 0, wait_ms: 10000, pattern: "^hi Ada$" }),
  );
  check(texts(greeted).join("").includes('[matched /^hi Ada$/: "hi Ada"]'), greeted);
  step(`a prompt returns as ${askedMatch[1]}, waiting for input; task_input answers it`);

  const dev = accepted(
    await callTool("bash", { command: "echo booting; echo 'ready in 5 ms'; sleep 30", detach_on: "^ready in" }),
  );
  check(texts(dev)[0].match(DETACHED)?.[2] === "matched /^ready in/: ready in 5 ms", dev);
  step("detach_on detaches at the ready line");

  accepted(
    await callTool("bash", {
      command: "printf 'row one\\nrow two'; sleep 30",
      run_in_background: true,
      description: "Two rows",
    }),
  );
  const deadline = Date.now() + DEADLINE_MS;
  let screen;
  do {
    screen = accepted(await callTool("task_screen", { task: "two-rows" }));
  } while (!texts(screen)[0].includes("row two") && Date.now() < deadline);
  check(texts(screen)[0] === "row one\nrow two\n", screen);
  check(texts(screen)[1].includes("cursor at row 2, column 8"), screen);
  step("task_screen shows the rows and the cursor");
  // The end notices are a bridge's own: each Inspector run starts a new bridge, so they are
  // checked with the SDK's client, which keeps one.

  console.log("mcp e2e (Inspector CLI): all steps passed");
}

main().catch((error) => {
  console.error(`mcp e2e (Inspector CLI): FAILED: ${error.message}`);
  process.exit(1);
});
