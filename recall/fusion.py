"""Fusing ranked channels into one list, keeping each hit's provenance.

Two methods, chosen by `config.fusion`:
- `rrf`: weighted Reciprocal Rank Fusion (Cormack, Clarke, Buettcher 2009).
- `zscore`: z-score CombSUM (Fox and Shaw 1994, with z-normalisation as in
  Lee 1997 / Montague and Aslam 2001), the better one on our eval data
  (ANCHORS.md, last section).
Both break ties on id, so results match across runs and backends.
`session_prior` then lifts the hits of a session that holds a strong hit, and
`asking_turns` lowers the turns that only ask.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from recall.results import Provenance
from recall.types import Candidate


@dataclass(frozen=True, slots=True)
class Fused:
    """One fused hit: its score, what each channel said, and the FTS snippet."""

    id: str
    score: float
    sources: tuple[Provenance, ...]
    snippet: str | None = None

    @property
    def channels(self) -> tuple[str, ...]:
        return tuple(p.channel for p in self.sources)

    def raw(self, channel: str) -> float | None:
        """The channel's raw score for this hit (None when it did not find it)."""
        return next((p.raw for p in self.sources if p.channel == channel), None)

    @property
    def source(self) -> str:
        """ "fused" when more than one channel found it, else that channel."""
        return "fused" if len(self.sources) > 1 else self.sources[0].channel


def _provenance(
    channels: Mapping[str, Sequence[Candidate]],
) -> tuple[dict[str, list[Provenance]], dict[str, str]]:
    seen: dict[str, list[Provenance]] = {}
    snippets: dict[str, str] = {}
    for channel in sorted(channels):
        for cand in channels[channel]:
            seen.setdefault(cand.id, []).append(Provenance(channel, cand.rank, cand.score))
            if cand.snippet is not None and cand.id not in snippets:
                snippets[cand.id] = cand.snippet
    return seen, snippets


def _ordered(
    scores: Mapping[str, float], seen: Mapping[str, list[Provenance]], snippets: Mapping[str, str]
) -> list[Fused]:
    ranked = sorted(scores, key=lambda i: (-scores[i], i))
    return [Fused(i, scores[i], tuple(seen[i]), snippets.get(i)) for i in ranked]


def rrf(
    channels: Mapping[str, Sequence[Candidate]],
    *,
    weights: Mapping[str, float],
    k: int = 60,
) -> list[Fused]:
    """Weighted Reciprocal Rank Fusion (Cormack, Clarke, Buettcher 2009).

    score(d) = sum over channels c of weights[c] / (k + rank_c(d)), ranks
    1-based; a channel without a weight weighs 1. Ties break on id so
    results match across runs and backends.
    """
    seen, snippets = _provenance(channels)
    scores = {
        doc: sum(weights.get(p.channel, 1.0) / (k + p.rank) for p in provs)
        for doc, provs in seen.items()
    }
    return _ordered(scores, seen, snippets)


def _z(scores: Sequence[float]) -> list[float]:
    """Population z-scores; a list with no spread gives zeros."""
    mean = sum(scores) / len(scores)
    spread = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if spread == 0:
        return [0.0 for _ in scores]
    return [(s - mean) / spread for s in scores]


def zscore(
    channels: Mapping[str, Sequence[Candidate]],
    *,
    weights: Mapping[str, float],
) -> list[Fused]:
    """z-score CombSUM: fused(d) = sum over channels c of weights[c] * z_c(d).

    Each channel's raw scores are z-normalised over the list it returned; a
    document the channel did not return gets that list's minimum z (it
    ranked below everything the channel kept). A list without spread (one
    hit, or hits that tie) has no z of its own: its members are all its top
    and what it did not return its bottom, so its members get the gap the
    other lists put between their top and their bottom (their mean), and
    what it did not return 0. A lone full-text match (the one memory holding
    a rare word) thus weighs what a full-text list's best weighs, and is not
    buried under meaning-only neighbours. With no list that has a spread the
    gap is 1. A channel without a weight weighs 1; an empty channel
    contributes nothing. Ties break on id.
    """
    seen, snippets = _provenance(channels)
    z_of = {channel: _z([c.score for c in cands]) for channel, cands in channels.items() if cands}
    flat = {channel for channel, z in z_of.items() if max(z) == min(z)}
    gaps = [max(z) - min(z) for channel, z in z_of.items() if channel not in flat]
    gap = sum(gaps) / len(gaps) if gaps else 1.0
    z_by_channel: dict[str, dict[str, float]] = {}
    floor: dict[str, float] = {}
    for channel, z in z_of.items():
        cands = channels[channel]
        lifted = [gap] * len(z) if channel in flat else z
        z_by_channel[channel] = {c.id: zc for c, zc in zip(cands, lifted, strict=True)}
        floor[channel] = 0.0 if channel in flat else min(z)
    # Each channel's weight, z-scores and floor looked up once, in name order (the
    # order every sum adds in), not once per document.
    summed = [
        (weights.get(channel, 1.0), z_by_channel[channel], floor[channel])
        for channel in sorted(z_by_channel)
    ]
    scores = {doc: sum(w * z.get(doc, low) for w, z, low in summed) for doc in seen}
    return _ordered(scores, seen, snippets)


