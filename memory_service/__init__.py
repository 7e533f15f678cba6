"""The tunemem service: SQL store, vector index, embedder, the MemoryService facade, the HTTP
API, the MCP tools and the `tunemem` command line."""
