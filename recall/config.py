"""Retrieval knobs: every section, its defaults, and the one way layers resolve.

Five sections, one frozen dataclass each (`SECTIONS`): recall, search,
briefing, prompt, dedup. Every knob resolves the same way (ARCHITECTURE
section 5): built-in defaults < settings (`settings.RECALL["SEARCH"]`, ...) <
environment (`RECALL_SEARCH_LIMIT`, ...) < the console's override row
(`search_config`, ...). `resolve` applies one layer: strictly for settings
and the environment (a bad value is a ConfigError whose `problems` name the
knob, the value and where it came from, so `manage.py check` reports it at
start-up), failure-soft for an override row (the bad key is skipped and
logged, the rest applies, an unreadable row falls back to the base), decoded
at use time so a save applies to the next call without a restart.

Mapping knobs (`channel_weights`) merge over the base: a layer naming one
channel keeps the others' weights. A channel runs only with a weight > 0.

The default fusion is z-score CombSUM with fts 0.6 / semantic 0.4, set by
measurement (`manage.py bench quality`, dev data): R@10 / nDCG@10 0.703 / 0.527
on LoCoMo turns (BM25 alone 0.652 / 0.486, vector 0.535 / 0.368, equal-weight
RRF k=60 0.654 / 0.482) and 0.794 / 0.665 on SciFact train (BM25 0.752 /
0.611, vector 0.731 / 0.590). RRF k=60 flattens rank gaps, so a document
middling in both legs beats BM25's rank 1 (2/65 > 1/61) and the much weaker
dense leg drags BM25's best hits down; z-scores keep the score gaps. The
optimum for the dense weight is flat between 0.4 and 0.5. RRF stays available
(`fusion="rrf"`, per-channel weights, `k`).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, TypeVar

from recall.errors import ConfigError
from recall.graph import GRAPH_LIMITS, GRAPH_WEIGHT, MAX_SEEDS
from recall.query import MAX_WORDS
from recall.routing import ROUTINGS, check_shares, default_shares

log = logging.getLogger(__name__)

FUSIONS = ("rrf", "zscore")

# Request bounds the edges (API schemas, MCP, forms) import rather than copy.
DEFAULT_BUDGET = 1000
MIN_BUDGET = 50  # an empty reply with a short warning costs about 35 tokens
# A block's (briefing, PromptRecall) least budget: with no block the reply is one line
# saying why, and the longest ("(22 tokens hold not even the briefing's wrapper (53
# tokens): ask with a larger budget)", a 64-letter tag around a 64-letter project) takes
# 22 tokens. Below it (1 was allowed) the reason an agent read passed the budget it asked.
# The least for a briefing asked for (API, MCP) and configured (the Settings page) alike:
# the setting refused under 50 what a request was given at 22.
MIN_TEXT_BUDGET = 22
TEXT_BUDGET_WHY = (
    f"{MIN_TEXT_BUDGET} tokens is the least that holds the line saying why nothing fits"
)
MAX_BUDGET = 100_000
MAX_RECALL_LIMIT = 100
DEFAULT_RECALL_LIMIT = MAX_RECALL_LIMIT  # as many as fit the budget, up to the cap
DEFAULT_ITEM_TOKENS = 500
DEFAULT_SEARCH_LIMIT = 20
MAX_SEARCH_LIMIT = 200
MAX_SEARCH_DEPTH = 500  # the deepest page a search reaches (offset bound)
MAX_K = 10_000
MAX_RECALL_DEPTH = 200  # the most candidates per channel a Recall may ask for (`k`)
MAX_WEIGHT = 1000.0
MAX_CONTEXT_TURNS = 10
# Upper bounds of the settings that had none: each far past any use (a boost of 10
# makes a starred memory outrank everything), so a typo (10^12, 1e308) is refused
# with its range rather than saved and read by every recall.
MAX_BOOST = 10.0
MAX_WORTH_WEIGHT = 2.0  # recall/worth.py: a request's `worth_weight` too
MAX_IMPORTANCE_WEIGHT = 2.0
MIN_HALF_LIFE_DAYS, MAX_HALF_LIFE_DAYS = 0.01, 36_500.0  # a quarter of an hour, a century
MAX_SESSION_WINDOW_MINUTES = 24 * 60
MAX_SESSION_TURNS = 20
MAX_SESSION_CAP = 50
MAX_DEPTH_FACTOR = 100
MAX_PROMPT_SCORE = 100.0
MAX_PROMPT_WORD_CHARS = 40  # longer words are dropped by the text planes too
MAX_PROMPT_CORPUS = 100_000
MAX_CACHE_SECONDS = 86_400  # a day
MAX_DEDUP_CANDIDATES = 100


def check_limits(config: object) -> None:
    """ValueError naming the first knob of `config` outside its declared `limits`
    (NaN and infinity included), and why the bound is where it is when the section
    says (`WHY`)."""
    why: Mapping[str, str] = getattr(type(config), "WHY", {})
    for knob, (low, high) in limits(config).items():
        value = getattr(config, knob)
        if not low <= value <= high:
            raise ValueError(out_of_bounds(knob, low, high, value, why.get(knob, "")))


def out_of_bounds(knob: str, low: float, high: float, value: object, why: str = "") -> str:
    """The one wording of a number outside its bounds: "budget must be within
    22..100000, not 10", then why the least is the least, when it has a reason."""
    said = f"{knob} must be within {_bound(low)}..{_bound(high)}, not {value}"
    below = isinstance(value, int | float) and value < low
    return f"{said}: {why}" if why and below else said


