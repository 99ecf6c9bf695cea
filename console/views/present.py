"""Results as a person reads them: a relevance label, a why in words, plain snippets.

Relevance is one label from what a reader can check, not a bar of one
channel's number: "Exact match" (the name or id typed), "Strong match" (every
word in the name or description, or very close in meaning), "Good match"
(every word somewhere in the text, or close in meaning), "Weak match" (some
words, or related in meaning). Rows are ordered by that label first and by
the engine's order within it (favourites first among equals), so the labels
always read in rank order; the channels' own numbers sit behind a disclosure.

Meaning thresholds are cosines of all-MiniLM-L6-v2: hits found by meaning
alone below the engine's semantic floor (0.40, `SearchConfig.semantic_floor`,
calibrated by tests/bench/calibrate_search_floor.py) never reach the page;
0.45 and 0.60 are the related pairs' median and upper quartile
(tests/bench/calibrate_floor.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString

from console.browse import Text
from console.views.text import Matcher, lead_text, plain, plain_blocks, snippet_text
from recall.query import spaceless

CLOSE = 0.60
RELATED = 0.45
EXACT, STRONG, GOOD, WEAK = 4, 3, 2, 1
LABELS = {EXACT: "Exact match", STRONG: "Strong match", GOOD: "Good match", WEAK: "Weak match"}
CHANNELS = {
    "fts": "Full text",
    "semantic": "Meaning",
    "identifier": "Name or id",
    "graph": "Graph",
    "session": "Same session",
    "browse": "Browse",
}


def similarity(hit: Any) -> float | None:
    """The hit's cosine: Search sets it, Recall keeps it in the semantic provenance."""
    if getattr(hit, "similarity", None) is not None:
        return float(hit.similarity)
    raw = next((p.raw for p in hit.sources if p.channel == "semantic"), None)
    return None if raw is None else float(raw)


def meaning_only(hit: Any) -> bool:
    return {p.channel for p in hit.sources} == {"semantic"} or (
        not hit.sources and hit.source == "semantic"
    )


@dataclass(frozen=True)
class Row:
    """One result ready to render."""

    hit: Any
    title: SafeString
    snippet: SafeString
    tier: int
    why: str
    channels: list[str]
    state: str  # active | archived | superseded

    @property
    def label(self) -> str:
        return LABELS[self.tier]

    @property
    def tier_class(self) -> str:
        return LABELS[self.tier].split()[0].lower()


def _words_reason(found: set[str], head: set[str], typed: Sequence[str]) -> str:
    total = len(typed)
    if not total or not found:
        return ""
    every = {1: "the word", 2: "both words"}.get(total, f"all {total} words")
    if len(head) == total:
        return f"has {every} in its name or description"
    if len(found) == total:
        return f"has {every} in its text"
    return f"has {len(found)} of {total} words ({_listed(found, typed)})"


def _listed(found: set[str], typed: Sequence[str]) -> str:
    """The words found, in the order typed; ideographs typed together read together
    (发票, not 发, 票: each is a word of its own to the index)."""
    runs: list[str] = []
    joined = False  # the word before was found and is an ideograph or kana
    for word in typed:
        if word not in found:
            joined = False
            continue
        if joined and spaceless(word):
            runs[-1] += word
        else:
            runs.append(word)
        joined = spaceless(word)
    return ", ".join(runs)


def _meaning_reason(sim: float | None) -> str:
    if sim is None:
        return ""
    if sim >= CLOSE:
        return "is close in meaning"
    if sim >= RELATED:
        return "is related in meaning"
    return "is loosely related in meaning"


def judge(hit: Any, matcher: Matcher, text: Text | None) -> tuple[int, str, list[str]]:
    """(tier, why in words, the channels' numbers) for one hit."""
    head_text = " ".join([hit.title, hit.name, hit.description or ""])
    head = matcher.found(head_text)
    total = len(matcher.words)
    found = head if len(head) == total else head | matcher.found(text.body if text else "")
    sim = similarity(hit)
    channels = {p.channel for p in hit.sources} or {hit.source}
    if "identifier" in channels or hit.source == "identifier":
        tier = EXACT
    elif (total and len(head) == total) or (sim is not None and sim >= CLOSE):
        tier = STRONG
    elif (total and len(found) == total) or (sim is not None and sim >= RELATED):
        tier = GOOD
    else:
        tier = WEAK
    reasons = [
        "its name or id is what you typed" if tier == EXACT else "",
        _words_reason(found, head, matcher.words),
        _meaning_reason(sim) if "semantic" in channels else "",
        _graph_reason(hit) if "graph" in channels else "",
        "said next to a top result in its session" if "session" in channels else "",
        "newest of its kind" if "browse" in channels else "",
    ]
    if "fts" in channels and not found and tier != EXACT:
        reasons.append("matches a form of a word in its indexed text")
    if getattr(hit, "favorite", False):
        reasons.append("starred")
    said = [r for r in reasons if r]
    why = (", ".join(said) or "found by " + ", ".join(sorted(channels))).capitalize() + "."
    return tier, why, _numbers(hit)


