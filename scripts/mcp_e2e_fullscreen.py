"""End to end: the official MCP Python SDK, as an agent would use it, over the real `oino mcp`,
with full-screen programs and editors: a full-screen program that waits for keys returns its
screen's rows and its name, and `git commit` without a message aborts instead of opening vi.

Usage: python mcp_e2e_fullscreen.py OINO_BINARY SOCKET
Checks each step and exits non-zero with the reason at the first that fails.
"""

import asyncio
import os
import re
import shutil
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_e2e_support import check, step, texts

OINO, SOCKET = sys.argv[1], sys.argv[2]
DETACHED = re.compile(r"\n\n\[Detached to background task (t\d+): (.*)\]$")

# Without vim, a full-screen program of a few lines: the alternate screen, rows drawn, keys read
# one at a time in raw mode.
DRAWN = (
    "import sys, termios, tty; "
    "sys.stdout.write('\\x1b[?1049h\\x1b[H\\x1b[2Jfull screen\\r\\n~\\r\\n~\\x1b[1;1H'); "
    "sys.stdout.flush(); tty.setraw(0); sys.stdin.read(1)"
)


def full_screen_program():
    """The command of a full-screen program, and the name it runs under."""
    for editor in ("vim", "vi"):
        if shutil.which(editor):
            return f"{editor} -u NONE -i NONE -N -n notes.txt", editor
    return f'python3 -c "{DRAWN}"', "python3"


async def main():
    # The agent's own editor never reaches its calls.
    env = dict(os.environ, EDITOR="vim", VISUAL="vim", GIT_EDITOR="vim")
    params = StdioServerParameters(command=OINO, args=["mcp", "--socket", SOCKET], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            folder = tempfile.mkdtemp()

            command, program = full_screen_program()
            opened = await session.call_tool("bash", {"command": command, "cwd": folder})
            check(not opened.is_error, opened)
            text = texts(opened)[0]
            found = DETACHED.search(text)
            check(found, f"not detached: {text!r}")
            task, reason = found.groups()
            check(reason == f"{program} (full screen) waits for keys", reason)
            rows = text[: found.start()]
            screen = texts(await session.call_tool("task_screen", {"task": task}))
            # The rows' last newline is the first of the marker's two.
            check(rows + "\n" == screen[0], f"the text is not the screen:\n{rows!r}\n{screen[0]!r}")
            check("alternate screen" in screen[1], screen[1])
            check("\x1b" not in rows and rows.count("~") >= 2, rows)
            killed = await session.call_tool("task_kill", {"task": task})
            check(not killed.is_error, killed)
            step(f"{program}, full screen, returns its screen's rows and its name")

            repo = tempfile.mkdtemp()
            committed = await session.call_tool(
                "bash",
                {
                    "command": "git init -q && echo a > a && git add a && "
                    "git -c user.name=oino -c user.email=oino@example.com commit",
                    "cwd": repo,
                },
            )
            text = "".join(texts(committed))
            check(committed.is_error, committed)
            check("Aborting commit due to empty commit message" in text, text)
            check("Detached to background task" not in text, text)
            step("git commit without a message aborts instead of opening an editor")
    print("mcp e2e fullscreen: all steps passed")


asyncio.run(main())
