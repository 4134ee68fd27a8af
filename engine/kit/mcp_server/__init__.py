"""Kit as an MCP server (`kit mcp serve`): see kit.mcp_server.server. The SDK is imported only
when serving starts."""