def _bound(value: float) -> str:
    """A bound as the messages write it: 36500.0 as "36500" (not "36500.0", nor
    "1e+05" as `:g` writes 100,000), 0.01 as "0.01"."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _recall_weights() -> dict[str, float]:
    return {"fts": 0.6, "semantic": 0.4, "graph": GRAPH_WEIGHT, "session": SESSION_WEIGHT}


# --- session neighbourhood (Dakera 004; recall/neighbourhood.py) ---
# The session channel's fusion weight, set by `manage.py bench quality` (README
# "Session neighbourhood"): 0.1 / 0.2 / 0.3 give R@10 0.807 / 0.813 / 0.805 on
# LoCoMo observations (off 0.799) and 0.799 / 0.800 / 0.802 on turns (off 0.797).
SESSION_WEIGHT = 0.2
# --- end session neighbourhood ---


def _search_weights() -> dict[str, float]:
    return {"identifier": 1.0, "fts": 0.6, "semantic": 0.4}


def _check_fusion(fusion: str, k: int, weights: Mapping[str, float]) -> None:
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, not {fusion!r}")
    if k < 1:
        raise ValueError(f"k must be >= 1, not {k}")
    for channel, weight in weights.items():
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"channel weight {channel}={weight} must be a finite number >= 0")


@dataclass(frozen=True, slots=True)
class RecallConfig:
    """Agent Recall (ARCHITECTURE section 4, ANCHORS seamless)."""

    # Each number knob's bounds (`check_limits`, said by the edges through `limits`);
    # `limit`, `budget` and `depth` are also held under `max_limit`, `max_budget` and
    # `max_depth`, `session_decay` above 0.
    LIMITS: ClassVar[Mapping[str, tuple[float, float]]] = {
        "k": (1, MAX_K),
        "depth": (1, MAX_RECALL_DEPTH),
        "max_depth": (1, MAX_RECALL_DEPTH),
        "limit": (1, MAX_RECALL_LIMIT),
        "max_limit": (1, MAX_RECALL_LIMIT),
        "budget": (MIN_BUDGET, MAX_BUDGET),
        "max_budget": (MIN_BUDGET, MAX_BUDGET),
        "item_tokens": (0, MAX_BUDGET),
        "meaning_floor": (0, 1),
        "session_prior": (0, MAX_WEIGHT),
        "asking_turns": (0, MAX_WEIGHT),
        **GRAPH_LIMITS,
        "session_seeds": (0, MAX_SEEDS),
        "session_window_minutes": (0, MAX_SESSION_WINDOW_MINUTES),
        "session_turns": (0, MAX_SESSION_TURNS),
        "session_cap": (0, MAX_SESSION_CAP),
        "session_decay": (0, 1),
        "context_mix": (0, 1),
        "context_turns": (0, MAX_CONTEXT_TURNS),
        "context_pool": (1, MAX_RECALL_DEPTH),
        "passage_mix": (0, 1),
        "favorite_boost": (0, MAX_BOOST),
        "usage_boost": (0, MAX_BOOST),
        "importance_weight": (0, MAX_IMPORTANCE_WEIGHT),
        "worth_weight": (0, MAX_WORTH_WEIGHT),
        "decay_half_life_days": (MIN_HALF_LIFE_DAYS, MAX_HALF_LIFE_DAYS),
        "decay_floor": (0, 1),
    }

    k: int = 60  # RRF constant
    # Candidates per leg (a request's `k`, fabriq K). 50, not seamless's or
    # fabriq's 24: on LoCoMo turns gold found at ranks 25-100 of a leg drops
    # from 8.8% to 4.2% of queries at 24 (R@10 0.687 vs 0.703, `manage.py bench
    # quality`); 50 scores the same as 100. Measured again with BM25F and
    # routing (R@10 / nDCG@10, 24 vs 50): turns 0.798 / 0.602 vs 0.797 / 0.603,
    # observations 0.800 / 0.663 vs 0.799 / 0.665, summaries 0.861 / 0.697 vs
    # 0.864 / 0.701, SciFact 0.853 / 0.734 vs 0.846 / 0.730: 24 loses nDCG on
    # every LoCoMo set, so 50 stays.
    depth: int = 50
    limit: int = DEFAULT_RECALL_LIMIT  # default hits when a caller gives none
    max_limit: int = MAX_RECALL_LIMIT
    budget: int = DEFAULT_BUDGET  # default token budget
    max_budget: int = MAX_BUDGET
    # Most tokens one item may take (its text is cut at a sentence or line end
    # beyond that; 0 = no cap), so one long memory cannot fill a whole pack; a
    # budget past four times it lets an item take a quarter (`item_cap`).
    item_tokens: int = DEFAULT_ITEM_TOKENS
    fusion: str = "zscore"  # see the module docstring
    # Channels by name: fusion weights (the graph's list is fused in once it
    # has walked from the best fused memories); 0 turns a channel off.
    channel_weights: Mapping[str, float] = field(default_factory=_recall_weights)
    semantic: bool = True  # run the semantic channel when an embedder is set
    # When no memory in scope holds any of the query's words, meaning-only hits below
    # this score are dropped (Search's calibrated floor, SearchConfig.semantic_floor):
    # "zebra quokka" filled a pack with whatever was nearest. 0 = off. The evaluation
    # sets never meet it (every query shares a word with something).
    meaning_floor: float = 0.40
    # Add this x the best fused score of a hit's session to its own
    # (`recall.fusion.session_prior`); 0 = off. Dev sets: LoCoMo turns +0.016
    # R@10 / +0.008 nDCG@10 at 0.3 (0.2 to 0.5 alike); no session, no change.
    session_prior: float = 0.3
    # Lower each conversation turn that ends by asking by this x the spread of the
    # first 30 fused scores (`recall.fusion.asking_turns`): the answer is the turn
    # after it. 0 = off. Dev sets: LoCoMo turns 0.816 / 0.628 -> 0.826 / 0.650 R@10 /
    # nDCG@10 at 1 (0.5: 0.819 / 0.643, 1.5: 0.829 / 0.653); the other sets hold no
    # turn that asks and do not move.
    asking_turns: float = 1.0
    # --- graph channel and associated memories (recall/graph.py, README "Graph") ---
    graph_seeds: int = 8  # top fused memories the graph expands from (fabriq GraphSeeds)
    graph_hops: int = 1  # edges followed from a seed, 0..3 (fabriq Hops; 0 = off)
    graph_reverse: bool = False  # also follow incoming edges (fabriq GraphReverse)
    graph_min_weight: float = 0.0  # edges lighter than this are not followed
    graph_cap: int = 10  # most memories the graph channel returns
    graph_decay: float = 0.5  # a path's score x this per hop after the first
    associated_cap: int = 10  # most associated memories (Dakera: default 10, max 10)
    associated_depth: int = 1  # hops from the main items, 1..3 (Dakera)
    associated_min_weight: float = 0.0  # edges lighter than this are not followed
    # --- end graph ---
    # --- routing and fabriq's per-request knobs (recall/routing.py, README "Routing") ---
    routing: str = "auto"  # auto | vector | bm25 | hybrid (Dakera CE-12; a request's `routing`)
    # auto: each query class's meaning share of the full-text + meaning weight
    routing_weights: Mapping[str, float] = field(default_factory=default_shares)
    max_depth: int = MAX_RECALL_DEPTH  # the cap on a request's `k` (candidates per channel)
    # --- end routing ---
    # --- session neighbourhood (recall/neighbourhood.py, README "Session neighbourhood") ---
    session_neighbours: bool = True  # expand the top episodic hits to their session neighbours
    session_seeds: int = 8  # top fused memories whose neighbourhood is read
    session_window_minutes: float = 5.0  # +- minutes by occurred_at (Dakera)
    session_turns: int = 2  # +- turns by session order (Dakera)
    session_cap: int = 10  # most neighbours per seed
    session_decay: float = 0.5  # a neighbour's score: seed score x this per turn away
    # --- end session neighbourhood ---
    # --- meaning in context (recall/context.py, README "Retrieval") ---
    # The semantic channel scores its top `context_pool` candidates (1 - mix) x
    # the turn's cosine + mix x the cosine of the turn with its `context_turns`
    # earlier turns in its session; 0 = plain cosine.
    context_mix: float = 0.5
    context_turns: int = 2
    context_pool: int = 50
    # A long memory's (recall/passages.py) cosine becomes (1 - mix) x its own +
    # mix x its best sentence's, in the same pool; 0 = its own vector only.
    passage_mix: float = 0.5
    # --- end meaning in context ---
    favorite_boost: float = 1.15
    usage_boost: float = 0.1  # score x (1 + usage_boost * utility)
    # --- importance, worth, decay (recall/worth.py, recall/decay.py, README) ---
    importance_weighted: bool = True  # score x (1 + importance_weight (importance - 0.5))
    importance_weight: float = 0.5
    worth_weight: float = 0.5  # score x (1 + worth_weight (worth - 0.5))
    decay: bool = False  # recency decay per kind (off: LoCoMo episodes lose 0.055 nDCG@10)
    decay_half_life_days: float = 7.0  # the base half-life (Dakera: one week)
    decay_floor: float = 0.5  # the least a decayed score keeps
    # --- end importance, worth, decay ---

    def __post_init__(self) -> None:
        _check_fusion(self.fusion, self.k, self.channel_weights)
        if not 1 <= self.limit <= self.max_limit:
            raise ValueError(
                f"limit must be within 1..{self.max_limit} (max_limit), not {self.limit}"
            )
        if not MIN_BUDGET <= self.budget <= self.max_budget:
            raise ValueError(
                f"budget must be within {MIN_BUDGET}..{self.max_budget} (max_budget), "
                f"not {self.budget}"
            )
        if not 1 <= self.depth <= self.max_depth:
            raise ValueError(f"depth must be within 1..max_depth ({self.max_depth})")
        check_limits(self)  # the graph knobs' too (`GRAPH_LIMITS`)
        if not 0 < self.session_decay <= 1:
            raise ValueError(f"session_decay must be within (0, 1], not {self.session_decay}")
        if self.routing not in ROUTINGS:
            raise ValueError(f"routing must be one of {', '.join(ROUTINGS)}, not {self.routing!r}")
        check_shares(self.routing_weights)

    def item_cap(self, budget: int) -> int:
        """Most tokens one item of a `budget` pack may take: `item_tokens`, or a quarter
        of a budget past four times it (0: no cap). At 500 an agent that asked for 5,000
        tokens got a 700-token runbook cut at step 9 with the pack nearly empty."""
        return max(self.item_tokens, budget // 4) if self.item_tokens else 0


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Console Search."""

    # Each number knob's bounds (`check_limits`); `limit` is held under `max_limit` too.
    LIMITS: ClassVar[Mapping[str, tuple[float, float]]] = {
        "k": (1, MAX_K),
        "depth": (1, MAX_SEARCH_DEPTH),
        "limit": (1, MAX_SEARCH_LIMIT),
        "max_limit": (1, MAX_SEARCH_LIMIT),
        "semantic_floor": (-1, 1),  # a cosine; -1 keeps every meaning-only hit
        "session_prior": (0, MAX_WEIGHT),
        "since_depth_factor": (1, MAX_DEPTH_FACTOR),
        "max_depth": (1, MAX_SEARCH_DEPTH),
        "identifier_limit": (0, MAX_SEARCH_LIMIT),
    }

    k: int = 60
    depth: int = 60
    limit: int = DEFAULT_SEARCH_LIMIT
    max_limit: int = MAX_SEARCH_LIMIT
    fusion: str = "zscore"
    # identifier pins exact id/name matches above the fused hits (0 = off).
    channel_weights: Mapping[str, float] = field(default_factory=_search_weights)
    # Drop semantic-only hits below this cosine (lexical and identifier hits are
    # exempt). seamless's 0.3 was set for OpenAI embeddings. For all-MiniLM-L6-v2,
    # measured through the real Search (tests/bench/calibrate_search_floor.py on
    # the LoCoMo dev queries and nonsense queries): at 0.40, 91% of the gold
    # memories found by meaning alone stay while 99.5% of nonsense queries show
    # no meaning-only hit; at 0.25 nonsense queries still listed 5 such hits, so
    # "zzqxv blorp" never said "no results" (tests/bench/calibrate_floor.py
    # has the pairwise view: unrelated turns of one conversation median 0.24).
    semantic_floor: float = 0.40
    session_prior: float = 0.3  # as RecallConfig.session_prior
    # With `since`, legs run this many times deeper (capped) before the date
    # post-filter, so old items cannot starve recent ones.
    since_depth_factor: int = 5
    max_depth: int = MAX_SEARCH_DEPTH
    identifier_limit: int = 5
    # Starred hits lead the page (after what was typed); a plane's raw ranking
    # (`/search/text`, `/search/vector`) turns it off: its order is its score's.
    favorites_first: bool = True

    def __post_init__(self) -> None:
        _check_fusion(self.fusion, self.k, self.channel_weights)
        if not 1 <= self.limit <= self.max_limit:
            raise ValueError(
                f"limit must be within 1..{self.max_limit} (max_limit), not {self.limit}"
            )
        check_limits(self)


