"""End to end: the official MCP Python SDK over the real `oino mcp`, checking that an agent gets
exactly what the tools' words promise: background starts that are tasks from their first byte,
reads that skip nothing, waits that see prompts, a folder that persists, pages that end at line
ends, a bounded task list, run times, and the small promises (errors, schema, marker). Then a
scenario: an agent's day.

Usage: python mcp_e2e_exact.py OINO_BINARY SOCKET
Checks each step and exits non-zero with the reason at the first that fails.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_e2e_support import check, step, texts

OINO, SOCKET = sys.argv[1], sys.argv[2]
DEADLINE_S = 30
BACKGROUND = "\n\n[Detached to background task {}: started in the background]"
STATE = re.compile(r"^\[task (t\d+)[^\]\n]*?: (.*) · ([\d.]+ s|\d+m\d+s|\d+h\d+m)(?: · .*)? · next since=(\d+)\]$", re.M)
END_NOTICE = re.compile(r'^\[task t\d+ ".*" .* task_output \{"task":"t\d+"\} shows its output\]$')


def page(result):
    """A task_output answer: its output, its notes block, and any end notices after them."""
    items = texts(result)
    notices = [item for item in items if END_NOTICE.match(item.strip())]
    items = [item for item in items if item not in notices]
    check(1 <= len(items) <= 2, items)
    notes = items[-1]
    check(notes.startswith("[") and notes.endswith("]\n"), f"notes block: {notes!r}")
    state = STATE.search(notes)
    check(state, f"no state line in {notes!r}")
    return (items[0] if len(items) == 2 else ""), notes, state, notices


class Agent:
    def __init__(self, session):
        self.session = session
        self.logged = []

    async def call(self, tool, arguments):
        return await self.session.call_tool(tool, arguments)

    async def background(self, command, **more):
        started = await self.call("bash", {"command": command, "run_in_background": True, **more})
        text = texts(started)[0]
        found = re.fullmatch(r"\n\n\[Detached to background task (t\d+): started in the background\]", text)
        check(not started.is_error and found, f"not the marker alone: {text!r}")
        return found.group(1)

    async def read_all(self, task, until, max_bytes=None):
        """Pages of a task's output until `until(text so far, notes)`; each page checked."""
        read, pages = "", 0
        deadline = time.monotonic() + DEADLINE_S
        while True:
            arguments = {"task": task, "wait_ms": 2000}
            if max_bytes:
                arguments["max_bytes"] = max_bytes
            text, notes, state, _ = page(await self.call("task_output", arguments))
            pages += 1
            # A page ends at a line's end, but the last one of a task that ended.
            check(text == "" or text.endswith("\n") or "more to read" not in notes,
                  f"page {pages} ends inside a line: {text[-40:]!r}")
            read += text
            if until(read, notes):
                return read, pages
            check(time.monotonic() < deadline, f"reading {task} never ended: {notes}")


