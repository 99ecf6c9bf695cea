"""Peers on the same records and query vectors: LanceDB hybrid and SQLite FTS5.

Both index each memory's visible text as the dataset gave it (display name +
full text), without our session-context field: they are what a team would
get off the shelf.
- LanceDB hybrid: a new table with the text and OUR stored vectors (read
  back from our LanceDB table), LanceDB's native full-text index (English
  stemming, its defaults otherwise), `query_type="hybrid"` with the query
  vector we computed for our own semantic leg, LanceDB's `RRFReranker`
  (k = 60), the project as a prefiltered `where`.
- SQLite FTS5: `tokenize='porter unicode61'`, BM25 (`bm25()`, k1 1.2,
  b 0.75), the query's words quoted and OR-ed, the project as a filter.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from console.models import Memory
from recall.query import words

if TYPE_CHECKING:
    from console.bench.queries import Query

LIMIT = 100


def _records() -> list[tuple[str, str, str, str]]:
    """(pk, external id, project slug, text) for every memory."""
    out = []
    for m in Memory.objects.select_related("project").order_by("pk"):
        name = (m.metadata or {}).get("display_name") or m.name
        head = m.description.rstrip("…")
        text = m.body if head and m.body.startswith(head) else f"{m.description}\n{m.body}"
        out.append(
            (m.pk, m.external_id or m.pk, m.project.slug if m.project else "", f"{name}\n{text}")
        )
    return out


def run_all(
    queries: Sequence[Query], qvecs: Sequence[Any], root: Path, *, skip: bool = False
) -> tuple[dict[str, list[list[str]]], dict[str, float]]:
    """Ranked external ids per peer and query, and mean ms per query."""
    if skip:
        return {}, {}
    records = _records()
    runs, ms = {}, {}
    for name, peer in (("peer:lancedb-hybrid", lance_hybrid), ("peer:sqlite-fts5", sqlite_fts5)):
        started = time.perf_counter()
        runs[name] = peer(records, queries, qvecs, root)
        ms[name] = round((time.perf_counter() - started) * 1000 / max(len(queries), 1), 3)
    return runs, ms


def fts5_query(text: str) -> str:
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words(text))


def sqlite_fts5(
    records: Sequence[tuple[str, str, str, str]],
    queries: Sequence[Query],
    qvecs: Sequence[Any],
    root: Path,
) -> list[list[str]]:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE docs USING fts5(ext UNINDEXED, project UNINDEXED, text,"
        " tokenize='porter unicode61')"
    )
    db.executemany("INSERT INTO docs VALUES (?, ?, ?)", [(e, p, t) for _, e, p, t in records])
    out = []
    sql = "SELECT ext FROM docs WHERE docs MATCH ? AND project = ? ORDER BY bm25(docs), ext LIMIT ?"
    for q in queries:
        match = fts5_query(q.text)
        rows = db.execute(sql, (match, q.project, LIMIT)).fetchall() if match else []
        out.append([r[0] for r in rows])
    db.close()
    return out


def lance_hybrid(
    records: Sequence[tuple[str, str, str, str]],
    queries: Sequence[Query],
    qvecs: Sequence[Any],
    root: Path,
) -> list[list[str]]:
    import lancedb
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    ours = lancedb.connect(str(settings.RECALL["VECTOR_INDEX_DIR"])).open_table("items")
    stored = ours.to_arrow().select(["id", "vector"])
    vectors = dict(
        zip(stored.column("id").to_pylist(), stored.column("vector").to_pylist(), strict=True)
    )
    kept = [r for r in records if r[0] in vectors]
    table = pa.table(
        {
            "ext": [e for _, e, _, _ in kept],
            "project": [p for _, _, p, _ in kept],
            "text": [t for _, _, _, t in kept],
            "vector": pa.array(
                [vectors[i] for i, _, _, _ in kept], type=stored.schema.field("vector").type
            ),
        }
    )
    db = lancedb.connect(str(root / "peer-lance"))
    peer = db.create_table("docs", data=table, mode="overwrite")
    peer.create_fts_index("text", replace=True, stem=True, language="English")
    reranker = RRFReranker(K=60)
    out = []
    for q, vec in zip(queries, qvecs, strict=True):
        text = " ".join(words(q.text))
        project = q.project.replace("'", "''")
        try:
            found = (
                peer.search(query_type="hybrid", vector_column_name="vector")
                .vector(vec)
                .text(text)
                .where(f"project = '{project}'", prefilter=True)
                .rerank(reranker)
                .limit(LIMIT)
                .to_arrow()
            )
            out.append([str(x) for x in found.column("ext").to_pylist()])
        except Exception:  # a query LanceDB cannot run scores zero, like a miss
            out.append([])
    return out
