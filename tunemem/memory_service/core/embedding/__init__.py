"""Embedders: MiniLM on ONNX Runtime or PyTorch, a hashing embedder, the cache, batching."""
