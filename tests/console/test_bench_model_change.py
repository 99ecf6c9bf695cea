"""`bench speed --model-change`: a reindex that embeds every text again, at the model's cost."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from console import indexing, services, wiring
from console.bench import renamed, speed

pytestmark = pytest.mark.django_db


def test_the_renamed_model_embeds_every_text_again_with_the_same_vectors(
    planes: Path, settings: Any
) -> None:
    project = services.project_create(slug="ops")
    for n in range(3):
        services.memory_create(
            project=project, kind="fact", name=f"fact-{n}",
            description=f"The kraken queue drains in {n + 2} minutes", body="",
        )  # fmt: skip
    indexing.apply_pending()
    model = wiring.embedder().model  # type: ignore[union-attr]
    plane = wiring.vector_plane()
    assert plane is not None
    before = plane.hashed_vectors()
    backends = copy.deepcopy(settings.RECALL["BACKENDS"])
    backends["EMBEDDER"]["BACKEND"] = "console.bench.renamed.NextModel"
    settings.RECALL = {**settings.RECALL, "BACKENDS": backends}
    wiring.reset()

    try:
        done = speed.worker("speed-model-change", {}, planes)
        plane = wiring.vector_plane()
        assert plane is not None
        stored, after = plane.stored_model(), plane.hashed_vectors()
    finally:
        wiring._cache.pop("batch_mode", None)  # the job's `manage.py reindex` mode, undone
        wiring.reset()

    assert (done["items"], done["embedded"]) == (3, 3)
    assert stored == model + renamed.SUFFIX
    assert after.keys().isdisjoint(before)  # a text hash names the model
    assert np.allclose(rows(after), rows(before), atol=1e-6)  # the same model's vectors


def rows(vectors: dict[str, Any]) -> Any:
    return np.array(sorted(v.tolist() for v in vectors.values()))
