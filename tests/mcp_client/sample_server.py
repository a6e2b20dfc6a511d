"""A small MCP server on the official Python SDK whose tool asks the client's model for a
completion (`sampling/createMessage`) and answers with what it got, or with the error.

Run: python sample_server.py   (stdio)
"""

import json
import warnings

from mcp import types
from mcp.server.mcpserver import Context, MCPServer

warnings.simplefilter("ignore")
server = MCPServer("sample")


@server.tool()
async def ask_model(ctx: Context) -> str:
    """Ask the client's model to name a colour; answer with its reply, or the refusal."""
    message = types.SamplingMessage(
        role="user",
        content=types.TextContent(type="text", text="Name a colour for the sampling check."),
    )
    try:
        result = await ctx.session.create_message(
            [message],
            max_tokens=50_000,
            system_prompt="Answer with one word.",
            include_context="allServers",
        )
    except Exception as e:  # the client's refusal arrives as an MCP error
        return json.dumps({"error": str(e)})
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else None
    return json.dumps(
        {"text": text, "model": result.model, "stop": result.stop_reason, "role": result.role}
    )


@server.tool()
async def capabilities(ctx: Context) -> str:
    """Whether the client declared the sampling capability."""
    caps = ctx.session.client_params.capabilities if ctx.session.client_params else None
    return json.dumps({"sampling": bool(caps and caps.sampling)})


if __name__ == "__main__":
    server.run()
