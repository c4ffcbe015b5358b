"""End to end: the official MCP Python SDK, as an agent would use it, over the real `oino mcp`.

Usage: python mcp_e2e.py OINO_BINARY SOCKET
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
MARKER = "\n\n[Detached to background task t1: detached by `oino detach`]"
DETACHED = re.compile(r"^\[Detached to background task (t\d+): (.*)\]$", re.M)


def oino(*args):
    return subprocess.run(
        [OINO, *args, "--socket", SOCKET], capture_output=True, text=True, check=True
    ).stdout


def entries():
    return json.loads(oino("ls", "--json"))


def processes_of(call_id):
    """Live processes whose environment carries OINO_CALL_ID=call_id."""
    found = []
    needle = f"OINO_CALL_ID={call_id}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if needle in environ.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            pass
    return found


async def wait_until(what, condition):
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


END_NOTICE = re.compile(r'\[task t\d+ ".*" .* task_output \{"task":"t\d+"\} shows its output\]')


def read_notes(result):
    """A task_output result's text items and its notes line, end notices (one comes in
    whichever result follows a task's end, this one included) set apart."""
    items = [item for item in texts(result) if not END_NOTICE.fullmatch(item.strip())]
    return items[:-1], items[-1]


async def main():
    params = StdioServerParameters(
        command=OINO, args=["mcp", "--socket", SOCKET], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "oino", init.server_info)
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            check(
                set(tools) == {"bash", "task_output", "task_screen", "task_list", "task_kill", "task_input"},
                tools.keys(),
            )
            check("command" in tools["bash"].input_schema["required"], tools["bash"])
            step("initialize and list the tools")

            quick = await session.call_tool("bash", {"command": "echo hello"})
            check(not quick.is_error and texts(quick)[0] == "hello\n", quick)
            check(re.fullmatch(r"\[ran \d+\.\d s\]\n", texts(quick)[1]), quick)
            failed = await session.call_tool("bash", {"command": "exit 4"})
            check(failed.is_error, failed)
            step("bash returns text, and isError for a non-zero exit")

            go = tempfile.mkdtemp()
            command = (
                'echo begin; i=0; while [ ! -e GO ]; do i=$((i+1)); echo "n $i"; sleep 0.02; '
                'done; echo ready; echo after; exit 3'
            )
            waiting = asyncio.create_task(
                session.call_tool("bash", {"command": command, "cwd": go})
            )
            call_id = None

            def listed():
                nonlocal call_id
                for entry in entries():
                    if entry["command"] == command and entry["bytes"] > 0:
                        call_id = entry["id"]
                return call_id is not None

            await wait_until("the call to be listed", listed)
            oino("detach", call_id, "--name", "counter")
            result = await asyncio.wait_for(waiting, DEADLINE_S)
            check(not result.is_error, result)
            before = texts(result)[0]
            check(before.endswith(MARKER), f"no exact marker: {before!r}")
            before = before[: -len(MARKER)]
            step("a call detached from outside returns its output so far and the marker")

            open(os.path.join(go, "GO"), "w").close()
            ready = await session.call_tool(
                "task_output", {"task": "counter", "pattern": "^ready$", "wait_ms": 30000}
            )
            body, notes = read_notes(ready)
            check('[matched /^ready$/: "ready"]' in notes, notes)
            since = int(re.search(r"next since=(\d+)", notes).group(1))
            rest = "".join(body)
            while True:
                read_on = await session.call_tool(
                    "task_output", {"task": "t1", "since": since, "wait_ms": 30000}
                )
                body, notes = read_notes(read_on)
                rest += "".join(body)
                since = int(re.search(r"next since=(\d+)", notes).group(1))
                if "exited with code 3" in notes and "more to read" not in notes:
                    break
            # The marker took the text's last newline: its last line is whole.
            lines = (before + "\n" + rest).splitlines()
            count = len(lines) - 3
            expected = ["begin", *[f"n {n}" for n in range(1, count + 1)], "ready", "after"]
            check(lines == expected, f"lost or repeated output: {lines}")
            step("task_output waits for a pattern, reads the rest and reports the exit")

            started = await session.call_tool(
                "bash", {"command": "sleep 600 & sleep 600", "run_in_background": True}
            )
            marker = "[Detached to background task t2: started in the background]"
            check(marker in texts(started)[0], started)
            task = next(entry for entry in entries() if entry["task_id"] == "t2")
            await wait_until("the task's processes", lambda: len(processes_of(task["id"])) >= 2)
            killed = await session.call_tool("task_kill", {"task": "t2"})
            check(not killed.is_error and "killed by signal" in texts(killed)[0], killed)
            await wait_until("nothing of the task left", lambda: not processes_of(task["id"]))
            step("task_kill ends a task and everything it started")

            bad = await session.call_tool("task_output", {"task": "t1", "pattern": "("})
            check(bad.is_error and "regular expression" in texts(bad)[0], bad)
            bad = await session.call_tool("bash", {"cmd": "true"})
            check(bad.is_error and "unknown field `cmd`" in texts(bad)[0], bad)
            step("bad arguments are tool errors")

            asked = await session.call_tool(
                "bash", {"command": "python3 -c 'print(\"hi\", input(\"name: \"))'"}
            )
            found = DETACHED.search(texts(asked)[0])
            check(found and found.group(2) == "waiting for input: name:", asked)
            await session.call_tool("task_input", {"task": found.group(1), "text": "Ada"})
            answer = await session.call_tool(
                "task_output", {"task": found.group(1), "wait_ms": 10000, "pattern": "^hi Ada$"}
            )
            check('[matched /^hi Ada$/: "hi Ada"]' in "".join(texts(answer)), answer)
            step("a call waiting for input returns its prompt; task_input answers it")

            dev = await session.call_tool(
                "bash",
                {"command": "echo vite; echo '  Local: http://localhost:5173/'; sleep 60",
                 "detach_on": r"Local:\s+http"},
            )
            found = DETACHED.search(texts(dev)[0])
            check(found and found.group(2).startswith("matched /Local:"), dev)
            check(texts(dev)[0].startswith("vite\n  Local: http://localhost:5173/\n"), dev)
            step("detach_on returns at the ready line with the output so far")

            await session.call_tool(
                "bash",
                {"command": "python3 -q", "run_in_background": True, "description": "REPL"},
            )
            screen = None

            async def shows(text):
                nonlocal screen
                screen = await session.call_tool("task_screen", {"task": "repl"})
                return text in texts(screen)[0] if texts(screen) else False

            deadline = time.monotonic() + DEADLINE_S
            while not await shows(">>>"):
                check(time.monotonic() < deadline, f"no prompt: {screen}")
                await asyncio.sleep(0.05)
            await session.call_tool("task_input", {"task": "repl", "text": "6*7"})
            while not await shows("42\n>>>"):
                check(time.monotonic() < deadline, f"no answer: {screen}")
                await asyncio.sleep(0.05)
            check(texts(screen)[0] == ">>> 6*7\n42\n>>>\n", screen)
            check("cursor at row 3, column 5" in texts(screen)[1], screen)
            step("task_screen shows a REPL as a person sees it")

            await session.call_tool(
                "bash", {"command": "sleep 0.3; exit 5", "run_in_background": True}
            )
            notice = None
            while notice is None:
                check(time.monotonic() < deadline + DEADLINE_S, "no end notice")
                done = await session.call_tool("bash", {"command": "true"})
                notice = next((t for t in texts(done) if t.startswith("[task ")), None)
            check(re.fullmatch(r'\[task t\d+ "sleep-0.3" exited 5 after \d+ms: '
                               r'task_output \{"task":"t\d+"\} shows its output\]', notice), notice)
            step("a task's end is told once, in a later result")

            samples = []
            for _ in range(100):
                started_at = time.perf_counter()
                done = await session.call_tool("bash", {"command": "true"})
                samples.append(time.perf_counter() - started_at)
                check(not done.is_error, done)
            samples.sort()
            print(
                f"bash `true` through the bridge, this client, 100 calls: "
                f"p50 {samples[49] * 1000:.2f} ms, p99 {samples[98] * 1000:.2f} ms"
            )
    print("mcp e2e: all steps passed")


asyncio.run(main())
