"""Everything derived from the append-only outcome log: lesson values, toolchain evidence and
estimates."""
