//! MCP client (servers' tools become server__tool) and MCP server (Tackle's registry out)
