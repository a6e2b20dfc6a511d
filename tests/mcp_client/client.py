"""An MCP client on the official Python SDK, driven by the tackle-mcp tests and benchmarks.

    python client.py [--url URL] [--token T] [--elicit ANSWER] STEPS [-- CMD [ARG...]]

Without --url the server is CMD, started over stdio (everything after `--` is its argv).

STEPS is a JSON list of steps, run in one session; the results are printed as one JSON list:
    ["list"]                        -> {"tools": [names]}
    ["schemas"]                     -> {"tools": [{"name", "description", "input_schema"}]}
    ["call", NAME, ARGS]            -> {"is_error": bool, "text": str, "structured": obj|null}
    ["bench", NAME, ARGS, N]        -> {"n": N, "median_ms": f, "p99_ms": f, "mean_ms": f}
    ["forms"]                       -> {"messages": [the message of every form asked so far]}
    ["cancelled"]                   -> {"cancelled": how many forms the server cancelled (waits
                                        up to 5 s for the first)}
--elicit ANSWER declares the elicitation capability and answers every form with
{"decision": ANSWER} (`never`: never answers, until the server cancels the request); without it
the client cannot be asked. With --form JSON as well, a form
passed on from one of Tackle's own MCP servers ("… (used by Tackle) asks: …") is answered with
that JSON object instead (or declined with --form decline).
"""

import argparse
import asyncio
import json
import statistics
import sys
import time

from mcp import Client, StdioServerParameters, types


def parse() -> argparse.Namespace:
    argv = sys.argv[1:]
    command = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    p = argparse.ArgumentParser()
    p.add_argument("--url")
    p.add_argument("--token")
    p.add_argument("--elicit")
    p.add_argument("--form")
    p.add_argument("steps")
    args = p.parse_args(argv)
    args.stdio = command
    if not args.url and not command:
        p.error("give --url URL or a stdio command after --")
    return args


FORMS: list[str] = []
CANCELLED: list[str] = []


def make_elicit(answer: str, form: str | None):
    async def elicit(_ctx, params):
        FORMS.append(params.message)
        if answer == "never":
            try:
                await asyncio.Event().wait()
            except BaseException:
                CANCELLED.append(params.message)
                raise
        if form is not None and "(used by Tackle) asks:" in params.message:
            if form == "decline":
                return types.ElicitResult(action="decline")
            return types.ElicitResult(action="accept", content=json.loads(form))
        return types.ElicitResult(action="accept", content={"decision": answer})

    return elicit


def server_of(args: argparse.Namespace):
    if args.stdio:
        return StdioServerParameters(command=args.stdio[0], args=args.stdio[1:])
    if args.token:
        from mcp.client.streamable_http import streamable_http_client
        import httpx2

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {args.token}"})
        return streamable_http_client(args.url, http_client=http)
    return args.url


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def run_step(client: Client, step: list):
    kind = step[0]
    if kind == "list":
        tools = await client.list_tools()
        return {"tools": [t.name for t in tools.tools]}
    if kind == "schemas":
        tools = await client.list_tools()
        return {"tools": [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in tools.tools
        ]}
    if kind == "call":
        r = await client.call_tool(step[1], step[2])
        return {"is_error": bool(r.is_error), "text": text_of(r), "structured": r.structured_content}
    if kind == "forms":
        return {"messages": list(FORMS)}
    if kind == "cancelled":
        for _ in range(50):
            if CANCELLED:
                break
            await asyncio.sleep(0.1)
        return {"cancelled": len(CANCELLED)}
    if kind == "bench":
        samples = []
        for _ in range(step[3]):
            t0 = time.perf_counter()
            r = await client.call_tool(step[1], step[2])
            samples.append((time.perf_counter() - t0) * 1000)
            if r.is_error:
                return {"error": text_of(r)}
        samples.sort()
        p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        return {"n": len(samples), "median_ms": statistics.median(samples), "p99_ms": p99,
                "mean_ms": statistics.fmean(samples)}
    raise SystemExit(f"unknown step {kind!r}")


async def main() -> None:
    args = parse()
    steps = json.loads(args.steps)
    kwargs = {}
    if args.elicit:
        kwargs["elicitation_callback"] = make_elicit(args.elicit, args.form)
    out = []
    async with Client(server_of(args), **kwargs) as client:
        for step in steps:
            out.append(await run_step(client, step))
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
