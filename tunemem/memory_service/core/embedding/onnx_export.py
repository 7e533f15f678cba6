"""Export a sentence-transformers BERT model (the bundled MiniLM) to ONNX, from its weights.

Run as `python -m tunemem.memory_service.core.embedding.onnx_export MODEL_DIR OUT_FILE` by
`minilm_onnx` the
first time a model is used, in a child process, so the service itself never imports PyTorch.
The graph takes `input_ids`, `attention_mask` and `token_type_ids` and returns the model's
sentence vectors: mean pooling over the attention mask, then unit length, as
sentence-transformers' `Pooling` and `Normalize` modules compute them. The file is written
beside OUT_FILE under a temporary name and renamed into place, so a reader never sees half.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def export(model_dir: Path, out_file: Path) -> Path:
    """Write the ONNX graph of the model in `model_dir` to `out_file`; returns `out_file`."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    class SentenceVectors(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    bert = AutoModel.from_pretrained(str(model_dir))
    bert.eval()
    ids = torch.tensor([[101, 7592, 2088, 2003, 1037, 3231, 102]] * 2)
    sample = (ids, torch.ones_like(ids), torch.zeros_like(ids))
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    out_file.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(suffix=".onnx.part", dir=out_file.parent)
    os.close(handle)
    try:
        with torch.no_grad():
            torch.onnx.export(
                SentenceVectors(bert),
                sample,
                temporary,
                input_names=list(INPUTS),
                output_names=["sentence_embedding"],
                dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,  # the TorchScript exporter: needs `onnx`, not onnxscript
            )
        os.replace(temporary, out_file)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return out_file


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(
            "usage: python -m tunemem.memory_service.core.embedding.onnx_export MODEL_DIR OUT_FILE"
        )
    export(Path(sys.argv[1]), Path(sys.argv[2]))
