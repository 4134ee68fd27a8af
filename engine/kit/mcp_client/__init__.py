"""Kit as an MCP client: the servers in kit.yaml's `mcp.servers`, their tools in the agent's registry.

    from kit.mcp_client.manager import McpClients
    clients = McpClients(ws); clients.sync(agent.tools); ...; clients.close()

The SDK (`mcp`) is imported only by kit.mcp_client.connection, and only when a server starts.
"""
