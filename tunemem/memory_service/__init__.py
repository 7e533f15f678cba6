"""The tunemem service, split by role: `service` (the MemoryService facade: every operation),
`protocol` (MemoryAPI, which the facade and the HTTP client both satisfy), `remote`
(RemoteService, the API over HTTP), `core/` (store, schema, models, index, embedder and the
parts the facade composes), `http/` (the FastAPI app), `mcp/` (MCP tools) and `cli/` (the
`tunemem` command). The doors (http, mcp, cli) are thin adapters over MemoryAPI."""
