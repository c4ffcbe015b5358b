// End to end: the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`), as an agent would
// use it, over the real `oino mcp`.
//
// Usage: node mcp_e2e_sdk.mjs NODE_MODULES OINO_BINARY SOCKET
// NODE_MODULES is the folder the pinned SDK was installed in (scripts/mcp-e2e-node installs it in
// target/mcp-node). Checks each step and exits non-zero with the reason at the first that fails.

import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

const [NODE_MODULES, OINO, SOCKET] = process.argv.slice(2);
if (!SOCKET) {
  console.error("usage: node mcp_e2e_sdk.mjs NODE_MODULES OINO_BINARY SOCKET");
  process.exit(2);
}
// ES modules ignore NODE_PATH, and the SDK lives outside this file's folders: import its ES
// build (what its exports map gives `import`) by path.
const sdk = join(NODE_MODULES, "@modelcontextprotocol/sdk/dist/esm");
const { Client } = await import(pathToFileURL(join(sdk, "client/index.js")).href);
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, "client/stdio.js")).href);

const DEADLINE_MS = 30_000;
const TOOLS = ["bash", "task_input", "task_kill", "task_list", "task_output", "task_screen"];
const DETACHED = /^\[Detached to background task (t\d+): (.*)\]$/m;

async function oino(...args) {
  const { stdout } = await promisify(execFile)(OINO, [...args, "--socket", SOCKET]);
  return stdout;
}

async function entries() {
  return JSON.parse(await oino("ls", "--json"));
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntil(what, condition) {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(20);
  }
}

/** The promise's value, or an error once DEADLINE_MS have passed. */
async function within(what, promise) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), DEADLINE_MS);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
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

function step(name) {
  console.log(`ok: ${name}`);
}

async function main() {
  const client = new Client({ name: "oino-e2e-sdk", version: "0" });
  // The SDK passes only a few variables (PATH, HOME, …) by default: XDG_STATE_HOME must reach the
  // server the bridge starts, so pass all of them.
  const transport = new StdioClientTransport({
    command: OINO,
    args: ["mcp", "--socket", SOCKET],
    env: { ...process.env },
  });
  await client.connect(transport);
  try {
    await session(client);
  } finally {
    await client.close();
  }
  console.log("mcp e2e (TypeScript SDK): all steps passed");
}

