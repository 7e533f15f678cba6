"""Who may do what: API keys, roles, tenants, and the shared write quota."""