TAG = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def quoted(value: object, limit: int = 60) -> str:
    """`value` as an error quotes it: its repr, cut to `limit` characters (a refused
    300-letter tag was repeated whole, twice, in the console's field error)."""
    said = repr(value)
    return said if len(said) <= limit else f"{said[: limit - 1]}\u2026"


def _check_tag(tag: str) -> None:
    """The wrapper's tag goes around every block an agent receives: a name, nothing
    that could open or close markup of its own (recall/sanitize.py guards the text
    inside it, not the wrapper)."""
    if not isinstance(tag, str) or not TAG.fullmatch(tag):
        raise ValueError(
            "tag must be a name: a letter, then letters, digits, '-', '_' or '.' "
            f"(at most 64), not {quoted(tag)}"
        )


MAX_BRIEFING_SCAN = 10_000  # newest memories a briefing reads
MAX_HARD_CAP = 10.0
MIN_LINE_CHARS, MAX_LINE_CHARS = 20, 2000


@dataclass(frozen=True, slots=True)
class BriefingConfig:
    """Session-start briefing."""

    # Each number knob's bounds, checked below and said by the edges (`limits`): below
    # MIN_TEXT_BUDGET not even the line saying why nothing fits does (a setting of 10
    # emptied every agent's briefing without a word), the least a request may ask; a
    # scan of a billion "newest" memories read every memory of a large deployment on
    # every briefing, and a 3-character line says nothing.
    LIMITS: ClassVar[Mapping[str, tuple[float, float]]] = {
        "budget": (MIN_TEXT_BUDGET, MAX_BUDGET),
        "scan_limit": (1, MAX_BRIEFING_SCAN),
        "hard_cap_factor": (1, MAX_HARD_CAP),
        "description_chars": (MIN_LINE_CHARS, MAX_LINE_CHARS),
        "relevant_hits": (0, MAX_RECALL_LIMIT),
    }
    WHY: ClassVar[Mapping[str, str]] = {"budget": TEXT_BUDGET_WHY}

    budget: int = 1500
    hard_cap_factor: float = 2.0  # nothing renders beyond budget x this
    # Newest memories read to build the index: a 1500-token budget (hard cap
    # 2x) holds about 100 index lines; older ones are only counted.
    scan_limit: int = 200
    description_chars: int = 150
    relevant_hits: int = 3  # subagent RELEVANT section
    tag: str = "memory-briefing"

    def __post_init__(self) -> None:
        check_limits(self)
        _check_tag(self.tag)


