"""Altitude digests: an extractive summary of a project's memories (fabriq's AltScope).

`build` splits the active memories into sentences, embeds them with the
product's embedder port, and picks the most central ones with Maximal
Marginal Relevance (Carbonell and Goldstein 1998):

    next = argmax over s not chosen of
           lam * centrality(s) - (1 - lam) * max over t chosen of cos(s, t)

where centrality(s) = cos(s, centroid of every sentence), the centroid
score of MEAD (Radev, Jing, Stys, Tam 2004). Sentences are taken in that
order while they fit the digest's token budget, so any prefix of a digest
is the best digest of that size (a pack cuts digests by prefix).

**Covers.** A digest sentence s covers a memory m when s was taken from m,
or when every embedded sentence of m has cosine >= `cover` with s (the
sentence restates all of m). A digest covers the union over its sentences.
Recall never packs a digest together with a row it covers (recall/altitude.py).

A `Summarizer` may replace the extractive step (an LLM); it must return
sentences with the memories each covers, by the same definition.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Protocol

import numpy as np

from recall.agent import body_text, text_of
from recall.links import plain
from recall.lru import LRU
from recall.markdown import prose
from recall.passages import sentences
from recall.ports import Embedder, TokenCounter
from recall.sanitize import WITHHELD, unlabelled
from recall.types import MEMORY, Record, embeddable
from recall.types import Digest as Digest  # re-exported: the digest values live in types
from recall.types import Sentence as Sentence

DIGEST_TOKENS = 600  # a digest's size, at most (a pack may cut it further)
MAX_SENTENCES = 40
LAMBDA = 0.7  # MMR: centrality vs. novelty
COVER = 0.8  # cosine at which a sentence restates another
PER_MEMORY = 6  # sentences embedded per memory (description first)
LONG_WORDS = 20  # a sentence longer than this is cut there, with an ellipsis
MIN_WORDS = 4
EMBED_BATCH = 256
_BULLET = re.compile(r"^\s*(?:[-*+>#]+|\d+[.)])\s*")


class Summarizer(Protocol):
    """Replaces the extractive step: the sentences of a digest, best first.

    Gets every candidate sentence (text and the memory it came from) and a
    token budget; returns at most that many tokens of sentences (counted by
    `counter`), each naming the memory ids it covers (see the module
    docstring: a sentence covers a memory only when it says all of it).
    Must not raise for an empty input (return nothing).
    """

    def summarize(
        self, sentences: Sequence[Sentence], *, budget: int, counter: TokenCounter
    ) -> Sequence[Sentence]: ...


def split(text: str) -> list[str]:
    """Sentences of a memory's prose (no code, table rows or rules: `recall.markdown`),
    as `recall.passages.sentences` reads them (a line wrapped inside a paragraph does
    not end one; a list item does), bullets stripped, those under MIN_WORDS words
    dropped, those over LONG_WORDS cut there with an ellipsis: a digest line is never
    half a sentence that reads as whole."""
    out: list[str] = []
    for sentence in sentences(_unwrapped(prose(plain(text)))):
        words = _BULLET.sub("", sentence).split()
        if len(words) > LONG_WORDS:
            out.append(" ".join(words[:LONG_WORDS]) + " …")
        elif len(words) >= MIN_WORDS:
            out.append(" ".join(words))
    return out


_ENDED = re.compile(r"[.!?:;…。！？；]\W*$")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
WRAPPED_WORDS = 6  # a line this long that ends mid-sentence was wrapped, not a title


def _unwrapped(text: str) -> str:
    """Lines wrapped inside a paragraph joined back ("... customer and the" + "Stripe
    test clock; ..."): a line of WRAPPED_WORDS words or more that ends without a stop,
    followed by a line that is not a list item; headings dropped. `sentences` joins a
    wrapped line only when it starts in lower case."""
    out: list[str] = []
    for line in text.split("\n"):
        if _HEADING.match(line):  # a title, no sentence: `sentences` would glue it on
            out.append("")
            continue
        last = out[-1] if out else ""
        if (
            line.strip()
            and len(last.split()) >= WRAPPED_WORDS
            and not _ENDED.search(last)
            and not _BULLET.match(line)
        ):
            out[-1] = f"{last} {line.strip()}"
        else:
            out.append(line)
    return "\n".join(out)


def candidates(records: Sequence[Record]) -> list[Sentence]:
    """Every active memory's first PER_MEMORY sentences, by memory id then position.

    A digest is one text of many lines: a turn's speaker label ("assistant: ...")
    would fake a turn there, so a sentence leaves it behind, and one a later line's
    scrub would still cut (a disguised label, a phrase) is left out, as cut lines are.
    """
    out: list[Sentence] = []
    for record in sorted(records, key=lambda r: r.id):
        if record.item == MEMORY and record.active:
            said = [digest_line(t) for t in split(text_of(record))]
            out += [Sentence(t, record.id) for t in said if t][:PER_MEMORY]
    return out


def digest_line(sentence: str) -> str:
    """`sentence` (agent text) as a line of a digest; "" when agents may not read it."""
    line = unlabelled(sentence)
    shown = body_text(line, opening=False)
    return line if line and WITHHELD not in shown and WITHHELD not in line else ""


class VectorCache:
    """Sentence vectors by model and text, the least recently used dropped past `size`:
    a long-lived builder (the index worker) re-embeds only the sentences that changed."""

    def __init__(self, size: int = 50_000) -> None:
        self._rows: LRU[tuple[str, str], np.ndarray] = LRU(size)

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        found = {t: self._rows.get((embedder.model, t)) for t in dict.fromkeys(texts)}
        missing = [t for t, vector in found.items() if vector is None]
        for text, vector in zip(missing, embed(embedder, missing), strict=True):
            found[text] = vector
            self._rows.put((embedder.model, text), vector)
        out = [found[t] for t in texts]
        return np.asarray(out, dtype=np.float32).reshape(len(texts), embedder.dims)


def embed(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors for `texts`, embedded in batches of EMBED_BATCH."""
    if not texts:
        return np.zeros((0, embedder.dims), dtype=np.float32)
    parts = [embedder.embed(texts[i : i + EMBED_BATCH]) for i in range(0, len(texts), EMBED_BATCH)]
    return np.asarray(np.vstack(parts), dtype=np.float32)


def centrality(vectors: np.ndarray) -> np.ndarray:
    """Each sentence's cosine with the centroid of all of them (MEAD's centroid score)."""
    centroid = vectors.mean(axis=0) if len(vectors) else np.zeros(0, dtype=np.float32)
    norm = float(np.linalg.norm(centroid))
    if not norm:
        return np.zeros(len(vectors), dtype=np.float32)
    return np.asarray(vectors @ (centroid / norm), dtype=np.float32)


def mmr(
    vectors: np.ndarray, costs: Sequence[int], *, budget: int, lam: float = LAMBDA,
    limit: int = MAX_SENTENCES, redundant: float = COVER,
) -> list[int]:  # fmt: skip
    """Indices chosen by MMR over centroid centrality, best first, within `budget` tokens.

    A sentence that would overflow the budget is passed over (a shorter one
    may still fit), and so is one that restates a chosen one (cosine >=
    `redundant`); ties go to the lower index, so the result is deterministic.
    """
    n = len(vectors)
    central = centrality(vectors)
    nearest = np.full(n, -1.0, dtype=np.float32)  # max cosine to a chosen sentence
    open_ = np.ones(n, dtype=bool)
    chosen: list[int] = []
    left = budget
    while open_.any() and len(chosen) < limit:
        gain = np.where(open_, lam * central - (1 - lam) * np.maximum(nearest, 0), -np.inf)
        best = int(np.argmax(gain))
        open_[best] = False
        if costs[best] > left:
            continue
        chosen.append(best)
        left -= costs[best]
        nearest = np.maximum(nearest, vectors @ vectors[best])
        open_ &= nearest < redundant
    return chosen


def covers(
    pool: Sequence[Sentence], vectors: np.ndarray, chosen: Sequence[int], *, cover: float = COVER
) -> list[tuple[str, ...]]:
    """For each chosen sentence, the memories it covers (its source first, then by id)."""
    if not chosen:
        return []
    sims = vectors @ vectors[list(chosen)].T  # (sentences, chosen)
    lowest: dict[str, np.ndarray] = {}
    for i, sentence in enumerate(pool):
        seen = lowest.get(sentence.source)
        lowest[sentence.source] = sims[i] if seen is None else np.minimum(seen, sims[i])
    out = []
    for j, index in enumerate(chosen):
        source = pool[index].source
        near = sorted(m for m, low in lowest.items() if low[j] >= cover and m != source)
        out.append((source, *near))
    return out


def build(
    records: Sequence[Record],
    *,
    project: str | None,
    embedder: Embedder,
    counter: TokenCounter,
    budget: int = DIGEST_TOKENS,
    summarizer: Summarizer | None = None,
    now: datetime | None = None,
    cache: VectorCache | None = None,
) -> Digest:
    """The digest of `records` (a project's memories; inactive ones are skipped).

    `cache` keeps sentence vectors between builds (only new sentences are embedded).
    """
    pool = candidates(records)
    if summarizer is not None:
        chosen = summarizer.summarize(pool, budget=budget, counter=counter)
        return Digest(project, tuple(chosen), built_at=now)
    texts = [embeddable(s.text) for s in pool]
    vectors = cache.embed(embedder, texts) if cache is not None else embed(embedder, texts)
    costs = [counter.count(s.text) + 1 for s in pool]  # +1: the line break between sentences
    picked = mmr(vectors, costs, budget=budget)
    central = centrality(vectors)
    sentences = tuple(
        Sentence(pool[i].text, pool[i].source, cov, round(float(central[i]), 4))
        for i, cov in zip(picked, covers(pool, vectors, picked), strict=True)
    )
    return Digest(project, sentences, built_at=now)


def tenant(digests: Sequence[Digest], *, bound: str | None = None) -> Digest | None:
    """One digest over several projects' digests (AltTenant): their sentences taken in
    turn, best first, projects in the given order. None when there is none to merge.

    An agent reads it as one text, so each sentence opens with the project it came
    from (`scope_label`: "[beta] ...", "[global] ..."), unless the digest is the
    `bound` project's alone: the pack item names that project already. The names are
    part of the sentences, so a pack counts them and cuts the digest with them.
    The caller passes only the digests it may see; nothing else is read.
    """
    if not digests:
        return None
    if len(digests) > 1 or digests[0].project != bound:
        digests = [_named(d) for d in digests]
    rounds = max(len(d.sentences) for d in digests)
    merged = [d.sentences[i] for i in range(rounds) for d in digests if i < len(d.sentences)]
    return Digest(
        None, tuple(merged), edited=any(d.edited for d in digests),
        stale=any(d.stale for d in digests),
    )  # fmt: skip


def scope_label(project: str | None) -> str:
    """How a tenant digest names a sentence's project: "[slug]", "[global]" for the
    global memories (as a briefing's "[global constraint]" does)."""
    return f"[{project or 'global'}]"


def _named(digest: Digest) -> Digest:
    label = scope_label(digest.project)
    sentences = tuple(replace(s, text=f"{label} {s.text}") for s in digest.sentences)
    return replace(digest, sentences=sentences)


def fingerprint(records: Sequence[Record], model: str) -> str:
    """What a digest was built from: the active memories' ids and update times, the model."""
    h = hashlib.blake2b(digest_size=16)
    h.update(model.encode())
    for r in sorted(records, key=lambda r: r.id):
        if r.item == MEMORY and r.active:
            h.update(f"|{r.id}:{r.updated.isoformat() if r.updated else ''}".encode())
    return h.hexdigest()
