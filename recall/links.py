"""Link expansion: the `[[name]]` neighbours of Recall's top memories.

seamless's rule: expand the links of the top 5 active in-scope memories,
resolve each name in the bound project first, then global, and score the
i-th neighbour discovered (1-based) 1 / (k + i), source "link". Skipped by
the caller when a kind filter is set (a neighbour of another kind would
violate it); a no-op when the seeds have no links. Neighbours go through the
post-fusion scope guard like every other hit.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from recall.ports import MemoryStore
from recall.results import Provenance
from recall.types import MEMORY, Record

LINK = "link"


def expand(
    seeds: Sequence[Record],
    *,
    store: MemoryStore,
    project: str | None,
    k: int,
    exclude: Collection[str],
) -> list[tuple[Record, Provenance]]:
    """Neighbours of `seeds` (in their order) not in `exclude`, with their provenance."""
    names: list[str] = []
    for seed in seeds:
        for target in seed.links:
            if target and target != seed.name and target not in names:
                names.append(target)
    if not names:
        return []
    found = store.by_names(names, project=project)
    out: list[tuple[Record, Provenance]] = []
    taken = set(exclude)
    for target in names:
        record = found.get(target)
        if record is None or record.id in taken or record.item != MEMORY:
            continue
        taken.add(record.id)
        i = len(out) + 1
        out.append((record, Provenance(LINK, i, 1 / (k + i))))
    return out
