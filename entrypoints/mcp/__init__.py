"""The MCP server of powercontext (``powercontext mcp``): read-only memory tools for
agents over stdio or streamable HTTP. Importing this package imports nothing heavy; the
``mcp`` SDK is imported by :mod:`powercontext.entrypoints.mcp.server`."""
