"""Several MCP clients (official Python SDK) on one Streamable HTTP server at once, each in
its own MCP session, driven by the `tackle mcp serve` tests.

    python sessions.py URL PLAN

PLAN is a JSON object:
    {"clients": {NAME: ANSWER or null, ...}, "steps": [[NAME, TOOL, ARGS], ...]}
Every client connects before the first step and stays connected until the last, so the sessions
overlap. A client whose ANSWER is a string declares the elicitation capability and answers every
form with {"decision": ANSWER}; with null it declares none and cannot be asked.

Prints {"results": [{"client", "is_error", "text"}, ...], "asked": {NAME: forms answered}}.
"""

import asyncio
import json
import sys
from contextlib import AsyncExitStack

from mcp import Client, types


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def make_elicit(name: str, answer: str, asked: dict):
    async def elicit(_ctx, _params):
        asked[name] += 1
        return types.ElicitResult(action="accept", content={"decision": answer})

    return elicit


async def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    url, plan = sys.argv[1], json.loads(sys.argv[2])
    asked = {name: 0 for name in plan["clients"]}
    results = []
    async with AsyncExitStack() as stack:
        clients = {}
        for name, answer in plan["clients"].items():
            kwargs = {}
            if answer is not None:
                kwargs["elicitation_callback"] = make_elicit(name, answer, asked)
            clients[name] = await stack.enter_async_context(Client(url, **kwargs))
        for name, tool, args in plan["steps"]:
            r = await clients[name].call_tool(tool, args)
            results.append({"client": name, "is_error": bool(r.is_error), "text": text_of(r)})
    json.dump({"results": results, "asked": asked}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
