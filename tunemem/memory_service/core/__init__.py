"""The service's parts, below every door: the SQL store and its tables (`store`, `schema`,
`auth` for API keys), the API models (`models`, `audit_models`), settings and errors, the
vector index and the embedder, and the parts the MemoryService facade composes, each given
only the collaborators it needs: `lessons`, `learning` (retrieve, report, history),
`values`, `ingest`, `bundles` (export/import), `audit` (cross-chip transfer) and
`maintenance`. Nothing here imports the facade, HTTP, MCP or the CLI."""
