#!/usr/bin/env python3
"""Every figure of the lean-and-fast table, side by side with its yardstick, in one run.

Run through `benches/compare.sh`, which builds the release binary, installs the peers (the
Python MCP SDK and fakellm in .ci/venv) and runs the criterion benches whose estimates this
script reads. Figures it cannot take (a peer missing) are printed as `n/a` with the reason.

ZeptoClaw, another Rust agent runtime, is measured beside Tackle in the same run when
`ZEPTOCLAW_BIN` names its binary (a build of your own; nothing here downloads or builds it):

    ZEPTOCLAW_BIN=/path/to/zeptoclaw benches/compare.sh --quick

Its columns then hold the binary size, `zeptoclaw tools list` wall time and max RSS, and the
round trip of its `mcp-server` over stdio (the `echo` tool, which does no I/O), each taken
interleaved with Tackle's so a drift in a shared machine's speed hits both, and the ratio
Tackle/ZeptoClaw. ZeptoClaw runs with HOME set to a fresh temporary directory (it needs no
`onboard` or config for these commands, and works offline) and `RUST_LOG=error`, because its
log lines go to stdout, which is the MCP channel. Without the variable its columns say
`n/a (set ZEPTOCLAW_BIN)`. `TACKLE_BIN` points at another Tackle build the same way.
"""

import atexit
import json
import os
import pathlib
import shutil
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
ZEPTOCLAW = pathlib.Path(os.environ["ZEPTOCLAW_BIN"]) if os.environ.get("ZEPTOCLAW_BIN") else None
NO_ZEPTOCLAW = "n/a (set ZEPTOCLAW_BIN)"

# Yardsticks as issue #21 records them (ZeptoClaw measured on this machine class) and the goals.
ROWS = []


def row(figure, now, goal, yardstick, zeptoclaw="—", ratio="—"):
    """One line of the table; figures with no ZeptoClaw counterpart leave its columns at —."""
    ROWS.append((figure, now, zeptoclaw, ratio, goal, yardstick))
    print(f"  {figure}: {now} | ZeptoClaw {zeptoclaw} | {ratio}", file=sys.stderr, flush=True)


def times(ours, theirs):
    return f"{ours / theirs:.2f}×"


def scratch_dir(prefix):
    """A temporary directory, removed when the script ends."""
    d = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def sandbox():
    """A config and workspace of their own, so no user state is read or written."""
    d = scratch_dir("tackle-compare-")
    (d / "ws").mkdir()
    cfg = d / "config.yaml"
    cfg.write_text(f"state_dir: {d / 'state'}\n")
    return d, cfg


def clean_env(d):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(d), "LANG": "C.UTF-8"}
    return env


class Program:
    """How to start one of the measured programs: `tools list`, its MCP server over stdio and
    the cheap tool called there, with the environment and directory it runs in."""

    def __init__(self, name, tools_list, mcp_server, tool, arguments, env, cwd):
        self.name, self.tools_list, self.mcp_server = name, tools_list, mcp_server
        self.tool, self.arguments, self.env, self.cwd = tool, arguments, env, cwd


def tackle_program():
    d, cfg = sandbox()
    common = [str(TACKLE), "--config", str(cfg), "--workspace", str(d / "ws")]
    return Program("Tackle", [*common, "tools", "list"], [*common, "mcp", "serve"], "calculate",
                   {"expression": "1+1"}, clean_env(d), d)


def zeptoclaw_program():
    """ZeptoClaw in a HOME of its own (it keeps its state under ~/.zeptoclaw and reads no
    config there when there is none). Its tracing logs at info level to stdout, which is the MCP
    channel: `RUST_LOG=error` keeps the channel clean (and `tools list` logs nothing either way).
    `echo` is the one tool of its MCP server that does no I/O."""
    d = scratch_dir("zeptoclaw-compare-")
    env = {**clean_env(d), "RUST_LOG": "error"}
    return Program("ZeptoClaw", [str(ZEPTOCLAW), "tools", "list"], [str(ZEPTOCLAW), "mcp-server"],
                   "echo", {"message": "2"}, env, d)


def programs():
    return [tackle_program()] + ([zeptoclaw_program()] if ZEPTOCLAW else [])


def alternate(progs, i):
    """The programs in the order of run i: reversed every other run, so neither always goes
    first (a warm page cache, or a burst of load from the shared machine, favours no one)."""
    return progs if i % 2 == 0 else progs[::-1]


