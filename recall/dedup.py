"""DedupHint: the most similar active in-scope memory to one being written.

Advisory only: a write always proceeds. Semantic only (seamless's rule): the
proposed memory is embedded as the semantic plane embeds memories, the
vector index is asked for a few candidates with "active" inside the query
(so a superseded duplicate cannot take the slot of the live one), and the
best candidate at or above the threshold is returned. With no embedder, or
on any retrieval trouble, there is simply no hint.

The threshold depends on the model and on what is written
(`tests/bench/calibrate_dedup.py` on ../shared/eval). seamless's 0.83 was set
for OpenAI embeddings; with all-MiniLM-L6-v2 it hints on 14.6% of LoCoMo
turns written in order (each a new utterance) and 31% of observations about
the same speakers, so agents were steered to supersede things that were not
duplicates. The calibrated thresholds keep false hints at or under 1% while
catching 79-86% of constructed restatements (recased, a lead-in added, 15%
of the words dropped, sentences reordered, or cut to half):

| model | durable kinds | episodic kinds |
|---|---|---|
| all-MiniLM-L6-v2-onnx-int8+dq8 (default) | 0.93: 0.8% false, 79% | 0.90: 0.9% false, 86% |
| all-MiniLM-L6-v2-onnx-int8 | 0.94: 0.3% false, 78% | 0.91: 0.8% false, 84% |

(false: share of false hints; then the share of restatements caught.)

A restatement under a new name is also hinted by its words (`restates`): a
candidate from `WORDS_FLOOR` that says `SAME_SAYING` of the new text's words.
On LoCoMo this adds false hints on 0.17% of observations (0.83% in all) and
0.07% of turns (0.18% in all): `tests/bench/calibrate_restates.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np

from recall.config import DedupConfig
from recall.errors import RecallError
from recall.planes import Planes
from recall.ports import Vector
from recall.query import WORD_RE, fold, kept
from recall.results import Hit, Provenance, to_hit
from recall.scope import recall_filter
from recall.scoring import admits
from recall.types import MEMORY, Candidate, Doc, Record

log = logging.getLogger(__name__)

EPISODIC = ("episode", "working")
# model name -> (durable, episodic) thresholds; other models get DEFAULT.
CALIBRATED: dict[str, tuple[float, float]] = {
    "all-MiniLM-L6-v2-onnx-int8+dq8": (0.93, 0.90),
    # Two windows change only texts over 128 pieces: the short texts the
    # thresholds were calibrated on embed exactly as before.
    "all-MiniLM-L6-v2-onnx-int8+dq8+w2": (0.93, 0.90),
    "all-MiniLM-L6-v2-onnx-int8+w2": (0.94, 0.91),
    "all-MiniLM-L6-v2-onnx-int8": (0.94, 0.91),
}
DEFAULT = (0.93, 0.90)


def threshold(config: DedupConfig, *, model: str, kind: str) -> float:
    """The cosine a candidate must reach for a memory of `kind` under `model`."""
    durable, episodic = CALIBRATED.get(model, DEFAULT)
    if kind in EPISODIC:
        return config.episodic_threshold or episodic
    return config.threshold or durable


def probe(
    project: str | None,
    name: str,
    description: str,
    body: str,
    *,
    title: str = "",
    item: str = MEMORY,
) -> Doc:
    """A memory (or with `item` NOTE, a note: `name` its slug) about to be written as
    the vector plane will embed it (its `embedding_text` and `embedding_hash` are the
    stored row's)."""
    return Doc(
        id="", item=item, project=project, active=True, kind="" if item == MEMORY else item,
        name=name, title=title or name, description=description, body=body,
    )  # fmt: skip


def hint(
    planes: Planes,
    *,
    project: str | None,
    name: str,
    description: str,
    body: str = "",
    exclude: Collection[str] = (),
    kind: str = "fact",
    config: DedupConfig,
    pending: Sequence[tuple[str, Vector]] = (),
    item: str = MEMORY,
    title: str = "",
) -> Hit | None:
    """The hint for a memory about to be (or just) written, none of `exclude` (itself,
    and in a batch the items written after it). `pending`: memories
    written but not in the vector plane yet (the index lags its writes), each with
    the vector its write embedded: an agent writing a burst of memories is shown
    the one it wrote a moment ago too.

    With `item` NOTE (`name` its slug, `title` its title), the most similar note: a
    note is compared with notes only, at the durable threshold, since a write-up for
    people that restates a memory is not a spare (notes_write got no hint at all,
    and an agent wrote the same write-up twice unwarned)."""
    if planes.embedder is None or planes.vectors is None:
        return None
    minimum = threshold(config, model=planes.embedder.model, kind=kind)
    scope = "memories" if item == MEMORY else "notes"
    try:
        where = recall_filter(planes.store, project=project, scope=scope)
        text = probe(project, name, description, body, title=title, item=item).embedding_text()
        vector = planes.embedder.embed([text])[0]
        found = planes.vectors.search(vector, where=where, limit=config.candidates + 1)
        found = _nearest(found, vector, pending)
        floor = min(minimum, WORDS_FLOOR)
        found = [c for c in found if c.id not in exclude and c.score >= floor]
        records = planes.store.hydrate([c.id for c in found])
    except RecallError as exc:
        log.warning("dedup hint skipped: %s", exc)
        return None
    said = said_words(description, body)
    for cand in found:
        record = records.get(cand.id)
        if record is None or not admits(where, record):
            continue
        if cand.score < minimum and not restates(said, record):
            continue
        prov = Provenance("semantic", cand.rank, cand.score)
        hit = to_hit(
            record, now=planes.clock(), source="semantic", score=cand.score, sources=(prov,)
        )
        return replace(hit, similarity=cand.score)
    return None


WORDS_FLOOR = 0.80  # the cosine below the threshold from which a candidate's words are read
SAME_SAYING = 0.9  # the share of the new memory's words the candidate must hold
MIN_SAYING = 6  # distinct words a memory needs before its words alone can make a hint
SAYING_CHARS = 20_000  # of a text's head: a restatement shows in its first pages


@dataclass(frozen=True, slots=True)
class Saying:
    """What a memory says, names aside: its words (folded, lower-cased) as a set of
    those long enough to count (`kept`), and all of them in order."""

    words: frozenset[str]
    wording: tuple[str, ...]


def said_words(description: str, body: str) -> Saying:
    """What a memory says (`Saying`), from the head of its text."""
    text = fold(f"{description}\n{body}"[:SAYING_CHARS].lower())
    wording = tuple(WORD_RE.findall(text))
    return Saying(frozenset(w for w in wording if kept(w)), wording)


def restates(said: Saying, record: Record) -> bool:
    """Whether a memory saying `said` restates `record`: nearly every word of it
    (`SAME_SAYING`) is one `record` says; for a text of a few words, the same words
    in the same order (case, punctuation and spacing aside).

    The vectors embed each memory's name with its text, and a restatement has a
    name of its own (one name is one memory): the same body under another name
    scored 0.89 against the 0.93 threshold, and the agent was told nothing. So a
    candidate close in meaning (`WORDS_FLOOR`) whose words hold the new text's
    is a restatement too. Not for a text of a few words (`MIN_SAYING`), which
    many longer memories hold. Chosen on LoCoMo, each observation against the
    others of its conversation and each turn against the earlier ones (all
    false hints): holding 80% of the words added 0.74% / 0.54% false hints,
    90% adds 0.17% / 0.07%, 100% 0% / 0.04% but misses a restatement that
    adds a word ("Note: ...").

    A few words held in that order by a memory that says nothing else are a
    restatement all the same: "the ledger lives in postgres!" against "The
    ledger lives in Postgres" scored 0.92 and was not hinted (the exact-text
    check keeps punctuation). Equal word sets alone would pair "Nate: Bye
    Joanna!" with "Joanna: Bye Nate!"; equal sequences add no false hint on
    LoCoMo's observations or turns."""
    held = said_words(record.description, record.body)
    if len(said.words) < MIN_SAYING:
        return bool(said.wording) and said.wording == held.wording
    return len(said.words & held.words) >= SAME_SAYING * len(said.words)


def _nearest(
    found: Sequence[Candidate],
    vector: Sequence[float] | Vector,
    pending: Sequence[tuple[str, Vector]],
) -> list[Candidate]:
    """The plane's candidates with the pending memories' cosines to `vector`, best
    first (ties by id); a memory the plane has already keeps the plane's score."""
    held = {c.id for c in found}
    extra = [(memory_id, v) for memory_id, v in pending if memory_id not in held]
    if not extra:
        return list(found)
    q = np.asarray(vector, dtype=np.float32).reshape(-1)
    block = np.stack([np.asarray(v, dtype=np.float32).reshape(-1) for _, v in extra])
    norms = np.linalg.norm(block, axis=1) * (float(np.linalg.norm(q)) or 1.0)
    cosines = (block @ q) / np.where(norms > 0, norms, 1.0)
    merged = [(c.id, c.score) for c in found]
    merged += [(memory_id, float(c)) for (memory_id, _), c in zip(extra, cosines, strict=True)]
    merged.sort(key=lambda p: (-p[1], p[0]))
    return [Candidate(memory_id, n, score) for n, (memory_id, score) in enumerate(merged, 1)]
