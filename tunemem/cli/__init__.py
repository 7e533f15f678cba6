"""The `tunemem` command: `app` assembles the command groups, `common` holds what they share
(consoles, options, `open_service` returning a MemoryAPI), and each group is one module
(serve, learning, lessons, maintenance, bundles, ingest, keys, mcp, audit, bench, agent).
The groups are thin adapters over the MemoryAPI; `bench` and `agent` call into `bench/` and
`agent_client`, which only the CLI may compose."""

import sys

# httpx imports its own command line client (click, rich.syntax, pygments) when it is
# imported, and falls back to a stub `httpx.main` when that import fails: blocking it saves a
# `tunemem` command about a quarter of its start-up (0.2-0.4 s on two cores), and tunemem
# never runs httpx's command line.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
