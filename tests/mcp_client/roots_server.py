"""A small MCP server on the official Python SDK whose tools ask the client for its roots
(`roots/list`) and answer with what they got; `roots_after_change` first waits for the
client's `notifications/roots/list_changed`.

Run: python roots_server.py   (stdio)
"""

import json
import pathlib
import time

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("roots")
notified = 0


async def on_roots_changed(_ctx, _params) -> None:
    global notified
    notified += 1


server._lowlevel_server.add_notification_handler(
    "notifications/roots/list_changed", types.NotificationParams, on_roots_changed
)


@server.tool()
async def roots(ctx: Context) -> str:
    """The client's roots capability and the roots it lists."""
    caps = ctx.session.client_params.capabilities if ctx.session.client_params else None
    declared = caps.roots if caps else None
    listed = []
    if declared is not None:
        result = await ctx.session.list_roots()
        listed = [{"uri": str(r.uri), "name": r.name} for r in result.roots]
    return json.dumps(
        {
            "declared": declared is not None,
            "list_changed": bool(declared and declared.list_changed),
            "roots": listed,
        },
        sort_keys=True,
    )


@server.tool()
async def roots_after_change(ctx: Context, marker: str, seconds: float = 20) -> str:
    """Writes `marker` once it is listening, waits for a roots/list_changed notification
    (at most `seconds`), then lists the roots."""
    seen = notified
    pathlib.Path(marker).write_text("waiting")
    deadline = time.monotonic() + seconds
    while notified == seen and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    result = await ctx.session.list_roots()
    listed = [{"uri": str(r.uri), "name": r.name} for r in result.roots]
    return json.dumps({"notified": notified > seen, "roots": listed}, sort_keys=True)


if __name__ == "__main__":
    server.run()
