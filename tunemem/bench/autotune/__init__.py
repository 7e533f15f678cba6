"""`tunemem bench autotune`: the Triton drop-in against the full autotune, live or replayed."""
