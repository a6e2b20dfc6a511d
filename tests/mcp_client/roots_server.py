"""A small MCP server on the official Python SDK whose tool asks the client for its roots
(`roots/list`) and answers with what it got.

Run: python roots_server.py   (stdio)
"""

import json

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("roots")


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


if __name__ == "__main__":
    server.run()
