"""MCP both ways: toolwire as an MCP server, and MCP servers imported as toolwire tools."""