def size_text(size):
    return f"{size / 1e6:.1f} MB ({size:,} bytes)".replace(",", " ")


def binary_size():
    size = TACKLE.stat().st_size
    theirs, ratio = NO_ZEPTOCLAW, NO_ZEPTOCLAW
    if ZEPTOCLAW:
        zsize = ZEPTOCLAW.stat().st_size
        theirs, ratio = size_text(zsize), times(size, zsize)
    row("release binary, default features", size_text(size), "≤ 8 MB", "ZeptoClaw 11.1 MB",
        theirs, ratio)


GNU_TIME = pathlib.Path("/usr/bin/time")


def max_rss_mib(program):
    """The child's own peak RSS. Not wait4's ru_maxrss of a child this script spawns: Linux
    carries the spawner's high-water mark across exec (and subprocess spawns by vfork), so that
    figure is this Python's ~20 MB, whatever the child uses. GNU time forks from its own small
    process and reports the exec'd program alone."""
    if not GNU_TIME.exists():
        return None
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run([str(GNU_TIME), "-f", "%M", "-o", out.name, *program.tools_list],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=program.env, cwd=program.cwd)
        return int(out.read().split()[-1]) / 1024  # KiB → MiB


def tools_list_wall(program):
    start = time.perf_counter()
    status = subprocess.call(program.tools_list, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=program.env, cwd=program.cwd)
    wall = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"{program.name} tools list exited with status {status}")
    return wall


def tools_list(runs=31, rss_runs=5):
    progs = programs()
    walls = {p.name: [] for p in progs}
    rss = {p.name: [] for p in progs}
    for i in range(runs):
        for p in alternate(progs, i):
            walls[p.name].append(tools_list_wall(p))
    for i in range(rss_runs):
        for p in alternate(progs, i):
            rss[p.name].append(max_rss_mib(p))
    wall = {name: statistics.median(w) for name, w in walls.items()}
    peak = {name: None if None in r else max(r) for name, r in rss.items()}

    def wall_text(name):
        return f"{wall[name] * 1e3:.1f} ms"

    def rss_text(name):
        return "n/a (needs GNU time, /usr/bin/time)" if peak[name] is None \
            else f"{peak[name]:.1f} MB"

    theirs = {"wall": NO_ZEPTOCLAW, "rss": NO_ZEPTOCLAW}
    ratio = dict(theirs)
    if ZEPTOCLAW:
        theirs = {"wall": wall_text("ZeptoClaw"), "rss": rss_text("ZeptoClaw")}
        ratio["wall"] = times(wall["Tackle"], wall["ZeptoClaw"])
        ratio["rss"] = "n/a" if None in (peak["Tackle"], peak["ZeptoClaw"]) \
            else times(peak["Tackle"], peak["ZeptoClaw"])
    row(f"`tools list` wall (median of {runs})", wall_text("Tackle"), "≤ 5 ms",
        "ZeptoClaw 4 ms", theirs["wall"], ratio["wall"])
    row(f"`tools list` max RSS (max of {rss_runs})", rss_text("Tackle"), "≤ 8 MB",
        "ZeptoClaw 8.9 MB", theirs["rss"], ratio["rss"])


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

async def main(command, args, calls, env, cwd, tool, arguments):
    params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            for _ in range(20):
                await s.call_tool(tool, arguments)
            times = []
            for _ in range(calls):
                t = time.perf_counter()
                res = await s.call_tool(tool, arguments)
                times.append(time.perf_counter() - t)
                if getattr(res, "is_error", None) or getattr(res, "isError", None):
                    raise SystemExit(f"call failed: {res}")
            print(json.dumps({"median": statistics.median(times)}))

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]),
                 sys.argv[5], sys.argv[6], json.loads(sys.argv[7])))