async def each_item(agent, work):
    call = agent.call

    # 1. A background start is a task from its first byte, every time.
    for _ in range(10):
        task = await agent.background("echo fast; exit 3")
        text, notes, state, _ = page(await call("task_output", {"task": task, "wait_ms": 10000}))
        check(text == "fast\n" and "exited with code 3" in notes, (text, notes))
    flood = await agent.background("seq 1 100000")
    read, pages = await agent.read_all(
        flood, lambda read, notes: "exited with code 0" in notes and "more to read" not in notes,
        max_bytes=20000)
    check(read == "".join(f"{n}\n" for n in range(1, 100001)), "the flood lost or repeated lines")
    step(f"run_in_background: the marker alone, all output the task's ({pages} pages, each ending "
         "at a line's end)")

    # 2. After a capped, detached result, the first read starts at what it left out.
    capped = await call("bash", {"command": "seq 1 100000; echo flood-done; sleep 600",
                                 "detach_on": "^flood-done$"})
    text = texts(capped)[0]
    cap = next(line for line in text.splitlines() if line.startswith("[... "))
    check("the task's output is read on from them" in cap, cap)
    head = text.split("\n[... ")[0].splitlines()
    task = re.search(r"background task (t\d+)", text).group(1)
    read, _ = await agent.read_all(task, lambda read, notes: read.endswith("flood-done\n"))
    check(head + read.splitlines() == [str(n) for n in range(1, 100001)] + ["flood-done"],
          "the capped result's omitted part was not read first, or lines repeat")
    await call("task_kill", {"task": task})
    step("the first task_output after a capped result reads what it left out, then on")

    # 3. A wait ends when the task waits for input.
    task = await agent.background('sleep 0.3; read -p "Overwrite? [Y/n] " a; echo "got $a"')
    began = time.monotonic()
    text, notes, state, _ = page(await call("task_output", {"task": task, "wait_ms": 8000}))
    waited = time.monotonic() - began
    check(state.group(2) == 'running, waiting for input: "Overwrite? [Y/n]"', notes)
    check(waited < 6, f"the wait took {waited:.1f} s")
    check(any(f"task {task}" in line and "waiting for input: Overwrite? [Y/n]" in line
              for line in agent.logged), agent.logged)
    await call("task_input", {"task": task, "text": "y"})
    answer = await call("task_output", {"task": task, "wait_ms": 10000, "pattern": "^got y$"})
    check('[matched /^got y$/: "got y"]' in texts(answer)[-1], texts(answer))
    step(f"task_output's wait ends at a prompt after {waited:.1f} s, with a log message")

    # 4. The shell's folder carries over; variables do not.
    sub = os.path.join(work, "pkg")
    os.makedirs(sub)
    moved = await call("bash", {"command": "cd pkg && export MODE=fast"})
    check(texts(moved)[-1].endswith(f"[cwd: {sub}]\n"), texts(moved))
    here = await call("bash", {"command": "pwd; echo ${MODE:-unset}"})
    check(texts(here)[0] == f"{sub}\nunset\n", texts(here))
    one_off = await call("bash", {"command": "pwd", "cwd": ".."})
    check(texts(one_off)[0] == f"{work}\n", texts(one_off))
    back = await call("bash", {"command": "pwd"})
    check(texts(back)[0] == f"{sub}\n", texts(back))
    listed = texts(await call("task_list", {}))[0]
    check(f"in {work} · " in listed, listed)
    step("a cd carries over to the next call ([cwd: …]); cwd is for one call; tasks show where "
         "they run")

    # 6. Notes end with a newline; an end notice never contradicts the state line beside it.
    task = await agent.background("sleep 0.4; echo bye")
    deadline = time.monotonic() + DEADLINE_S
    while True:
        text, notes, state, notices = page(await call("task_output", {"task": task, "wait_ms": 100}))
        if state.group(2) == "running":
            check(not any(f"task {task} " in notice for notice in notices), (notes, notices))
        else:
            break
        check(time.monotonic() < deadline, notes)
    step("notes end with a newline; no end notice beside a state line that says running")

    # 8. Every result says how long it ran.
    ok = await call("bash", {"command": "sleep 0.2"})
    check(re.fullmatch(r"\[ran 0\.[2-9] s\]\n", texts(ok)[1]), texts(ok))
    failed = await call("bash", {"command": "echo no; exit 1"})
    check(failed.is_error and texts(failed)[0] == "no\n", texts(failed))
    check(re.fullmatch(r"\[exit code 1 · \d+\.\d s\]\n", texts(failed)[1]), texts(failed))
    step("results say how long the call ran: [ran 0.2 s], [exit code 1 · 0.0 s]")

    # 9. The small promises.
    tools = {tool.name: tool for tool in (await agent.session.list_tools()).tools}
    check(tools["bash"].input_schema["properties"]["timeout_ms"]["minimum"] == 1, tools["bash"])
    check(tools["task_output"].input_schema["properties"]["max_bytes"]["minimum"] == 1,
          tools["task_output"])
    late = await call("bash", {"command": "echo first; sleep 600", "detach_after_ms": 300})
    check(re.fullmatch(r"first\n\n\[Detached to background task t\d+: still running after 0\.3 s\]",
                       texts(late)[0]), texts(late)[0])
    task = re.search(r"task (t\d+)", texts(late)[0]).group(1)
    past = await call("task_output", {"task": task, "since": 10**9})
    check(past.is_error and re.search(r"at \d+ now: pass since=\d+", texts(past)[0]), texts(past))
    await call("task_kill", {"task": task})
    step("schemas say minimum 1; one blank line before the marker; a since past the end is an "
         "error giving the end")