async function session(client) {
  const call = (name, args) => client.callTool({ name, arguments: args });

  const server = client.getServerVersion();
  check(server?.name === "oino", server);
  const tools = Object.fromEntries((await client.listTools()).tools.map((tool) => [tool.name, tool]));
  check(JSON.stringify(Object.keys(tools).sort()) === JSON.stringify(TOOLS), Object.keys(tools));
  check(tools.bash.inputSchema.required.includes("command"), tools.bash);
  step("initialize and list the tools");

  const quick = await call("bash", { command: "echo hello" });
  check(!quick.isError && texts(quick)[0] === "hello\n", quick);
  check(/^\[ran \d+\.\d s\]\n$/.test(texts(quick)[1]), quick);
  const failed = await call("bash", { command: "exit 3" });
  check(failed.isError === true, failed);
  step("bash returns text, and isError for a non-zero exit");

  // A detach from the interface side: `oino detach` on the call the agent waits for.
  const command = "echo before; sleep 60";
  const waiting = call("bash", { command });
  let callId;
  await waitUntil("the call to be listed running with its output", async () => {
    const entry = (await entries()).find(
      (entry) => entry.command === command && entry.state === "running" && entry.bytes > 0,
    );
    callId = entry?.id;
    return callId !== undefined;
  });
  await oino("detach", callId);
  const outside = await within("the detached call's result", waiting);
  check(!outside.isError, outside);
  const task = (await entries()).find((entry) => entry.id === callId)?.task_id;
  check(/^t\d+$/.test(task ?? ""), `no task for the detached call ${callId}`);
  const marker = `\n\n[Detached to background task ${task}: detached by \`oino detach\`]`;
  const before = texts(outside)[0];
  check(before.endsWith(marker), `no exact marker: ${show(before)}`);
  check(before.slice(0, -marker.length).trim() === "before", `output lost: ${show(before)}`);
  const ended = await call("task_kill", { task });
  check(!ended.isError && texts(ended)[0].includes("killed by signal"), ended);
  step("a call detached from outside returns its output so far and the exact marker");

  // Numbers and booleans as arguments.
  let started = Date.now();
  const late = await call("bash", { command: "sleep 30", detach_after_ms: 300 });
  const lateMs = Date.now() - started;
  check(!late.isError, late);
  check(lateMs < 5_000, `detach_after_ms 300 returned after ${lateMs} ms`);
  const lateMatch = texts(late)[0].match(DETACHED);
  check(lateMatch, `no detach line: ${show(texts(late))}`);
  const sleeper = lateMatch[1];
  const listed = await call("task_list", {});
  const sleeperLine = texts(listed)[0]
    .split("\n")
    .find((line) => line.startsWith(`${sleeper} `));
  check(!listed.isError && sleeperLine?.includes("running"), listed);
  step(`detach_after_ms 300 detaches \`sleep 30\` after ${lateMs} ms; task_list shows ${sleeper}`);

  const gate = mkdtempSync(join(tmpdir(), "oino-e2e-go-"));
  try {
    started = Date.now();
    const background = await call("bash", {
      command: "while [ ! -e GO ]; do sleep 0.02; done; echo ready; sleep 60",
      cwd: gate,
      run_in_background: true,
    });
    const backgroundMs = Date.now() - started;
    check(!background.isError, background);
    const backgroundMatch = texts(background)[0].match(DETACHED);
    check(backgroundMatch?.[2] === "started in the background", background);
    check(backgroundMs < 5_000, `run_in_background returned after ${backgroundMs} ms`);
    const ready = backgroundMatch[1];
    writeFileSync(join(gate, "GO"), "");
    const matched = await call("task_output", { task: ready, wait_ms: 5000, pattern: "^ready$" });
    check(!matched.isError, matched);
    check(texts(matched).join("").includes('[matched /^ready$/: "ready"]'), matched);
    step(`run_in_background returns at once (${backgroundMs} ms); task_output waits for ^ready$`);
  } finally {
    rmSync(gate, { recursive: true, force: true });
  }

  const reader = await call("bash", {
    command: 'while IFS= read -r line; do echo "got: $line"; done',
    run_in_background: true,
  });
  const readerMatch = texts(reader)[0].match(DETACHED);
  check(!reader.isError && readerMatch, reader);
  const echo = readerMatch[1];
  const typed = await call("task_input", { task: echo, text: "ping" });
  check(!typed.isError && texts(typed)[0].startsWith("Typed 5 bytes"), typed);
  const answer = await call("task_output", { task: echo, wait_ms: 5000, pattern: "^got: ping$" });
  check(!answer.isError && texts(answer).join("").includes('[matched /^got: ping$/: "got: ping"]'), answer);
  const killed = await call("task_kill", { task: echo });
  check(!killed.isError && texts(killed)[0].includes("killed by signal"), killed);
  const gone = await call("task_list", {});
  const echoLine = texts(gone)[0]
    .split("\n")
    .find((line) => line.startsWith(`${echo} `));
  check(echoLine?.includes("killed by signal"), gone);
  step("task_input types into a background reader, task_output shows its answer, task_kill ends it");

  // A question: the call returns with its prompt, the agent answers it.
  const asked = await call("bash", { command: "read -p 'Continue? [y/N] ' a; echo answer=$a" });
  const askedMatch = texts(asked)[0].match(DETACHED);
  check(!asked.isError && askedMatch?.[2] === "waiting for input: Continue? [y/N]", asked);
  const asker = askedMatch[1];
  await call("task_input", { task: asker, text: "y" });
  const answered = await call("task_output", { task: asker, wait_ms: 10_000, pattern: "^answer=y$" });
  check(texts(answered).join("").includes('[matched /^answer=y$/: "answer=y"]'), answered);
  step("a call waiting for input returns its prompt; task_input answers it");

  // A ready line: the call returns the moment its server says it listens.
  const dev = await call("bash", {
    command: "echo compiling; sleep 0.2; echo 'listening on :3000'; sleep 60",
    detach_on: "listening on :\\d+",
  });
  const devMatch = texts(dev)[0].match(DETACHED);
  check(devMatch?.[2] === "matched /listening on :\\d+/: listening on :3000", dev);
  check(texts(dev)[0].startsWith("compiling\nlistening on :3000\n"), dev);
  step("detach_on returns at the ready line with the output so far");

  // The screen of a full-screen program.
  await call("bash", {
    command: "printf '\\e[?1049h\\e[3;5HFULL SCREEN'; sleep 60",
    run_in_background: true,
    description: "Paint the screen",
  });
  let screen;
  await waitUntil("the screen to be painted", async () => {
    screen = await call("task_screen", { task: "paint-the-screen" });
    return texts(screen)[0]?.includes("FULL SCREEN");
  });
  check(texts(screen)[0] === "\n\n    FULL SCREEN\n", screen);
  check(texts(screen)[1].includes("alternate screen"), screen);
  step("task_screen shows a full-screen program's screen, found by its description's name");

  // The end of a task is told once, in the next result.
  await call("bash", { command: "sleep 0.3; exit 4", run_in_background: true, description: "Fail" });
  let notice;
  await waitUntil("the end notice", async () => {
    const next = await call("bash", { command: "true" });
    notice = texts(next).find((text) => text.startsWith("[task "));
    return notice !== undefined;
  });
  check(/^\[task t\d+ "fail" exited 4 after \d+ms: task_output \{"task":"t\d+"\} shows its output\]$/.test(notice), notice);
  const after = await call("bash", { command: "true" });
  check(!texts(after).some((text) => text.startsWith("[task ")), after);
  step("a task's end is told once, in the next result");

  await exactness(call);

  // Progress: live lines, and a client timeout reset by them keeps a call longer than itself.
  const progress = [];
  const long = await client.callTool(
    { name: "bash", arguments: { command: "for i in 1 2 3; do echo step $i; sleep 0.8; done" } },
    undefined,
    { onprogress: (report) => progress.push(report.message), timeout: 1500, resetTimeoutOnProgress: true },
  );
  check(texts(long)[0] === "step 1\nstep 2\nstep 3\n", long);
  check(progress.length >= 1 && progress.every((line) => /^\d+ s: /.test(line)), progress);
  step(`progress reports (${progress.length}) keep a 2.4 s call past a 1.5 s client timeout`);
}