def _graph_reason(hit: Any) -> str:
    hops = next((p.hops for p in hit.sources if p.channel == "graph" and p.hops), 1)
    return "linked from a top result" + (f" ({hops} links away)" if hops > 1 else "")


def _numbers(hit: Any) -> list[str]:
    lines = []
    for p in hit.sources:
        name = CHANNELS.get(p.channel, p.channel)
        if p.channel == "semantic":
            lines.append(f"{name}: rank {p.rank}, similarity {p.raw:.2f}")
        elif p.channel == "fts":
            lines.append(f"{name}: rank {p.rank}, BM25 {p.raw:.2f}")
        elif p.channel == "graph":
            hops = f"{p.hops} hop{'s' if p.hops != 1 else ''}" if p.hops is not None else "linked"
            lines.append(f"{name}: rank {p.rank}, {hops} from a top result, path score {p.raw:.3f}")
        elif p.channel == "session":  # the session neighbourhood (Dakera 004)
            turns = f"{p.hops} turn{'s' if p.hops != 1 else ''}" if p.hops is not None else "near"
            lines.append(f"{name}: rank {p.rank}, {turns} from a top result, score {p.raw:.3f}")
        elif p.channel == "identifier":
            lanes = {0: "exact id", 1: "exact name", 2: "id prefix"}
            lines.append(f"{name}: {lanes.get(int(p.raw), 'identifier')}")
        else:
            lines.append(f"{name}: rank {p.rank}")
    lines.append(f"Score {hit.score:.3f} ({hit.source})")
    return lines


@dataclass(frozen=True)
class Judged:
    hit: Any
    tier: int
    why: str
    channels: list[str]


def rank(
    hits: Sequence[Any], matcher: Matcher, texts: Mapping[str, Text], *, order: bool = True
) -> list[Judged]:
    """Each hit labelled and explained; ordered by label when `order` (see the docstring)."""
    judged = [Judged(hit, *judge(hit, matcher, texts.get(hit.id))) for hit in hits]
    if order:
        ranked = sorted(enumerate(judged), key=lambda p: (-p[1].tier, not p[1].hit.favorite, p[0]))
        judged = [j for _, j in ranked]
    return judged


def rows(
    judged: Sequence[Judged],
    matcher: Matcher,
    texts: Mapping[str, Text],
    *,
    chars: int = 220,
    lead: int = 60,
    near: bool = False,
) -> list[Row]:
    """Rows to render (titles marked, snippets cut): only for the hits shown; `near`
    starts each snippet near its first match (`text.snippet_text`)."""
    out = []
    for j in judged:
        text = texts.get(j.hit.id)
        state = text.state if text else ("active" if j.hit.active else "archived")
        snippet = _snippet(j.hit, matcher, text, chars=chars, lead=lead, near=near)
        title = matcher.mark(j.hit.title)
        out.append(Row(j.hit, title, snippet, j.tier, j.why, j.channels, state))
    return out


def _snippet(
    hit: Any, matcher: Matcher, text: Text | None, *, chars: int, lead: int, near: bool
) -> SafeString:
    description = plain(text.description if text else (hit.description or ""))
    blocks = plain_blocks(getattr(hit, "text", None) or (text.body if text else ""))
    lead_in = description.rstrip("…").strip()
    if lead_in and not (blocks and blocks[0].startswith(lead_in[:60])):
        blocks = [description, *blocks]  # unless the body already opens with it
    passage = snippet_text(blocks, matcher, chars=chars, lead=lead, near=near)
    if passage is None:
        passage = description or lead_text(blocks, chars=chars)
    return matcher.mark(passage)
