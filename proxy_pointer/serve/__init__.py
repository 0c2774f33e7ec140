"""Serving one index to many callers: :mod:`.service` (JSON-ready answers through each
caller's access view), the HTTP API (:mod:`.http`, FastAPI), the MCP server (:mod:`.mcp`),
what the framework retrievers share (:mod:`.adapters`) and the inspector page."""