/** The state line of a task_output answer: `[task tN …: STATE · RAN · … next since=N]`. */
function stateOf(result) {
  const notes = texts(result).find((text) => text.includes("next since="));
  check(notes?.endsWith("]\n"), `a notes block ends with a newline: ${show(notes)}`);
  const found = notes.match(/^\[task (t\d+)[^\n]*?: (.*) · [\d.]+ s(?: · .*)? · next since=(\d+)\]$/m);
  check(found, `no state line: ${show(notes)}`);
  return { task: found[1], state: found[2], notes };
}

/** Items 1 to 4 of the agent's shell, exact: background starts, capped results, prompts, folders. */
async function exactness(call) {
  for (let round = 0; round < 5; round += 1) {
    const started = await call("bash", { command: "echo fast; exit 3", run_in_background: true });
    const marker = texts(started)[0].match(/^\n\n\[Detached to background task (t\d+): started in the background\]$/);
    check(!started.isError && marker, `not the marker alone: ${show(texts(started))}`);
    const read = await call("task_output", { task: marker[1], wait_ms: 10_000 });
    check(texts(read)[0] === "fast\n" && stateOf(read).state === "exited with code 3", read);
  }
  step("run_in_background: the result is the marker alone, every output line the task's");

  const capped = await call("bash", {
    command: "seq 1 50000; echo flood-done; sleep 600",
    detach_on: "^flood-done$",
  });
  const text = texts(capped)[0];
  const cap = text.split("\n").find((line) => line.startsWith("[... "));
  check(cap?.includes("the task's output is read on from them"), cap);
  const head = text.split("\n[... ")[0].split("\n");
  const task = text.match(/background task (t\d+)/)[1];
  const first = await call("task_output", { task });
  const firstLine = texts(first)[0].split("\n")[0];
  check(Number(firstLine) === Number(head[head.length - 1]) + 1, `read on from ${firstLine}`);
  await call("task_kill", { task });
  step(`the first task_output after a capped result starts at the omitted line ${firstLine}`);

  const asking = await call("bash", {
    command: 'sleep 0.3; read -p "Proceed? [Y/n] " a; echo "got $a"',
    run_in_background: true,
  });
  const asker = texts(asking)[0].match(DETACHED)[1];
  const began = Date.now();
  const waited = await call("task_output", { task: asker, wait_ms: 8000 });
  const waitedMs = Date.now() - began;
  check(stateOf(waited).state === 'running, waiting for input: "Proceed? [Y/n]"', waited);
  check(waitedMs < 6000, `the wait took ${waitedMs} ms`);
  await call("task_kill", { task: asker });
  step(`a task_output wait ends at a prompt after ${waitedMs} ms`);

  const folder = mkdtempSync(join(tmpdir(), "oino-e2e-cwd-"));
  try {
    const moved = await call("bash", { command: `cd '${folder}'` });
    check(texts(moved).at(-1).endsWith(`[cwd: ${folder}]\n`), moved);
    const here = await call("bash", { command: "pwd" });
    check(texts(here)[0] === `${folder}\n`, here);
    await call("bash", { command: "cd /" });
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
  step("a cd carries over to the next call, and the result says where");
}

main().catch((error) => {
  console.error(`mcp e2e (TypeScript SDK): FAILED: ${error.message}`);
  process.exit(1);
});
