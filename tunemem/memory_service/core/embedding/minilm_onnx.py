"""all-MiniLM-L6-v2 on ONNX Runtime (embedder kind `minilm`, the default).

The ONNX graph is made from the bundled weights the first time they are used
(`onnx_export`, in a child process that imports PyTorch so this one never does) and kept in
a model cache folder under the weights' digest; nothing is downloaded. Texts are tokenised
by the model's own `tokenizer.json` through `tokenizers` (as sentence-transformers does,
truncated at the model's 256 tokens, never padded). ONNX Runtime gives up the interpreter
lock while it runs, so passes of concurrent requests run side by side. A process holds one
inference session per model file and thread count (about 107 MB each: the weights and their
prepacked copies), in practice one: every embedder of that model and every pass runs on it,
its intra-op threads shared by the passes in flight (`PassEmbedder` bounds those to the cores).
Its vectors equal PyTorch's within cosine 1e-6 (tests pin 0.9999) but not bit for bit, so its
fingerprint is its own: a store embedded by PyTorch is reindexed before this model serves it
(`vector_models`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from tunemem.memory_service.core.embedding.passes import (
    Features,
    PassEmbedder,
    bundled_model_path,
    weights_digest,
)

# Bump when the exported graph changes (its inputs, pooling, opset): a new file, a new model.
EXPORT_FORMAT = "onnx-fp32-v1"


EXPORTER = "tunemem.memory_service.core.embedding.onnx_export"  # run in its own process


def default_model_cache() -> Path:
    """`TUNEMEM_MODEL_CACHE` where set (as the service's settings read it), else the user's
    ~/.cache/tunemem/models."""
    configured = os.environ.get("TUNEMEM_MODEL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "tunemem" / "models"


def onnx_model_file(model_path: Path, cache_dir: Path, digest: str | None = None) -> Path:
    """The ONNX file of the model in `model_path`, exported into `cache_dir` if not there yet.

    Two processes exporting at once each write their own temporary file and rename it into
    place; either result is the same graph.
    """
    digest = digest or weights_digest(model_path)
    target = cache_dir / f"{model_path.name}-{digest}-{EXPORT_FORMAT}.onnx"
    if target.exists():
        return target
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RuntimeError(
            f"cannot write the ONNX model cache {cache_dir} ({exc}); set TUNEMEM_MODEL_CACHE "
            "to a writable folder"
        ) from exc
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tunemem.memory_service.core.embedding.onnx_export",
            str(model_path),
            str(target),
        ],
        capture_output=True,
        text=True,
        env=_offline_env(),
    )
    if done.returncode != 0 or not target.exists():
        raise RuntimeError(
            f"exporting {model_path} to ONNX failed (exit {done.returncode}): "
            f"{done.stderr.strip()[-2000:]}"
        )
    return target


def _offline_env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return env


_SESSIONS: dict[tuple[str, int], Any] = {}
_SESSIONS_LOCK = threading.Lock()


def shared_session(model_file: Path, threads: int) -> Any:
    """The process's inference session of `model_file` with `threads` intra-op threads,
    made on first use. Runs on one session may overlap (ONNX Runtime allows it); a second
    session of the same model would hold a second copy of its weights. Spinning is off,
    since on a shared machine spinning threads take the cores other passes wait for; the
    thread count does not change a vector's bits (tested)."""
    import onnxruntime

    key = (str(model_file), threads)
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = onnxruntime.InferenceSession(
                str(model_file), options, providers=["CPUExecutionProvider"]
            )
            _SESSIONS[key] = session
        return session


class MiniLMOnnxEmbedder(PassEmbedder):
    """all-MiniLM-L6-v2 on ONNX Runtime's CPU provider, never padded (`PassEmbedder`).

    Every pass runs on the process's one session of the model (`shared_session`), with as
    many intra-op threads as a pass alone may take (`threads`, 0: every core); passes that
    overlap share that pool rather than each holding a session. Every text has a pass of its
    own: ONNX Runtime's matrix products gave texts stacked with others of their length other
    last bits than alone (measured here: all 73 of 73), and a lesson's vector must not depend
    on the batch it was ingested in.
    """

    stacks_same_length = False

    def __init__(
        self,
        model_path: Path | None = None,
        threads: int = 0,
        workers: int = 0,
        cache_dir: Path | None = None,
        onnx_file: Path | None = None,
    ):
        """`onnx_file`: another graph of the same model to run (a benchmark's quantised copy);
        its vectors then carry that file's name in the fingerprint."""
        from tokenizers import Tokenizer

        path = Path(model_path or bundled_model_path())
        if not path.exists():
            raise FileNotFoundError(f"embedding model folder not found: {path}")
        super().__init__(threads, workers)
        digest = weights_digest(path)
        self.model_file = onnx_file or onnx_model_file(
            path, cache_dir or default_model_cache(), digest
        )
        variant = EXPORT_FORMAT if onnx_file is None else f"{EXPORT_FORMAT}:{onnx_file.name}"
        self._fingerprint = f"{self.name}:{self.dim}:{digest}:{variant}"
        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tokenizer.enable_truncation(_max_tokens(path))
        self._tokenizer.no_padding()

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def session(self) -> Any:
        """The shared inference session this embedder's passes run on."""
        return shared_session(self.model_file, self._cores.most)

    def _features(self, text: str) -> Features:
        encoding = self._tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        return {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.asarray([encoding.type_ids], dtype=np.int64),
        }

    def _stack(self, features: list[Features]) -> Features:
        return {key: np.concatenate([f[key] for f in features]) for key in features[0]}

    def _run(self, features: Features, threads: int) -> np.ndarray:
        # `threads` is what `Cores` granted this pass; the shared session's pool serves every
        # pass in flight, and at most one pass per core is (`PassEmbedder`).
        (vectors,) = self.session.run(None, features)
        return np.asarray(vectors, dtype=np.float32)


def _max_tokens(model_path: Path) -> int:
    """The model's sequence limit as sentence-transformers reads it (256 for MiniLM)."""
    config = model_path / "sentence_bert_config.json"
    if config.exists():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256
