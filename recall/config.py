"""Retrieval knobs: built-in defaults, the settings layer, the override row.

Layering (ARCHITECTURE section 5): these defaults < `RECALL_*` environment
variables and Django settings (`from_mapping`, strict: a bad value is a
ConfigError at start-up) < the console's runtime override row (`decode_over`,
failure-soft: bad keys are skipped with a warning, an unreadable row falls
back to the base), decoded at use time so a save applies to the next call.

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
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from recall.errors import ConfigError

log = logging.getLogger(__name__)

FUSIONS = ("rrf", "zscore")


def _weights() -> dict[str, float]:
    return {"fts": 0.6, "semantic": 0.4}


def _check_fusion(fusion: str, k: int, weights: Mapping[str, float]) -> None:
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {FUSIONS}, not {fusion!r}")
    if k < 1:
        raise ValueError(f"k must be >= 1, not {k}")
    for channel, weight in weights.items():
        if weight < 0:
            raise ValueError(f"channel weight {channel}={weight} is negative")


@dataclass(frozen=True, slots=True)
class RecallConfig:
    """Agent Recall (ARCHITECTURE section 4, ANCHORS seamless)."""

    k: int = 60  # RRF constant; also the link-neighbour score 1/(k + i)
    # Candidates per leg. 50, not seamless's 24: on LoCoMo turns gold found at
    # ranks 25-100 of a leg drops from 8.8% to 4.2% of queries at 24 (R@10 0.687
    # vs 0.703, `manage.py bench quality`); 50 scores the same as 100.
    depth: int = 50
    limit: int = 10  # default hits when a caller gives none
    max_limit: int = 100
    budget: int = 1000  # default token budget
    max_budget: int = 100_000
    fusion: str = "zscore"  # provisional, see module docstring
    channel_weights: Mapping[str, float] = field(default_factory=_weights)
    semantic: bool = True  # run the semantic leg when an embedder is set
    link_seeds: int = 5  # top active memories whose [[links]] are expanded
    favorite_boost: float = 1.15
    usage_boost: float = 0.1  # score x (1 + usage_boost * utility)

    def __post_init__(self) -> None:
        _check_fusion(self.fusion, self.k, self.channel_weights)
        if not 1 <= self.limit <= self.max_limit:
            raise ValueError(f"limit must be within 1..{self.max_limit}, not {self.limit}")
        if self.depth < 1 or self.budget < 1 or self.link_seeds < 0:
            raise ValueError("depth and budget must be >= 1, link_seeds >= 0")


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Console Search."""

    k: int = 60
    depth: int = 60
    limit: int = 20
    max_limit: int = 200
    fusion: str = "zscore"
    channel_weights: Mapping[str, float] = field(default_factory=_weights)
    # Drop semantic-only hits below this cosine. seamless's 0.3 was set for
    # OpenAI embeddings; for all-MiniLM-L6-v2 (tests/bench/calibrate_floor.py on
    # ../shared/eval) 0.25 keeps a gold memory for 96.8% of LoCoMo and 97.5% of
    # SciFact queries while dropping 54% / 93% of unrelated pairs; 0.30 already
    # loses the gold memory for 7% of LoCoMo queries. Unrelated turns of one
    # conversation score high (median 0.24), so the floor cuts noise and
    # leaves ranking to fusion.
    semantic_floor: float = 0.25
    # With `since`, legs run this many times deeper (capped) before the date
    # post-filter, so old items cannot starve recent ones.
    since_depth_factor: int = 5
    max_depth: int = 500
    identifier_limit: int = 5

    def __post_init__(self) -> None:
        _check_fusion(self.fusion, self.k, self.channel_weights)
        if not 1 <= self.limit <= self.max_limit:
            raise ValueError(f"limit must be within 1..{self.max_limit}, not {self.limit}")
        if self.depth < 1 or self.since_depth_factor < 1:
            raise ValueError("depth and since_depth_factor must be >= 1")


@dataclass(frozen=True, slots=True)
class BriefingConfig:
    """Session-start briefing."""

    budget: int = 1500
    hard_cap_factor: float = 2.0  # nothing renders beyond budget x this
    # Newest memories read to build the index: a 1500-token budget (hard cap
    # 2x) holds about 100 index lines; older ones are only counted.
    scan_limit: int = 200
    description_chars: int = 150
    relevant_hits: int = 3  # subagent RELEVANT section
    tag: str = "memory-briefing"

    def __post_init__(self) -> None:
        if self.budget < 1 or self.hard_cap_factor < 1 or self.scan_limit < 1:
            raise ValueError("budget, scan_limit >= 1 and hard_cap_factor >= 1")