def fuse(
    channels: Mapping[str, Sequence[Candidate]],
    *,
    method: str,
    weights: Mapping[str, float],
    k: int,
) -> list[Fused]:
    """Dispatch on `method` ("rrf" | "zscore"); ValueError names a bad one."""
    if method == "rrf":
        return rrf(channels, weights=weights, k=k)
    if method == "zscore":
        return zscore(channels, weights=weights)
    raise ValueError(f"unknown fusion method {method!r}")


def session_prior(
    fused: Sequence[Fused], sessions: Mapping[str, str], *, weight: float
) -> list[Fused]:
    """Each hit's score plus `weight` x the best fused score in its session.

    A session max-similarity prior (ANCHORS.md; the "document prior" of
    passage retrieval, Bendersky and Kurland 2008, "Utilizing passage-based
    language models for document retrieval", ECIR): a conversation turn is
    more likely what was asked about when its session also holds the best
    match, as when the question's words are spread over several turns. A hit
    with no session (`sessions` lacks it or says "") is its own session, so
    it gets `weight` x its own score: the prior never favours a hit for being
    in a session. Scores are the fused ones (z-score sums or RRF); the list
    comes back re-sorted, ties by id. `weight` 0 returns the list unchanged.
    """
    if weight == 0 or not fused:
        return list(fused)
    best: dict[str, float] = {}
    for f in fused:
        session = sessions.get(f.id) or ""
        if session and f.score > best.get(session, -math.inf):
            best[session] = f.score
    lifted = [  # the constructor, not dataclasses.replace: this runs per hit per Recall
        Fused(f.id, f.score + weight * best.get(sessions.get(f.id) or "", f.score), f.sources,
              f.snippet)
        for f in fused
    ]  # fmt: skip
    return sorted(lifted, key=lambda f: (-f.score, f.id))


# The spread `asking_turns` measures: the first 30 fused scores, about the
# candidates a Recall's top 10 is chosen among.
SPREAD_TOP = 30


def asking_turns(fused: Sequence[Fused], asking: Collection[str], *, weight: float) -> list[Fused]:
    """Each hit in `asking` lowered by `weight` x the spread of the fused scores.

    A conversation turn that asks ("What got you into running?") shares the
    question's words and meaning, and so outranks the turn that answers it,
    which is what was asked about (of LoCoMo's 1,349 gold turns, 122 end by
    asking, often news closed by a question). The spread is the population
    standard deviation of the first `SPREAD_TOP` fused scores, so the same
    weight fits z-score sums and RRF. `asking` holds the ids whose turn text
    ends with a question mark (`recall.types.asks`). Dev sets (2026-12-07,
    `manage.py bench quality`, R@10 / nDCG@10): LoCoMo turns 0.816 / 0.628
    -> 0.826 / 0.650 at weight 1, adversarial questions (category 5) 0.647
    -> 0.691 nDCG; the other sets hold no such turns and do not move (README
    "Turns that ask"). Applied once the session neighbours are fused in
    (`recall.expansion.refuse`). The list comes back re-sorted, ties by id;
    `weight` 0 returns it unchanged.
    """
    if weight == 0 or not fused or not asking:
        return list(fused)
    top = [f.score for f in fused[:SPREAD_TOP]]
    mean = sum(top) / len(top)
    spread = math.sqrt(sum((s - mean) ** 2 for s in top) / len(top))
    if spread == 0 or not any(f.id in asking for f in fused):
        return list(fused)
    lowered = [
        Fused(f.id, f.score - weight * spread, f.sources, f.snippet) if f.id in asking else f
        for f in fused
    ]
    return sorted(lowered, key=lambda f: (-f.score, f.id))
