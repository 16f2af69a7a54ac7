"""Python client for toolwire."""
