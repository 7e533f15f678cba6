"""Upkeep: values rebuild, reindex, compaction."""