@dataclass(frozen=True, slots=True)
class PromptConfig:
    """Per-prompt lexical recall (IDF matcher)."""

    LIMITS: ClassVar[Mapping[str, tuple[float, float]]] = {  # see `check_limits`
        "min_shared_words": (1, MAX_WORDS),  # a query holds at most MAX_WORDS words
        "min_score": (0, MAX_PROMPT_SCORE),
        "max_hits": (1, MAX_RECALL_LIMIT),
        "min_word_chars": (1, MAX_PROMPT_WORD_CHARS),
        "ttl_seconds": (0, MAX_CACHE_SECONDS),
        "corpus_limit": (1, MAX_PROMPT_CORPUS),
        "description_chars": (MIN_LINE_CHARS, MAX_LINE_CHARS),
        "budget": (MIN_TEXT_BUDGET, MAX_BUDGET),
    }
    WHY: ClassVar[Mapping[str, str]] = {"budget": TEXT_BUDGET_WHY}

    min_shared_words: int = 2
    min_score: float = 1.5
    max_hits: int = 3
    min_word_chars: int = 3
    ttl_seconds: float = 30.0
    corpus_limit: int = 5000
    description_chars: int = 150
    tag: str = "memory-recall"
    budget: int = 300  # tokens the block may take when the caller names none

    def __post_init__(self) -> None:
        check_limits(self)
        _check_tag(self.tag)


