"""Routing (Dakera CE-12): which rank channels a Recall runs, and at what weights.

`routing` is one of ROUTINGS:

- `hybrid`: the merged `channel_weights` as they are (full text and meaning);
- `bm25`: full text alone, at the full-text + meaning total; the query is
  never embedded (the semantic channel is not selected);
- `vector`: meaning alone, at the same total;
- `auto`: `classify` names the query's class and the full-text + meaning
  total is split by that class's meaning share (`routing_weights`, 0-1;
  0 = full text alone, never embedded). Other channels (the graph) keep
  their weights, so the split never changes how much a link counts. When
  the request's own `channel_weights` name full text or meaning, or either
  is off, the weights stay as they are (the caller's choice wins).

Classes, tried in this order (`classify`): `identifier` (one token that
looks like an id, a slug, a path or code: `chroma-boot-race`, `01J...`,
`src/app.py`, `parseArgs`), `temporal` (asks when, or names a date, a
month, a weekday or a relative time), `keyword` (at most KEYWORD_WORDS
words, no question word, no question mark, no function words), `natural`
(everything else: a question or a sentence). Dakera's adaptive weights are
the starting point (keyword 0.25, hybrid 0.5, semantic 0.75, temporal 0);
the shipped shares are what `manage.py bench quality` supported on the
development sets (README "Routing").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from recall.query import clean, looks_like_identifier, words

AUTO, VECTOR, BM25, HYBRID = "auto", "vector", "bm25", "hybrid"
ROUTINGS = (AUTO, VECTOR, BM25, HYBRID)
IDENTIFIER, TEMPORAL, KEYWORD, NATURAL = "identifier", "temporal", "keyword", "natural"
CLASSES = (IDENTIFIER, TEMPORAL, KEYWORD, NATURAL)
KEYWORD_WORDS = 4
FTS, SEMANTIC = "fts", "semantic"  # the channel names (recall.channels), without the import

# The request fields this module reads (the edges pass them through as a block).
FIELDS = ("routing",)


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CODE = re.compile(r"[/\\:#@]|[a-z][A-Z]|\w\.\w|\(\)|^[A-Z0-9_]{3,}$")
_MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
_DAYS = "monday tuesday wednesday thursday friday saturday sunday weekend"
_RELATIVE = (
    "when yesterday today tomorrow tonight ago recently lately earlier "
    "date dates year years month months week weeks day days"
)
_TEMPORAL_WORDS = frozenset((_MONTHS + " " + _DAYS + " " + _RELATIVE).split()) - {"may"}
_TEMPORAL_PHRASE = re.compile(
    r"\b(how long|what time|since when|last (night|time)|first time|(19|20)\d\d|"
    r"\d{4}-\d\d(-\d\d)?|\d{1,2}/\d{1,2}(/\d{2,4})?)\b",
    re.IGNORECASE,
)
_QUESTION = _set(
    "who whom whose what which where why how is are was were do does did can could "
    "should would will shall has have had"
)
_FUNCTION = _set(
    "the a an of to in on at for with by from about into over and or but not "
    "i you he she it we they me him her us them my your his its our their this that "
    "these those be been being am"
)


def default_shares() -> dict[str, float]:
    """Each class's meaning share of the full-text + meaning weight (README "Routing")."""
    return {IDENTIFIER: 0.0, TEMPORAL: 0.4, KEYWORD: 0.25, NATURAL: 0.4}


def classify(text: str) -> str:
    """The query's class (see the module docstring)."""
    query = clean(text)
    if looks_like_identifier(query) or (" " not in query and _CODE.search(query)):
        return IDENTIFIER
    found = words(query)
    if _TEMPORAL_PHRASE.search(query) or any(w in _TEMPORAL_WORDS for w in found):
        return TEMPORAL
    if (
        len(found) <= KEYWORD_WORDS
        and "?" not in query
        and not any(w in _QUESTION or w in _FUNCTION for w in found)
    ):
        return KEYWORD
    return NATURAL


@dataclass(frozen=True, slots=True)
class Route:
    """How one Recall ranks: the mode asked, the query's class (auto only), the weights."""

    mode: str
    decision: str | None
    weights: dict[str, float]

    def as_debug(self) -> dict[str, object]:
        return {"mode": self.mode, "class": self.decision, "weights": dict(self.weights)}


def route(
    mode: str,
    text: str,
    weights: Mapping[str, float],
    shares: Mapping[str, float],
    *,
    given: Mapping[str, float] | None = None,
) -> Route:
    """The channel weights for `mode` on `text` over the merged `weights`.

    `given` is the request's own `channel_weights`: when it names full text
    or meaning, `auto` keeps the weights as they are (the caller chose them),
    as it does when either channel is off (weight 0); the class is still named.
    """
    out = dict(weights)
    fts, semantic = out.get(FTS, 0.0), out.get(SEMANTIC, 0.0)
    decision: str | None = None
    if mode == HYBRID:
        return Route(mode, None, out)
    if mode == BM25:
        share = 0.0
    elif mode == VECTOR:
        share = 1.0
    else:
        decision = classify(text)
        chosen = given is not None and (FTS in given or SEMANTIC in given)
        if chosen or fts <= 0 or semantic <= 0:
            return Route(mode, decision, out)
        share = shares[decision]
    total = fts + semantic
    out[FTS], out[SEMANTIC] = total * (1 - share), total * share
    return Route(mode, decision, out)


def check_shares(shares: Mapping[str, float]) -> None:
    """ValueError for a class that is not one of CLASSES or a share outside 0-1."""
    for name, share in shares.items():
        if name not in CLASSES:
            raise ValueError(f"no query class {name!r}; classes: {', '.join(CLASSES)}")
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"routing share {name}={share} must be within 0..1")
    missing = set(CLASSES) - set(shares)
    if missing:
        raise ValueError(
            f"routing_weights needs every class; missing: {', '.join(sorted(missing))}"
        )
