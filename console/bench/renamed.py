"""The configured embedder under another model name: a model change at the same cost.

`bench speed --model-change` reindexes a copy of its deployment with this
embedder. Its vectors are those of the configured model, but their model
name differs, so the rebuild clears the vector table and embeds every text
again, exactly as after a real model change, at this model's speed (the
figure issue 16 asks: 10 minutes at 100,000). Switching to the slower fp32
model (`RECALL_EMBEDDER_QUANTIZED=0`, as docs/FIGURES.md's older row did)
measures that model's speed instead.
"""

from __future__ import annotations

from recall.embedders.onnx import OnnxEmbedder

SUFFIX = "+next"


class NextModel(OnnxEmbedder):
    """OnnxEmbedder whose vectors carry the model name plus `SUFFIX`."""

    @property
    def model(self) -> str:
        return super().model + SUFFIX