@dataclass(frozen=True, slots=True)
class DedupConfig:
    """Advisory duplicate hint on write.

    Thresholds are cosines; 0 means the value calibrated for the embedding
    model in use (`recall.dedup.CALIBRATED`), per kind group: durable kinds
    (facts, conventions, ...) and episodic ones (episode, working).
    """

    LIMITS: ClassVar[Mapping[str, tuple[float, float]]] = {  # see `check_limits`
        "threshold": (0, 1),  # a cosine; 0 = calibrated
        "episodic_threshold": (0, 1),
        "candidates": (1, MAX_DEDUP_CANDIDATES),
    }

    threshold: float = 0.0
    episodic_threshold: float = 0.0
    candidates: int = 3

    def __post_init__(self) -> None:
        check_limits(self)


C = TypeVar("C", RecallConfig, SearchConfig, BriefingConfig, PromptConfig, DedupConfig)


def limits(config: object) -> Mapping[str, tuple[float, float]]:
    """The fixed bounds (least, most) of a section's number knobs, by knob, as its
    `LIMITS` declares them; a knob left out has none declared, its check in the
    section's `__post_init__` (the bounds that depend on other knobs, `max_limit`,
    are checked there as well)."""
    declared: Mapping[str, tuple[float, float]] = getattr(type(config), "LIMITS", {})
    return declared


