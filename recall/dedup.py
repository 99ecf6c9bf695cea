"""DedupHint: the most similar active in-scope memory to one being written.

Advisory only: a write always proceeds. Semantic only (seamless's rule): the
proposed memory is embedded as the semantic plane embeds memories, the
vector index is asked for a few candidates with "active" inside the query
(so a superseded duplicate cannot take the slot of the live one), and the
best candidate at or above the threshold (cosine 0.83) is returned. With no
embedder, or on any retrieval trouble, there is simply no hint.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from recall.config import DedupConfig
from recall.errors import RecallError
from recall.planes import Planes
from recall.results import Hit, Provenance, to_hit
from recall.scope import recall_filter
from recall.scoring import admits
from recall.types import MEMORY, Doc

log = logging.getLogger(__name__)


def hint(
    planes: Planes,
    *,
    project: str | None,
    name: str,
    description: str,
    body: str = "",
    exclude_id: str | None = None,
    config: DedupConfig,
) -> Hit | None:
    if planes.embedder is None or planes.vectors is None:
        return None
    try:
        where = recall_filter(planes.store, project=project, scope="memories")
        text = Doc(
            id="", item=MEMORY, project=project, active=True, kind="", name=name,
            title=name, description=description, body=body,
        ).embedding_text()  # fmt: skip
        vector = planes.embedder.embed([text])[0]
        found = planes.vectors.search(vector, where=where, limit=config.candidates + 1)
        found = [c for c in found if c.id != exclude_id and c.score >= config.threshold]
        records = planes.store.hydrate([c.id for c in found])
    except RecallError as exc:
        log.warning("dedup hint skipped: %s", exc)
        return None
    for cand in found:
        record = records.get(cand.id)
        if record is None or not admits(where, record):
            continue
        prov = Provenance("semantic", cand.rank, cand.score)
        hit = to_hit(
            record, now=planes.clock(), source="semantic", score=cand.score, sources=(prov,)
        )
        return replace(hit, similarity=cand.score)
    return None
