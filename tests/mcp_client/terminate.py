"""Open one Streamable HTTP session with the official Python SDK, list the tools, and end the
session the way the SDK does on exit (DELETE /mcp with the Mcp-Session-Id), recording what the
SDK logs about it. Driven by the `tackle mcp serve` tests.

    python terminate.py URL

Prints {"tools": [names], "warnings": [every warning the SDK's HTTP client logged]}.
"""

import asyncio
import json
import logging
import sys

from mcp import Client


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    collect = Collect()
    log = logging.getLogger("mcp.client.streamable_http")
    log.addHandler(collect)
    log.setLevel(logging.WARNING)
    async with Client(sys.argv[1]) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
    json.dump({"tools": tools, "warnings": collect.messages}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