# Section name -> its config (the override row of section S is `S_config`).
SECTIONS: dict[str, type[Any]] = {
    "recall": RecallConfig,
    "search": SearchConfig,
    "briefing": BriefingConfig,
    "prompt": PromptConfig,
    "dedup": DedupConfig,
}


def section_of(config: object) -> str:
    """The section name of a config value ("search" for a SearchConfig)."""
    for name, cls in SECTIONS.items():
        if isinstance(config, cls):
            return name
    raise ValueError(f"{type(config).__name__} is not a config section")


@dataclass(frozen=True, slots=True)
class Problem:
    """One bad value: which knob, what was given, where it came from, what is wrong.

    `knob` is "" when the whole layer is unreadable.
    """

    section: str
    knob: str
    value: object
    source: str
    message: str

    def __str__(self) -> str:
        where = f"{self.section}.{self.knob}" if self.knob else self.section
        return f"{where} = {quoted(self.value)} ({self.source}): {self.message}"


@dataclass(frozen=True, slots=True)
class Layer:
    """One source of knob values: a mapping, read under an optional key prefix.

    `source` names where a value came from; "{key}" in it is replaced by the
    key as written in the layer (e.g. "environment variable {key}").
    """

    source: str
    values: Mapping[str, Any] | str | None
    prefix: str = ""

    def where(self, key: str) -> str:
        return self.source.replace("{key}", key)


