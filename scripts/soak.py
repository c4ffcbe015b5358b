#!/usr/bin/env python3
"""A bounded soak of the oino server: calls churning with floods, detached at random moments,
killed, and abandoned by their clients, for a number of minutes.

Prints lines lost, repeated and corrupted (each must be 0), processes left over (0), and how the
server's descriptors and memory moved. Exits non-zero when anything was lost or left over.
Run by scripts/soak (which builds oino first)."""

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

OINO = os.environ["OINO"]
MINUTES = float(os.environ.get("MINUTES", "2"))
SEED = int(os.environ.get("SEED", str(int(time.time()))))
random.seed(SEED)

work = tempfile.mkdtemp(prefix="oino-soak-")
env = dict(os.environ)
env["OINO_SOCKET"] = os.path.join(work, "sock", "soak.sock")
env["XDG_STATE_HOME"] = os.path.join(work, "state")
# Every process of the soak carries this, so that leftovers can be found.
mark = f"soak-{os.getpid()}-{SEED}"
env["OINO_SOAK_MARK"] = mark

colorful = os.path.join(work, "colorful.txt")
with open(colorful, "w", encoding="utf-8") as out:
    for n in range(200_000):
        out.write(f"\x1b[3{n % 8}m{n} ж€😀\x1b[0m\n")
expected_colorful = [f"{n} ж€😀" for n in range(200_000)]


def oino(*args, timeout=120, **kwargs):
    return subprocess.run(
        [OINO, *args], env=env, capture_output=True, text=True, timeout=timeout, **kwargs
    )


def server_pid():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                args = cmdline.read().split(b"\0")
        except OSError:
            continue
        if len(args) > 1 and args[1] == b"server" and env["OINO_SOCKET"].encode() in args:
            return int(pid)
    return None


def marked_processes():
    found = []
    needle = f"OINO_SOAK_MARK={mark}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if needle in environ.read().split(b"\0"):
                    with open(f"/proc/{pid}/stat") as stat:
                        if stat.read().rsplit(")", 1)[1].split()[0] != "Z":
                            found.append(int(pid))
        except OSError:
            continue
    return found


def server_sample(pid):
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/status") as status:
            rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        return fds, rss
    except (OSError, StopIteration):
        return None


counts = {"lost": 0, "repeated": 0, "corrupted": 0, "lines": 0, "iterations": 0}
seen = {"detach": 0, "kill": 0, "abandon": 0}


def check_lines(got, expected, what):
    expected_set = set(expected)
    lines = got.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    corrupted = [line for line in lines if line not in expected_set]
    repeated = len(lines) - len(set(lines))
    lost = len(expected_set - set(lines))
    counts["lines"] += len(lines)
    if corrupted or repeated or lost or lines != expected:
        print(f"  {what}: {lost} lost, {repeated} repeated, {len(corrupted)} corrupted "
              f"(first: {corrupted[:2]!r})", file=sys.stderr)
    counts["lost"] += lost
    counts["repeated"] += repeated
    counts["corrupted"] += len(corrupted)


def detach_at_random(n):
    name = f"flood-{n}"
    delay = random.choice(["0.01", "0.03", "0.05", "0.1", "0.2", "0.4"])
    ran = oino("run", "--max-bytes", "100000000", "--detach-after", delay, "--name", name,
               "--", f"cat {colorful}")
    text = ran.stdout
    marker = "\n\n[Detached to background task "
    if marker in text:
        before = text[: text.index(marker)]
        rest = oino("logs", "-f", name).stdout
        check_lines(before + rest, expected_colorful, f"detached after {delay} s")
    else:
        check_lines(text, expected_colorful, "ended before its detach")
    seen["detach"] += 1


def kill_at_random(n):
    name = f"killed-{n}"
    oino("run", "--detach-after", "0.01", "--name", name, "--",
         "yes 0123456789 | head -c 200000000 & sleep 600 & wait")
    time.sleep(random.uniform(0, 0.5))
    oino("kill", name)
    state = json.loads(oino("ls", "--json").stdout)
    entry = next(entry for entry in state if entry.get("name") == name)
    if entry["state"] == "running":
        print(f"  {name} still runs after its kill", file=sys.stderr)
        counts["lost"] += 1
    seen["kill"] += 1


def abandon_at_random(n):
    waiter = subprocess.Popen([OINO, "run", "--", f"echo abandoned {n}; sleep 600"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(random.uniform(0.05, 0.4))
    waiter.send_signal(random.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT]))
    waiter.wait()
    seen["abandon"] += 1


deadline = time.time() + MINUTES * 60
samples = []
oino("run", "--", "true")
pid = server_pid()
if pid is None:
    sys.exit("no server started")
samples.append(server_sample(pid))
n = 0
while time.time() < deadline:
    n += 1
    random.choice([detach_at_random, detach_at_random, kill_at_random, abandon_at_random])(n)
    counts["iterations"] += 1
    if n % 5 == 0:
        sample = server_sample(pid)
        if sample:
            samples.append(sample)

# Every call and task of the soak ends by itself, was killed, or was abandoned by its client
# (which ends it): once they have had the time, nothing may still run.
still_running = []
settle_deadline = time.time() + 30
while time.time() < settle_deadline:
    still_running = [entry["id"] for entry in json.loads(oino("ls", "--json").stdout)
                     if entry["state"] == "running"]
    if not still_running:
        break
    time.sleep(0.2)
if still_running:
    print(f"  still running: {still_running}", file=sys.stderr)
samples.append(server_sample(pid))
oino("kill-server")
leftover_deadline = time.time() + 10
while marked_processes() and time.time() < leftover_deadline:
    time.sleep(0.1)
leftovers = marked_processes() + still_running

samples = [sample for sample in samples if sample]
fds = [sample[0] for sample in samples]
rss = [sample[1] for sample in samples]
print(f"soak: {MINUTES} min, seed {SEED}, {counts['iterations']} rounds "
      f"({seen['detach']} floods detached, {seen['kill']} kills, {seen['abandon']} abandoned)")
print(f"  lines checked {counts['lines']}: lost {counts['lost']}, repeated {counts['repeated']}, "
      f"corrupted {counts['corrupted']}")
print(f"  processes left over: {len(leftovers)}")
print(f"  server descriptors: first {fds[0]}, last {fds[-1]}, most {max(fds)}")
print(f"  server memory (RSS): first {rss[0] // 1024} MiB, last {rss[-1] // 1024} MiB, "
      f"most {max(rss) // 1024} MiB")
failed = counts["lost"] or counts["repeated"] or counts["corrupted"] or leftovers
sys.exit(1 if failed else 0)
