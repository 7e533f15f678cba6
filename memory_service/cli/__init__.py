"""The `tunemem` command: `app` assembles the command groups, `common` holds what they share
(consoles, options, `open_service` returning a MemoryAPI), and each group is one module
(serve, learning, lessons, maintenance, bundles, ingest, keys, mcp, audit, bench, agent).
The groups are thin adapters over the MemoryAPI; `bench` and `agent` call into `bench/` and
`agent_client`, which only the CLI may compose."""
