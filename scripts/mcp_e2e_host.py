"""End to end: the official MCP Python SDK over `oino --host far mcp`, whose far side is reached
by a real OpenSSH (the ssh and sshd that scripts/mcp-e2e sets up on the loopback address). The
agent's commands run on the far host; a person there detaches one with `oino --host far detach`
and the agent gets its output so far and the marker, exactly as on one machine.

Usage: python mcp_e2e_host.py OINO_BINARY NEAR_SOCKET FAR_SOCKET   (OINO_CONFIG names the ssh)
Checks each step and exits non-zero with the reason at the first that fails.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_e2e_support import check, step, texts

OINO, NEAR_SOCKET, FAR_SOCKET = sys.argv[1], sys.argv[2], sys.argv[3]
DEADLINE_S = 30
DETACHED = "\n\n[Detached to background task t1: detached by `oino detach`]"


def person(*args):
    """The person's own `oino --host far …`, beside the agent."""
    return subprocess.run(
        [OINO, "--host", "far", *args], capture_output=True, text=True, check=True
    ).stdout


async def wait_until(what, condition):
    deadline = time.monotonic() + DEADLINE_S
    while not await asyncio.to_thread(condition):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


async def main():
    env = dict(os.environ, OINO_SOCKET=NEAR_SOCKET)
    params = StdioServerParameters(command=OINO, args=["--host", "far", "mcp"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            where = await session.call_tool("bash", {"command": 'echo "on $OINO_SOCKET"'})
            check(not where.is_error and texts(where)[0] == f"on {FAR_SOCKET}\n", where)
            step("the agent's command ran on the far host, in its environment")

            command = 'echo begin; i=0; while true; do i=$((i+1)); echo "n $i"; sleep 0.05; done'
            waiting = asyncio.create_task(session.call_tool("bash", {"command": command}))
            call_id = None

            def listed():
                nonlocal call_id
                for entry in json.loads(person("ls", "--json")):
                    if entry["command"] == command and entry["bytes"] > 0:
                        call_id = entry["id"]
                return call_id is not None

            await wait_until("the agent's call to be listed on the far host", listed)
            person("detach", call_id, "--name", "counter")
            result = await asyncio.wait_for(waiting, DEADLINE_S)
            text = texts(result)[0]
            check(not result.is_error and text.startswith("begin\n"), result)
            check(text.endswith(DETACHED), f"no exact marker: {text!r}")
            step("a person's `oino --host far detach` hands the agent its output so far and the "
                 "marker")

            more = await session.call_tool("task_output", {"task": "counter", "wait_ms": 5000})
            check(re.search(r"^n \d+$", texts(more)[0], re.M), more)
            killed = await session.call_tool("task_kill", {"task": "counter"})
            check(not killed.is_error, killed)
            far = json.loads(person("ls", "--json"))
            counter = next(entry for entry in far if entry.get("name") == "counter")
            check(counter["state"] == "killed", counter)
            step("the task reads on and is killed through the same link")

    check(not os.path.exists(NEAR_SOCKET), "a server was started on the near side")
    step("nothing ran on the near side")


asyncio.run(main())
