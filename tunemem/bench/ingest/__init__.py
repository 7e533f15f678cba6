"""`tunemem bench ingest`: ingest throughput over the optional data set."""
