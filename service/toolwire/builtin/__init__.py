"""toolwire's built-in tools, one module per group."""