@dataclass(frozen=True, slots=True)
class PromptConfig:
    """Per-prompt lexical recall (IDF matcher)."""

    min_shared_words: int = 2
    min_score: float = 1.5
    max_hits: int = 3
    min_word_chars: int = 3
    ttl_seconds: float = 30.0
    corpus_limit: int = 5000
    description_chars: int = 150
    tag: str = "memory-recall"

    def __post_init__(self) -> None:
        if self.max_hits < 1 or self.ttl_seconds < 0 or self.min_shared_words < 1:
            raise ValueError("max_hits, min_shared_words >= 1 and ttl_seconds >= 0")


@dataclass(frozen=True, slots=True)
class DedupConfig:
    """Advisory duplicate hint on write."""

    threshold: float = 0.83
    candidates: int = 3

    def __post_init__(self) -> None:
        if self.candidates < 1:
            raise ValueError("candidates must be >= 1")


C = TypeVar("C", RecallConfig, SearchConfig, BriefingConfig, PromptConfig, DedupConfig)


def _coerce(name: str, value: object, like: object) -> object:
    """`value` as the type of the base value `like`, or ValueError."""
    if isinstance(like, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
            return False
    elif isinstance(like, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
    elif isinstance(like, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            return float(value)
    elif isinstance(like, str):
        if isinstance(value, str):
            return value.strip()
    elif isinstance(like, Mapping):
        if isinstance(value, str):
            value = json.loads(value)
        if isinstance(value, Mapping) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
        ):
            return {str(key): float(v) for key, v in value.items()}
    raise ValueError(f"{name}: {value!r} is not a valid {type(like).__name__}")


def _apply(base: C, values: Mapping[str, object]) -> tuple[C, list[str]]:
    """Apply known keys one at a time; collect a message for each rejected one."""
    known = {f.name for f in fields(base)}
    config, problems = base, []
    for key, value in values.items():
        name = str(key).strip().lower()
        if name not in known:
            problems.append(f"unknown {type(base).__name__} key {key!r} ignored")
            continue
        try:
            changes: dict[str, Any] = {name: _coerce(name, value, getattr(base, name))}
            config = replace(config, **changes)
        except (ValueError, TypeError) as exc:
            problems.append(f"bad {type(base).__name__}.{name} ignored: {exc}")
    return config, problems


def decode_over(base: C, override: Mapping[str, Any] | str | None) -> tuple[C, tuple[str, ...]]:
    """The console override row applied over `base` (failure-soft).

    `override` is the row's JSON value (a mapping, or its JSON text). Absent
    keys keep the base; unknown keys and bad values are ignored with a
    warning; an unreadable row (bad JSON, not an object) falls back to the
    base. Warnings are logged and returned.
    """
    if override is None or override == "":
        return base, ()
    values: object = override
    if isinstance(override, str):
        try:
            values = json.loads(override)
        except ValueError:
            values = None
    if not isinstance(values, Mapping):
        problem = "unreadable override row (not a JSON object), using base values"
        log.warning(problem)
        return base, (problem,)
    config, found = _apply(base, values)
    for problem in found:
        log.warning(problem)
    return config, tuple(found)


def from_mapping(defaults: C, env: Mapping[str, Any], *, prefix: str = "") -> C:
    """The settings/environment layer over `defaults` (strict).

    Reads keys starting with `prefix` (case-insensitive; e.g.
    "RECALL_SEARCH_" over `os.environ`, or "" over `settings.RECALL["SEARCH"]`);
    string values are parsed (ints, floats, booleans, JSON for weights).
    Unknown keys or bad values raise ConfigError naming them, so start-up
    checks catch a misconfiguration instead of running on defaults.
    """
    wanted = {
        key[len(prefix) :]: value
        for key, value in env.items()
        if str(key).upper().startswith(prefix.upper())
    }
    config, problems = _apply(defaults, wanted)
    if problems:
        raise ConfigError("; ".join(problems))
    return config