def tools_call_without_params():
    """A raw client: tools/call with no params is -32602, naming params.name."""
    bridge = subprocess.Popen([OINO, "mcp", "--socket", SOCKET], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        def send(message):
            bridge.stdin.write(json.dumps(message) + "\n")
            bridge.stdin.flush()

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        check(json.loads(bridge.stdout.readline())["id"] == 1, "no initialize answer")
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call"})
        answer = json.loads(bridge.stdout.readline())
        check(answer["id"] == 2 and answer["error"]["code"] == -32602, answer)
        check("params.name" in answer["error"]["message"], answer)
    finally:
        bridge.stdin.close()
        bridge.wait(timeout=DEADLINE_S)
    step("tools/call without params is -32602, naming params.name")


async def a_day(agent, work):
    """An agent's day: a dev server waited for, tests run in a package, a prompt answered while
    waiting, a long log read page by page, the task list."""
    call = agent.call
    server = await agent.background(
        "echo compiling; sleep 0.5; echo 'ready on http://localhost:5173'; sleep 600",
        description="Start the dev server")
    ready = await call("task_output", {"task": server, "pattern": "ready on", "wait_ms": 20000})
    check("[matched /ready on/" in texts(ready)[-1], texts(ready))

    package = os.path.join(work, "day", "packages", "web")
    os.makedirs(package)
    with open(os.path.join(package, "test.sh"), "w") as script:
        script.write('echo "testing $(basename "$PWD")"; echo "3 passed"\n')
    await call("bash", {"command": f"cd {work}/day"})
    await call("bash", {"command": "cd packages/web"})
    tested = await call("bash", {"command": "bash test.sh"})
    check(texts(tested)[0] == "testing web\n3 passed\n", texts(tested))

    deploy = await agent.background('sleep 0.2; read -p "Deploy to staging? [Y/n] " a; '
                                    'echo "deploying ($a)"')
    asked = await call("task_output", {"task": deploy, "wait_ms": 20000, "pattern": "^deploying"})
    _, notes, state, _ = page(asked)
    check(state.group(2) == 'running, waiting for input: "Deploy to staging? [Y/n]"', notes)
    await call("task_input", {"task": deploy, "text": "Y"})
    done = await call("task_output", {"task": deploy, "wait_ms": 20000, "pattern": "^deploying"})
    check('"deploying (Y)"' in texts(done)[-1], texts(done))

    log = await agent.background("seq 1 100000 | sed 's/^/request served in 3 ms, line /'")
    read, pages = await agent.read_all(
        log, lambda read, notes: "exited with code 0" in notes and "more to read" not in notes)
    lines = read.splitlines()
    check(lines == [f"request served in 3 ms, line {n}" for n in range(1, 100001)],
          "the log lost or repeated lines")

    listed = texts(await call("task_list", {}))[0]
    check(len(listed) <= 30000, len(listed))
    check(f'{server} "start-the-dev-server": running' in listed, listed)
    await call("task_kill", {"task": server})
    step(f"an agent's day: dev server ready, tests in a package by cd, a prompt answered while "
         f"waiting, 100,000 log lines in {pages} pages each once, the task list")


async def bounded_list(agent):
    """7. task_list is bounded, and scoped to this bridge's tasks unless all: true."""
    call = agent.call
    filler = "true # " + "x" * 150
    for _ in range(250):
        await agent.background(filler)
    listed = texts(await call("task_list", {}))[0]
    check(len(listed) <= 30000 + 200, f"task_list answered {len(listed)} characters")
    check(re.search(r"\[\d+ more not shown", listed), listed[-300:])
    # A task another client started is not this bridge's.
    subprocess.run([OINO, "run", "--socket", SOCKET, "--detach-after", "0.1", "--", "sleep 60"],
                   check=True, capture_output=True)
    mine = texts(await call("task_list", {}))[0]
    check("$ sleep 60" not in mine and "more tasks of the server" in mine, mine[-300:])
    every = texts(await call("task_list", {"all": True}))[0]
    check("$ sleep 60" in every.split("\n[")[0] or "sleep 60" in every, every[:300])
    step("task_list is capped with a line saying how many more, and lists this bridge's tasks "
         "unless all: true")


async def main():
    work = os.path.realpath(tempfile.mkdtemp())
    params = StdioServerParameters(command=OINO, args=["mcp", "--socket", SOCKET],
                                   env=dict(os.environ), cwd=work)
    agent = None

    async def logged(params):
        agent.logged.append(str(params.data))

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, logging_callback=logged) as session:
            agent = Agent(session)
            await session.initialize()
            await each_item(agent, work)
            tools_call_without_params()
            await a_day(agent, work)
            await bounded_list(agent)
    print("mcp e2e (exact): all steps passed")


asyncio.run(main())
