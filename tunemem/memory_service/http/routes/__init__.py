"""The v1 routes, one module per resource: lessons, learning (retrieve and outcomes),
trajectories, audit, admin. Each module's `router` is included by `memory_service.http.app`."""