'''


MCP_FIGURE = "`mcp serve` stdio round trip, Python SDK client"


def mcp_text(ratio, ours, floor, lowest, highest, rounds_of):
    return (f"{ratio:.2f}× ({ours * 1e3:.3f} ms vs {floor * 1e3:.3f} ms; "
            f"{lowest:.2f}–{highest:.2f}× over {rounds_of} rounds)")


def median_round(rounds, key):
    """The median round by `key`, with the lowest and highest value of `key` over the rounds."""
    ranked = sorted(rounds, key=key)
    return ranked[len(ranked) // 2], key(ranked[0]), key(ranked[-1])


def mcp_round_trip(calls=300, rounds_of=5):
    python = VENV_BIN / "python"
    if not python.exists() or subprocess.call([str(python), "-c", "import mcp"],
                                              stderr=subprocess.DEVNULL) != 0:
        row(MCP_FIGURE, "n/a (no MCP SDK in .ci/venv: run .ci/mcp-peers.sh)", "≤ 1.3×",
            "raw echo", NO_ZEPTOCLAW if not ZEPTOCLAW else "n/a (no MCP SDK)", "n/a")
        return
    d, _ = sandbox()
    client = d / "client.py"
    client.write_text(CLIENT)
    echo = d / "echo.py"
    echo.write_text(RAW_ECHO)
    floor_server = Program("raw echo", [], [str(python), str(echo)], "calculate",
                           {"expression": "1+1"}, clean_env(d), d)
    servers = [*programs(), floor_server]

    def median(p):
        out = subprocess.run(
            [str(python), str(client), p.mcp_server[0], json.dumps(p.mcp_server[1:]), str(calls),
             json.dumps(p.env), str(p.cwd), p.tool, json.dumps(p.arguments)],
            capture_output=True, text=True, env=p.env, cwd=p.cwd)
        if out.returncode != 0:
            raise RuntimeError(f"{p.name} over MCP: {out.stderr.strip()[-300:]}")
        return json.loads(out.stdout)["median"]

    # The servers take turns, each round starting with the next one, so that a drift in the
    # shared machine's speed hits all; each figure is the median round's, with the range.
    rounds = []
    for i in range(rounds_of):
        taken = {}
        for p in servers[i % len(servers):] + servers[:i % len(servers)]:
            taken[p.name] = median(p)
        rounds.append(taken)

    def over_floor(name):
        return lambda r: r[name] / r["raw echo"]

    ours, low, high = median_round(rounds, over_floor("Tackle"))
    now = mcp_text(ours["Tackle"] / ours["raw echo"], ours["Tackle"], ours["raw echo"], low, high,
                   rounds_of)
    theirs, ratio = NO_ZEPTOCLAW, NO_ZEPTOCLAW
    if ZEPTOCLAW:
        zr, zlow, zhigh = median_round(rounds, over_floor("ZeptoClaw"))
        theirs = mcp_text(zr["ZeptoClaw"] / zr["raw echo"], zr["ZeptoClaw"], zr["raw echo"],
                          zlow, zhigh, rounds_of)
        both, blow, bhigh = median_round(rounds, lambda r: r["Tackle"] / r["ZeptoClaw"])
        ratio = (f"{both['Tackle'] / both['ZeptoClaw']:.2f}× ({blow:.2f}–{bhigh:.2f}× over "
                 f"{rounds_of} rounds)")
    row(f"{MCP_FIGURE} (Tackle `calculate`; ZeptoClaw `mcp-server`, `echo`), median of {calls} "
        "calls", now, "≤ 1.3×", "the raw echo is the floor", theirs, ratio)


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


def zeptoclaw_version():
    if not ZEPTOCLAW:
        return "ZeptoClaw not measured (set ZEPTOCLAW_BIN)"
    out = subprocess.run([str(ZEPTOCLAW), "--version"], capture_output=True, text=True,
                         env=zeptoclaw_program().env)
    return f"ZeptoClaw: {ZEPTOCLAW} ({out.stdout.strip() or 'version unknown'})"


def load_average():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main():
    if not TACKLE.exists():
        sys.exit(f"{TACKLE} is missing: cargo build --release")
    if ZEPTOCLAW and not os.access(ZEPTOCLAW, os.X_OK):
        sys.exit(f"ZEPTOCLAW_BIN={ZEPTOCLAW} is not an executable file")
    print(f"measuring {TACKLE}" + (f" beside {ZEPTOCLAW}" if ZEPTOCLAW else ""), file=sys.stderr)
    load_before = load_average()
    for measure in (binary_size, tools_list, mcp_round_trip, dispatcher_overhead,
                    concurrent_sleeps, grep_vs_rg):
        try:
            measure()
        except Exception as e:  # one figure failing must not hide the others
            row(measure.__name__, f"n/a ({e})", "", "")
    print(f"\nMeasured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores "
          f"({os.uname().sysname} {os.uname().release}), load average {load_before} before and "
          f"{load_average()} after. Tackle: {TACKLE}. {zeptoclaw_version()}.\n")
    print("| figure | Tackle now | ZeptoClaw | Tackle/ZeptoClaw | goal | yardstick |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for r in ROWS:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
