"""A small MCP server on the official Python SDK whose tool asks the client for input
(`elicitation/create`, form mode) and answers with what it got.

Run: python elicit_server.py   (stdio)
"""

import json
from typing import Literal

from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("elicit")


class Profile(BaseModel):
    name: str = Field(description="Who is asking")
    colour: Literal["red", "green"] = Field(default="green", description="A colour")
    count: int = Field(default=2, ge=1, le=5)


@server.tool()
async def profile(ctx: Context) -> str:
    """Ask the person for a profile; answer with the action and the data."""
    result = await ctx.elicit("Tell me about yourself", Profile)
    data = result.data.model_dump() if result.action == "accept" else None
    return json.dumps({"action": result.action, "data": data}, sort_keys=True)


@server.tool()
async def capabilities(ctx: Context) -> str:
    """Whether the client declared the elicitation capability."""
    caps = ctx.session.client_params.capabilities if ctx.session.client_params else None
    return json.dumps({"elicitation": bool(caps and caps.elicitation)})


if __name__ == "__main__":
    server.run()
