"""One-off studies behind a decision (embedder precision, model learners, Chroma bulk load)."""