@dataclass(frozen=True, slots=True)
class Configs:
    """One resolved value per section."""

    recall: RecallConfig = field(default_factory=RecallConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    briefing: BriefingConfig = field(default_factory=BriefingConfig)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)

    def section(self, name: str) -> Any:
        if name not in SECTIONS:
            raise ValueError(f"no config section {name!r}; sections: {', '.join(SECTIONS)}")
        return getattr(self, name)


def _coerce(value: object, like: object) -> object:
    """`value` as the type of the base value `like`, or ValueError saying what is wanted."""
    if isinstance(like, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected true or false")
    if isinstance(like, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        raise ValueError("expected a whole number")
    if isinstance(like, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ValueError("expected a number")
    if isinstance(like, str):
        if isinstance(value, str):
            return value.strip()
        raise ValueError("expected text")
    if isinstance(like, Mapping):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError("expected a JSON object of numbers") from None
        if isinstance(value, Mapping) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
        ):
            return {**like, **{str(key): float(v) for key, v in value.items()}}
        raise ValueError("expected an object of numbers")
    raise ValueError(f"cannot set a {type(like).__name__}")


def _apply(base: C, layer: Layer) -> tuple[C, list[Problem]]:
    """Apply the layer's known keys one at a time; a Problem for each rejected one."""
    section = section_of(base)
    values: object = layer.values
    if isinstance(values, str):
        try:
            values = json.loads(values)
        except ValueError:
            values = None
    if not isinstance(values, Mapping):
        message = "unreadable (not a JSON object); using the values below it"
        return base, [Problem(section, "", layer.values, layer.source, message)]
    known = {f.name for f in fields(base)}
    prefix = layer.prefix.upper()
    config, problems = base, []
    for key, value in values.items():
        if not str(key).upper().startswith(prefix):
            continue
        name = str(key)[len(prefix) :].strip().lower()
        source = layer.where(str(key))
        if name not in known:
            message = f"unknown knob; {section} knobs: {', '.join(sorted(known))}"
            problems.append(Problem(section, name, value, source, message))
            continue
        try:
            changes: dict[str, Any] = {name: _coerce(value, getattr(config, name))}
            config = replace(config, **changes)
        except (ValueError, TypeError) as exc:
            problems.append(Problem(section, name, value, source, str(exc)))
    return config, problems


def resolve(base: C, layers: Sequence[Layer], *, strict: bool) -> tuple[C, tuple[Problem, ...]]:
    """`layers` applied over `base` in order (see the module docstring).

    strict: any problem raises ConfigError (its `problems` hold them all);
    otherwise bad keys are skipped, logged and returned.
    """
    config, problems = base, []
    for layer in layers:
        config, found = _apply(config, layer)
        problems += found
    if strict and problems:
        raise ConfigError("; ".join(str(p) for p in problems), tuple(problems))
    for problem in problems:
        log.warning("config %s ignored", problem)
    return config, tuple(problems)


def decode_over(base: C, row: Mapping[str, Any] | str | None) -> tuple[C, tuple[Problem, ...]]:
    """The console's override row over `base` (failure-soft; see `resolve`)."""
    if row is None or row == "":
        return base, ()
    source = f"override row {section_of(base)}_config"
    return resolve(base, [Layer(source, row)], strict=False)


def from_mapping(
    defaults: C, values: Mapping[str, Any], *, prefix: str = "", source: str = ""
) -> C:
    """One strict layer over `defaults` (settings or environment); ConfigError if bad."""
    where = source or (f"{prefix}{{key}}" if prefix else "settings")
    return resolve(defaults, [Layer(where, values, prefix)], strict=True)[0]
