"""The rebuildable vector index (Chroma, an in-memory one for tests) and its guards."""
