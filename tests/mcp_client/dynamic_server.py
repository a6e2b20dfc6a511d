"""A small MCP server on the official Python SDK, for the client tests that need a server
to change its tools, hang, crash or answer big: things the stock test servers cannot do.

Run: python dynamic_server.py   (stdio)
"""

import asyncio
import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("dynamic")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Register a new tool called NAME and announce it with tools/list_changed."""

    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description=f"Added at run time: {name}")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
async def remove_tool(name: str, ctx: Context) -> str:
    """Remove tool NAME and announce it with tools/list_changed."""
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"removed {name}"


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "woke up"


@server.tool()
def crash() -> str:
    """Exit the process at once, mid-call."""
    os._exit(3)


@server.tool()
def big(size: int) -> str:
    """Answer SIZE bytes of text."""
    return "x" * size


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable, or <unset>."""
    return os.environ.get(name, "<unset>")


if __name__ == "__main__":
    server.run()
