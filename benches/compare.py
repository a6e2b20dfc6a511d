#!/usr/bin/env python3
"""Every figure of the lean-and-fast table, side by side with its yardstick, in one run.

Run through `benches/compare.sh`, which builds the release binary, installs the peers (the
Python MCP SDK and fakellm in .ci/venv) and runs the criterion benches whose estimates this
script reads. Figures it cannot take (a peer missing) are printed as `n/a` with the reason.
"""

import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
TACKLE = pathlib.Path(os.environ.get("TACKLE_BIN", ROOT / "target/release/tackle"))
CRITERION = pathlib.Path(os.environ.get("CRITERION_DIR", ROOT / "target/criterion"))
VENV_BIN = ROOT / ".ci/venv/bin"

# Yardsticks as issue #21 records them (ZeptoClaw measured on this machine class) and the goals.
ROWS = []


def row(figure, now, goal, yardstick):
    ROWS.append((figure, now, goal, yardstick))
    print(f"  {figure}: {now}", file=sys.stderr, flush=True)


def sandbox():
    """A config and workspace of their own, so no user state is read or written."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="tackle-compare-"))
    (d / "ws").mkdir()
    cfg = d / "config.yaml"
    cfg.write_text(f"state_dir: {d / 'state'}\n")
    return d, cfg


def clean_env(d):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(d), "LANG": "C.UTF-8"}
    return env


def binary_size():
    size = TACKLE.stat().st_size
    row("release binary, default features", f"{size / 1e6:.1f} MB", "≤ 8 MB", "ZeptoClaw 11.1 MB")


GNU_TIME = pathlib.Path("/usr/bin/time")


def max_rss_mib(args, d):
    """The child's own peak RSS. Not wait4's ru_maxrss of a child this script spawns: Linux
    carries the spawner's high-water mark across exec (and subprocess spawns by vfork), so that
    figure is this Python's ~20 MB, whatever the child uses. GNU time forks from its own small
    process and reports the exec'd program alone."""
    if not GNU_TIME.exists():
        return None
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run([str(GNU_TIME), "-f", "%M", "-o", out.name, *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env(d))
        return int(out.read().split()[-1]) / 1024  # KiB → MiB


def tools_list(runs=31):
    d, cfg = sandbox()
    args = [str(TACKLE), "--config", str(cfg), "--workspace", str(d / "ws"), "tools", "list"]
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        status = subprocess.call(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 env=clean_env(d))
        walls.append(time.perf_counter() - start)
        if status != 0:
            raise RuntimeError(f"tools list exited with status {status}")
    rss = [max_rss_mib(args, d) for _ in range(5)]
    rss_text = "n/a (needs GNU time, /usr/bin/time)" if None in rss else f"{max(rss):.1f} MB"
    row("`tackle tools list` wall / max RSS",
        f"{statistics.median(walls) * 1e3:.1f} ms / {rss_text} (median of {runs})",
        "≤ 5 ms / ≤ 8 MB", "ZeptoClaw 4 ms / 8.9 MB")


RAW_ECHO = r'''
import json, sys
# The floor: an MCP server over stdio that does nothing but answer.
out = sys.stdout
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg.get("method")
    if m == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "echo", "version": "0"}}
    elif m == "tools/list":
        result = {"tools": [{"name": "calculate", "inputSchema": {"type": "object"}}]}
    elif m == "tools/call":
        result = {"content": [{"type": "text", "text": "2"}], "isError": False}
    else:
        result = {}
    out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    out.flush()
'''

CLIENT = r'''
import asyncio, json, statistics, sys, time
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main(command, args, calls):
    params = StdioServerParameters(command=command, args=args, env=json.loads(sys.argv[4]))
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            for _ in range(20):
                await s.call_tool("calculate", {"expression": "1+1"})
            times = []
            for _ in range(calls):
                t = time.perf_counter()
                res = await s.call_tool("calculate", {"expression": "1+1"})
                times.append(time.perf_counter() - t)
                if getattr(res, "is_error", None) or getattr(res, "isError", None):
                    raise SystemExit(f"call failed: {res}")
            print(json.dumps({"median": statistics.median(times)}))

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])))
'''


def mcp_round_trip(calls=300, rounds_of=5):
    python = VENV_BIN / "python"
    if not python.exists():
        row("`mcp serve` stdio round trip", "n/a (no .ci/venv: run .ci/mcp-peers.sh)", "≤ 1.3×",
            "raw echo")
        return
    d, cfg = sandbox()
    env = clean_env(d)
    client = d / "client.py"
    client.write_text(CLIENT)
    echo = d / "echo.py"
    echo.write_text(RAW_ECHO)

    def median(command, args):
        out = subprocess.run(
            [str(python), str(client), command, json.dumps(args), str(calls), json.dumps(env)],
            capture_output=True, text=True, check=True, env=env)
        return json.loads(out.stdout)["median"]

    # The two servers take turns, so that a drift in the shared machine's speed hits both;
    # the figure is the median round's ratio, with the range over the rounds.
    rounds = []
    for _ in range(rounds_of):
        tackle = median(str(TACKLE), ["--config", str(cfg), "--workspace", str(d / "ws"), "mcp",
                                      "serve"])
        floor = median(str(python), [str(echo)])
        rounds.append((tackle / floor, tackle, floor))
    rounds.sort()
    ratio, tackle, floor = rounds[len(rounds) // 2]
    row("`mcp serve` stdio round trip, Python SDK client",
        f"{ratio:.2f}× ({tackle * 1e3:.3f} ms vs {floor * 1e3:.3f} ms; "
        f"{rounds[0][0]:.2f}–{rounds[-1][0]:.2f}× over {rounds_of} rounds)", "≤ 1.3×",
        "the raw echo is the floor")


def criterion_median(group_glob):
    hits = sorted(CRITERION.glob(f"{group_glob}/new/estimates.json"))
    if not hits:
        return None
    return json.loads(hits[0].read_text())["median"]["point_estimate"]


def dispatcher_overhead():
    whole = criterion_median("dispatch calculate*")
    bare = criterion_median("calculate evaluation alone")
    if whole is None or bare is None:
        row("dispatcher overhead", "n/a (run `cargo bench --bench dispatch`)", "≤ 2 µs", "")
        return
    row("dispatcher overhead (calculate through dispatch − bare)",
        f"{(whole - bare) / 1e3:.2f} µs ({whole / 1e3:.2f} − {bare / 1e3:.2f})", "≤ 2 µs", "")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FAKELLM_RULES = """version: 1
rules:
  - name: answer
    when: {tool_result_contains: "C-done"}
    respond: {content: "all three finished"}
  - name: ask
    when: {messages_contain: "sleepers"}
    respond:
      tool_calls:
        - {name: shell, arguments: {command: "sleep 1; echo A-done"}}
        - {name: shell, arguments: {command: "sleep 1; echo B-done"}}
        - {name: shell, arguments: {command: "sleep 1; echo C-done"}}
"""


def fake_model_seconds(port, stream):
    """How long the fake model itself takes to answer the run's two requests (it pauses 10 ms
    between streamed pieces), timed from here to its last byte: the part of the floor that is
    the model's, not Tackle's."""
    calls = [{"id": f"call_{c}", "type": "function",
              "function": {"name": "shell", "arguments": "{}"}} for c in "ABC"]
    # A conversation of its own (the fake keys them by the first message), as each run has.
    ask = f"sleepers {time.perf_counter_ns()}"
    turns = [
        [{"role": "user", "content": ask}],
        [{"role": "user", "content": ask},
         {"role": "assistant", "content": None, "tool_calls": calls}]
        + [{"role": "tool", "tool_call_id": f"call_{c}", "content": f"{c}-done"} for c in "ABC"],
    ]
    total = 0.0
    for messages in turns:
        body = json.dumps({"model": "fake-model", "stream": stream,
                           "messages": messages}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                         data=body,
                                         headers={"Content-Type": "application/json"})
        start = time.perf_counter()
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()
        total += time.perf_counter() - start
    return total


def concurrent_sleeps(runs=5):
    fakellm = VENV_BIN / "fakellm"
    if not fakellm.exists():
        row("three concurrent 1 s shell calls", "n/a (no fakellm: run .ci/llm-peers.sh)",
            "≤ 1.1 s", "floor 1.0 s")
        return
    d, cfg = sandbox()
    rules = d / "fakellm.yaml"
    rules.write_text(FAKELLM_RULES)
    port = free_port()
    server = subprocess.Popen([str(fakellm), "serve", "--host", "127.0.0.1", "--port", str(port),
                               "--config", str(rules)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_fakellm/stats", timeout=1)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        base = cfg.read_text()
        # Answered whole, the model costs next to nothing and the floor is the sleep itself;
        # streamed (as `tackle run` talks to real backends), the fake's pauses add to it.
        for stream in (False, True):
            cfg.write_text(base + (
                "backends:\n  - name: fake\n    type: openai\n"
                f"    api_base: http://127.0.0.1:{port}/v1\n    api_key: not-secret\n"
                f"    stream: {'true' if stream else 'false'}\n"
                "    models:\n      - name: fake-model\n"))
            model = statistics.median(fake_model_seconds(port, stream) for _ in range(runs))
            walls = []
            for i in range(runs):
                start = time.perf_counter()
                out = subprocess.run([str(TACKLE), "--config", str(cfg), "--workspace",
                                      str(d / "ws"), "run", "-m", f"sleepers {stream} {i}",
                                      "--yes"],
                                     capture_output=True, text=True, env=clean_env(d))
                walls.append(time.perf_counter() - start)
                if out.returncode != 0 or "all three finished" not in out.stdout:
                    raise RuntimeError(f"tackle run failed: {out.stdout}\n{out.stderr}")
            wall = statistics.median(walls)
            floor = 1.0 + model
            how = "streamed" if stream else "answered whole"
            row(f"three concurrent 1 s shell calls, end to end (model {how})",
                f"{wall:.3f} s (median of {runs}): {(wall - floor) * 1e3:.0f} ms over the floor",
                "≤ 1.1 s (≤ 100 ms over the floor)",
                f"floor {floor:.3f} s (1.0 s + the fake model's own {model * 1e3:.0f} ms)")
    finally:
        server.kill()
        server.wait()


def grep_vs_rg():
    ours = criterion_median("grep_50k_files/tackle_grep_tool")
    rg = criterion_median("grep_50k_files/ripgrep_binary")
    if ours is None or rg is None:
        row("grep over 50k files", "n/a (run `cargo bench -p tackle-tools --bench grep` with rg "
            "installed)", "≤ 1.0×", "rg itself")
        return
    row("grep over 50k files", f"{ours / rg:.2f}× ({ours / 1e6:.0f} ms vs rg {rg / 1e6:.0f} ms)",
        "≤ 1.0×", "rg itself")


def main():
    if not TACKLE.exists():
        sys.exit(f"{TACKLE} is missing: cargo build --release")
    print(f"measuring {TACKLE}", file=sys.stderr)
    for measure in (binary_size, tools_list, mcp_round_trip, dispatcher_overhead,
                    concurrent_sleeps, grep_vs_rg):
        try:
            measure()
        except Exception as e:  # one figure failing must not hide the others
            row(measure.__name__, f"n/a ({e})", "", "")
    print(f"\nMeasured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores "
          f"({os.uname().sysname} {os.uname().release}).\n")
    print("| figure | now | goal | yardstick |\n| --- | --- | --- | --- |")
    for r in ROWS:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
