"""BM25F over a memory's own text and its session neighbours' text.

The lexical score of the full-text channel (Robertson, Zaragoza and Taylor
2004, "Simple BM25 extension to multiple weighted fields", CIKM; the
per-stream length normalisation of Zaragoza et al. 2004, "Microsoft
Cambridge at TREC-13"):

    tf~(t, d)  = sum over streams s of  w_s * tf_s(t, d) / (1 - b + b * len_s(d) / avglen)
    score(d)   = sum over distinct query terms t of  qw(t) * idf(t) * tf~ * (k1 + 1) / (tf~ + k1)
    idf(t)     = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))      (Lucene's, never negative)
    qw(t)      = idf(t) ** query_idf_power

Stream 0 is the item's own visible text (weight 1); streams 1 and 2 are the
text of the turns at distance 1 and 2 before it in its session (weights 0.5
and 0.35), so a turn like "Yes, last Tuesday" is found by what was said just
before it. `avglen` is the mean length of stream 0 over the index: a
neighbour stream is another item's own text, so the same average applies.

Defaults, chosen on the development sets (`manage.py bench quality`, see the
README's retrieval section): k1 1.2; b 0.4 (short memories want weak length
normalisation: 0.75 costs 0.02 to 0.03 nDCG@10 on LoCoMo turns); each query
term counted once, weighted idf^1 (first idf^0.5: +0.02 nDCG@10 on turns, +0.01
on observations over none; measured again once the idf leaned on English at
large, 2026-12-07, fused default R@10 / nDCG@10 at 0.5 -> 1: turns 0.810 / 0.622
-> 0.816 / 0.628, observations 0.819 / 0.688 -> 0.822 / 0.692, SciFact 0.860 /
0.736 -> 0.861 / 0.739, summaries 0.888 / 0.744 -> 0.887 / 0.741); neighbour
weights 0.5 / 0.35 as in ANCHORS.md. Summing the
streams' term frequencies before saturation (BM25F) instead of summing
per-stream BM25 scores is worth +0.02 R@10 on turns: a term said in the turn
and again just before it is not evidence twice over.

The collection statistics (N, df, avglen) are the caller's scope's
(`recall.indexes.scope_statistics`), and a small scope's counts lean on a
prior of English at large (`recall.background`): `prior_rows` rows of general
text of the scope's mean length are added to N, and to each df the share of
them that would hold the term (200 rows, chosen on the development sets).

Term proximity (the ordered windows of Metzler and Croft 2005, "A Markov
random field model for term dependencies", SIGIR): each pair of words next to
each other in the query ("support group") is one more term, found where its
second word follows its first within `window` tokens in a stream, weighted
`proximity` x the lighter of its two words' weights, and saturated and
length-normalised like any term. So a memory that says "support group" ranks
above one that says "support" in one place and "group" in another. Chosen on
the development sets at 0.3 and 4 tokens: LoCoMo observations +0.006 / +0.003
R@10 / nDCG@10 of the fused default, turns +0.001 / +0.002 (full text alone
+0.004 / +0.004), SciFact +0.001 / +0.001, summaries unchanged; 0.6 and
adjacent pairs only measured no better, either order worse on turns. A pair
with a word far lighter than the query's heaviest (`PAIR_FLOOR`) is left out.
The cold path (`recall.timetravel`) counts terms without their order, so it
scores without pairs.

Passages (`score_document`): a memory whose own text is longer than a passage
(`passage` x avglen tokens, at least PASSAGE_MIN) also scores as its best
passage, a run of that many tokens starting at one of its query terms, and
keeps the higher of the two scores. Length normalisation is right that a long
text holding a word by chance says less than a short one built around it, but
over a whole 50 KB runbook it divides a term's weight by a hundred: the one
runbook holding the rare identifier asked for (`glacier-billing-zq81`) ranked
below every short memory holding one of its commoner words. Read as its best
passage it is a text of ordinary length holding all of them, and ranks
first. Fixed-length passages starting anywhere are the passages of Kaszkiel
and Zobel 1997 ("Passage retrieval revisited", SIGIR), the best passage
standing for the document as in Callan 1994 ("Passage-level evidence in
document retrieval", SIGIR). Twice the average length: a passage as long as
two memories. Not tuned: the development sets hold few texts that long, and
their figures barely move (README, "A long text is read by its best passage").

Sentence-sized windows (`score_document`, `sentence` 20 tokens, `sentence_mix`
0.5): an own text longer than two windows (40 tokens) scores 0.5 x the above +
0.5 x its best run of 20 tokens starting at a query term, the neighbour streams
counted whole beside it; a text of a sentence or two is read whole. A
question names one fact and a long memory (a session summary, an abstract)
holds many: the whole-text score cannot tell a summary that says "adopt" and
"puppy" in one sentence from one that says them in two unrelated ones, the
window can. The lexical twin of the meaning channel's best sentence
(`recall.passages`, the same 0.5 mix); a fixed window rather than the text's
sentences, as the stored tokens keep no punctuation. Terms lighter than
`PAIR_FLOOR` of the heaviest ("the", "of") count at their mean. Measured on the
development sets: LoCoMo summaries fused R@10 / nDCG@10 0.881 / 0.732 -> 0.888
/ 0.744 (windows of 10 to 30 tokens and mixes 0.3 to 0.7 all 0.739 to 0.745),
turns 0.812 / 0.619 -> 0.816 / 0.624; read in every turn over 20 tokens, the
turns lost 0.005 R@10 at Recall's depth of 50 (README "A long memory is also
read by its best sentence-sized window").
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from recall.background import Prior

PAIR_FLOOR = 0.05  # of the heaviest query term's weight (`pairs`)
PASSAGE_MIN = 64  # tokens: the shortest passage `score_document` reads


@dataclass(frozen=True, slots=True)
class Bm25F:
    """The scorer's parameters (see the module docstring)."""

    k1: float = 1.2
    b: float = 0.4
    query_idf_power: float = 1.0
    stream_weights: tuple[float, ...] = (1.0, 0.5, 0.35)
    proximity: float = 0.3
    window: int = 4
    passage: float = 2.0  # a passage's length in average lengths (0: whole texts only)
    prior_rows: float = 200.0  # rows of general English a scope's idf leans on (0: none)
    sentence: int = 20  # tokens: a longer own text is also read by its best window this long
    sentence_mix: float = 0.5  # that window's share of the score (0: whole texts only)

    def __post_init__(self) -> None:
        if self.k1 < 0 or not 0 <= self.b <= 1 or self.query_idf_power < 0:
            raise ValueError(f"need k1 >= 0, 0 <= b <= 1, query_idf_power >= 0: {self}")
        if not self.stream_weights or any(w < 0 for w in self.stream_weights):
            raise ValueError(f"stream weights must be >= 0 and not empty: {self.stream_weights}")
        if self.proximity < 0 or self.window < 1 or self.passage < 0 or self.prior_rows < 0:
            raise ValueError(
                f"need proximity >= 0, window >= 1, passage >= 0, prior_rows >= 0: {self}"
            )
        if self.sentence < 0 or not 0 <= self.sentence_mix <= 1:
            raise ValueError(f"need sentence >= 0, 0 <= sentence_mix <= 1: {self}")


def idf(df: float, n: float) -> float:
    """ln(1 + (N - df + 0.5) / (df + 0.5)): rare terms weigh more, none weighs < 0."""
    return math.log(1 + (max(n - df, 0) + 0.5) / (df + 0.5))


def term_weights(
    dfs: Mapping[str, int], n: int, params: Bm25F, prior: Prior | None = None
) -> dict[str, float]:
    """qw(t) * idf(t) per query term; terms no document holds (df 0) are left out.

    With a `prior` (`recall.background`), each df and N also count
    `params.prior_rows` rows of general English: df + rows x share(t), N + rows."""
    rows = params.prior_rows if prior is not None else 0.0
    out = {}
    for term, df in dfs.items():
        if df > 0:
            share = prior.share(term) if prior is not None else 0.0
            value = idf(df + rows * share, n + rows)
            out[term] = value ** (1 + params.query_idf_power)
    return out


def pairs(sequence: Sequence[str], weights: Mapping[str, float]) -> list[tuple[str, str]]:
    """The query's neighbouring terms as ordered pairs, each once.

    A pair needs two different terms that both have a weight (some document
    holds them), each at least `PAIR_FLOOR` of the query's heaviest term's:
    a pair with a word nearly every memory holds ("of the", "the group")
    would add almost nothing to a score and cost a scan of every stream.
    """
    if not weights:
        return []
    floor = PAIR_FLOOR * max(weights.values())
    out = [(a, b) for a, b in zip(sequence, sequence[1:], strict=False) if a != b]
    return [p for p in dict.fromkeys(out) if min(weights.get(t, 0.0) for t in p) >= floor]


def pair_key(pair: tuple[str, str]) -> str:
    """A pair as one term of `score` (no token holds a space)."""
    return f"{pair[0]} {pair[1]}"


def pair_weights(
    found: Sequence[tuple[str, str]], weights: Mapping[str, float], params: Bm25F
) -> dict[str, float]:
    """`weights` plus each pair's: `proximity` x the lighter of its two terms'.

    The caller decides whether pairs are sought at all (proximity 0: none, so
    no stream's positions are read)."""
    out = dict(weights)
    for a, b in found:
        out[pair_key((a, b))] = params.proximity * min(weights[a], weights[b])
    return out


def score(
    counts: Sequence[Mapping[str, int]],
    lengths: Sequence[int],
    weights: Mapping[str, float],
    *,
    avglen: float,
    params: Bm25F,
) -> float:
    """BM25F of one document from its streams (own text first).

    `counts[s]` holds the frequency of query terms in stream s (absent: 0),
    `lengths[s]` that stream's length in tokens; `weights` are `term_weights`
    (qw * idf per query term). Streams beyond `params.stream_weights` are
    ignored.
    """
    k1 = params.k1
    tf = _frequencies(counts, lengths, weights, avglen=avglen, params=params)
    return sum(weights[t] * v * (k1 + 1) / (v + k1) for t, v in tf.items())


def _frequencies(
    counts: Sequence[Mapping[str, int]],
    lengths: Sequence[int],
    weights: Mapping[str, float],
    *,
    avglen: float,
    params: Bm25F,
    first: int = 0,
) -> dict[str, float]:
    """tf~ per query term over the streams from `first` on (see the module docstring)."""
    tf: dict[str, float] = {}
    streams = zip(counts[first:], lengths[first:], params.stream_weights[first:], strict=False)
    for found, length, w in streams:
        if not found or w == 0:
            continue
        norm = w / _norm(length, avglen, params)
        for term, n in found.items():
            if n and term in weights:
                tf[term] = tf.get(term, 0.0) + n * norm
    return tf


def _norm(length: float, avglen: float, params: Bm25F) -> float:
    """BM25's length normalisation: 1 - b + b * length / avglen."""
    return 1 - params.b + params.b * length / (avglen if avglen > 0 else 1.0)


def passage_length(avglen: float, params: Bm25F) -> int:
    """How many tokens a passage holds (`score_document`)."""
    return max(PASSAGE_MIN, round(params.passage * avglen))


def score_document(
    stored: str,
    weights: Mapping[str, float],
    pairs: Sequence[tuple[str, str]],
    *,
    avglen: float,
    params: Bm25F,
) -> float:
    """BM25F of an `encode`d document, or of its best passage when higher, mixed
    with its best sentence-sized window when its own text is longer than two.

    `weights` are `pair_weights` (the query's terms and the `pairs` sought);
    see the module docstring for passages and windows. Passages are read only
    in a text longer than a passage that holds a sparse query term: one it
    holds less than once a passage on average. A denser term (or pair) is
    counted at its mean in every passage: spread that evenly, no passage holds
    it more than the whole text does, and reading its every place would cost
    milliseconds. One document's `Scorer(...).score(stored)`: a caller scoring
    many documents for one query makes the `Scorer` once.
    """
    return Scorer(weights, pairs, avglen=avglen, params=params).score(stored)


class Scorer:
    """`score_document` for one query: what does not depend on the document (its
    terms, their finder, the pairs sought, the passage's and the window's length
    normalisation) worked out once for the 50 to 70 documents a full-text
    search re-scores, and each document's own-text term places found once for
    its pair counts, its passages and its window (each found them again: three
    scans of the same text). At 20,000 memories the re-score was 2.1 ms of a
    9.3 ms cached Recall's main-thread time (docs/FIGURES.md, issue 16). The
    scores are the same floats, summed in the same order."""

    __slots__ = (
        "avglen", "distinct", "every", "heavy", "one", "pairs", "params", "passage_share",
        "present", "span", "terms", "weights", "window_share",
    )  # fmt: skip

    def __init__(
        self,
        weights: Mapping[str, float],
        pairs: Sequence[tuple[str, str]],
        *,
        avglen: float,
        params: Bm25F,
    ) -> None:
        self.weights, self.pairs, self.avglen, self.params = weights, pairs, avglen, params
        self.terms = [t for t in weights if " " not in t]
        self.distinct = [t for t in dict.fromkeys(self.terms) if t]  # as `count_terms` reads
        self.one = f" {self.distinct[0]} " if len(self.distinct) == 1 else None
        self.every = _finder(tuple(self.distinct)) if self.distinct else None
        self.present = [p for p in pairs if p[0] in self.distinct and p[1] in self.distinct]
        self.span = passage_length(avglen, params)
        self.passage_share = params.stream_weights[0] / _norm(self.span, avglen, params)
        self.window_share = params.stream_weights[0] / _norm(params.sentence, avglen, params)
        floor = PAIR_FLOOR * max(weights.values(), default=0.0)
        self.heavy = tuple(t for t in self.distinct if weights[t] >= floor)

    def score(self, stored: str) -> float:
        """`score_document` of the `encode`d document `stored`."""
        doc = self._counted(stored)
        best = _best_passage(self, doc)
        mix, span, lengths = self.params.sentence_mix, self.params.sentence, doc.lengths
        if mix == 0 or span == 0 or not lengths or lengths[0] <= 2 * span:
            return best  # a sentence or two: read whole
        return (1 - mix) * best + mix * _best_window(self, doc)

    def _counted(self, stored: str) -> _Counted:
        """`count_terms` of `stored`, keeping the own text's places where a pair's
        count read them."""
        head, *streams = stored.split("\n")
        lengths = [int(n) for n in head.split()]
        doc = _Counted(self, streams[0] if streams else "", lengths)
        if not self.distinct:
            doc.counts = [{} for _ in streams]
        elif self.one is not None:  # one scan either way: str.count is the fastest
            key, term = self.one, self.distinct[0]
            doc.counts = [{term: n} if (n := text.count(key)) else {} for text in streams]
        else:
            finder, window = self.every, self.params.window
            assert finder is not None
            for s, text in enumerate(streams):
                found: dict[str, int] = {}
                for term in finder.findall(text):
                    found[term] = found.get(term, 0) + 1
                both = [p for p in self.present if p[0] in found and p[1] in found]
                if both:  # positions only where a pair can be
                    at = _positions(text, finder)
                    if s == 0:
                        doc.at = at
                    found |= _pair_counts(at, both, window)
                doc.counts.append(found)
        return doc


class _Counted:
    """One document as `Scorer.score` read it, for its best passage and its best window:
    its own text, each stream's counts and length, and, found when first asked, its own
    text's term places (`places`) and the neighbour streams' frequencies (`rest`)."""

    __slots__ = ("_rest", "at", "counts", "lengths", "own", "scorer")

    def __init__(self, scorer: Scorer, own: str, lengths: list[int]) -> None:
        self.scorer, self.own, self.lengths = scorer, own, lengths
        self.counts: list[dict[str, int]] = []
        self.at: dict[str, list[int]] | None = None
        self._rest: dict[str, float] | None = None

    def places(self) -> dict[str, list[int]]:
        """Each query term's token places in the own text (`_positions`), found once."""
        if self.at is None:
            every = self.scorer.every
            self.at = _positions(self.own, every) if every is not None else {}
        return self.at

    def rest(self) -> dict[str, float]:
        """The neighbour streams' weighted, normalised frequencies of each key."""
        if self._rest is None:
            s = self.scorer
            self._rest = _frequencies(
                self.counts, self.lengths, s.weights, avglen=s.avglen, params=s.params, first=1
            )
        return self._rest


def _best_passage(scorer: Scorer, doc: _Counted) -> float:
    """BM25F of the whole document, or of its best passage when higher (`score_document`)."""
    weights, avglen, params = scorer.weights, scorer.avglen, scorer.params
    counts, lengths = doc.counts, doc.lengths
    whole = score(counts, lengths, weights, avglen=avglen, params=params)
    span = scorer.span
    own = counts[0] if counts else {}
    sparse = [t for t in scorer.terms if 0 < own.get(t, 0) * span <= lengths[0]]
    if params.passage == 0 or not sparse:
        return whole
    rest = doc.rest()
    pairs = [p for p in scorer.pairs if p[0] in sparse and p[1] in sparse]
    found = _passage_counts(
        doc.own, sparse, pairs, span=span, window=params.window, places=doc.places()
    )
    k1, share = params.k1, scorer.passage_share
    mean = {key: own.get(key, 0) * span / lengths[0] for key in weights}
    best = whole
    for passage in found:
        value = 0.0
        for key, weight in weights.items():
            tf = share * passage.get(key, mean[key]) + rest.get(key, 0.0)
            value += weight * tf * (k1 + 1) / (tf + k1)
        best = max(best, value)
    return best


def _best_window(scorer: Scorer, doc: _Counted) -> float:
    """BM25F of the best run of `params.sentence` own tokens starting at a query
    term, beside the neighbour streams whole; with no query term in its own
    text, the neighbour streams alone.

    The terms and pairs that weigh at least `PAIR_FLOOR` of the heaviest are
    counted where they are; a lighter one ("the", "of") is counted at its mean,
    as passages count dense terms: it hardly moves a window, and finding its
    every place in an abstract cost more than the rest. One pass over the
    places: the window slides from one to the next, and only what enters or
    leaves it changes its score."""
    weights, pairs, params = scorer.weights, scorer.pairs, scorer.params
    counts, lengths = doc.counts, doc.lengths
    rest = doc.rest()
    k1, span = params.k1, params.sentence
    share = scorer.window_share
    own = counts[0] if counts else {}
    placed = {t for t in scorer.heavy if own.get(t)}
    mean = {key: own.get(key, 0) * span / lengths[0] for key in weights if key not in placed}

    def gain(key: str, n: float) -> float:
        tf = share * n + rest.get(key, 0.0)
        return weights[key] * tf * (k1 + 1) / (tf + k1) if tf else 0.0

    base = sum(gain(key, n) for key, n in mean.items())
    if not placed:
        return base
    if len(placed) == 1 and own[next(iter(placed))] == 1:  # one place: its window is the best
        return base + gain(next(iter(placed)), 1)
    # The places from the query's one finder (as passages read them): splitting the
    # whole text into tokens to find a few cost a third of the full-text leg's rescoring.
    at = {term: found for term, found in doc.places().items() if term in placed}
    starts = sorted({i for found in at.values() for i in found})
    for a, b in pairs:
        if a in at and b in at:
            after, reach = at[b], params.window
            ahead = [i for i in at[a] if bisect_right(after, i + reach) > bisect_right(after, i)]
            if ahead:
                at[pair_key((a, b))] = ahead
                base -= gain(pair_key((a, b)), mean.pop(pair_key((a, b)), 0.0))
    steps: dict[str, list[float]] = {}  # per key, the gain of its n-th place in the window

    def step(key: str, n: int) -> float:
        found = steps.setdefault(key, [0.0])
        while len(found) <= n:
            found.append(gain(key, len(found)) - gain(key, len(found) - 1))
        return found[n]

    best = value = base + sum(gain(key, 0) for key in at)
    events = sorted((i, key) for key, found in at.items() for i in found)
    inside: dict[str, int] = {}
    low = high = 0
    for start in starts:
        while high < len(events) and events[high][0] < start + span:
            key = events[high][1]
            inside[key] = n = inside.get(key, 0) + 1
            value += step(key, n)
            high += 1
        while events[low][0] < start:
            key = events[low][1]
            value -= step(key, inside[key])
            inside[key] -= 1
            low += 1
        best = max(best, value)
    return best


def _passage_counts(
    text: str,
    terms: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    *,
    span: int,
    window: int,
    finder: re.Pattern[str] | None = None,
    places: Mapping[str, list[int]] | None = None,
) -> list[dict[str, int]]:
    """Per passage of `span` tokens starting at one of `terms`, the count of each
    of `terms` and `pairs` in it (a pair counts where its first word is).

    The best passage starts at one of `terms` (one starting before its first
    holds no more of them), so these are all the passages worth scoring.
    When the terms all lie within one passage, that one is all there is.
    `places` are the text's places of the query's every term (`_positions` with
    `_finder` of them), or `finder` finds them: which terms are sparse differs
    from text to text, and a pattern compiled for each set (3.7 a Recall, about
    50 us each) cost more than reading the other terms' places too; a token's
    position does not depend on which terms are sought.
    """
    wanted = set(terms)
    if places is None:
        if finder is None:
            raise ValueError("_passage_counts needs the places or their finder")
        places = _positions(text, finder)
    at = {term: found for term, found in places.items() if term in wanted}
    where = dict(at)
    for a, b in pairs:
        if a in at and b in at:
            after = at[b]
            ahead = [i for i in at[a] if bisect_right(after, i + window) > bisect_right(after, i)]
            if ahead:
                where[pair_key((a, b))] = ahead
    starts = sorted({i for found in at.values() for i in found})
    if starts[-1] - starts[0] < span:
        starts = starts[:1]
    return [
        {key: n for key, found in where.items() if (n := _between(found, start, start + span))}
        for start in starts
    ]


def _between(sorted_positions: list[int], low: int, high: int) -> int:
    """How many of `sorted_positions` lie in [low, high)."""
    return bisect_left(sorted_positions, high) - bisect_left(sorted_positions, low)


def encode(streams: Sequence[Sequence[str]]) -> str:
    """Token streams as stored text: their lengths, then each stream on its own line.

    Each token is wrapped in spaces, so `count_terms` counts a term with one
    `str.count` (adjacent tokens are two spaces apart: no match overlaps).
    """
    head = " ".join(str(len(tokens)) for tokens in streams)
    return "\n".join([head, *("".join(f" {t} " for t in tokens) for tokens in streams)])


def count_terms(
    stored: str, terms: Sequence[str], pairs: Sequence[tuple[str, str]] = (), window: int = 4
) -> tuple[list[dict[str, int]], list[int]]:
    """Per stream, the frequency of each of `terms` that occurs, and the stream lengths.

    A pair (a, b) of `pairs` counts, under `pair_key`, each a followed by b
    within `window` tokens; a stream's token positions are read only when it
    holds both terms of some pair.
    """
    head, *streams = stored.split("\n")
    lengths = [int(n) for n in head.split()]
    terms = [t for t in dict.fromkeys(terms) if t]
    if not terms:
        return [{} for _ in streams], lengths
    if len(terms) == 1:  # one scan either way: str.count is the fastest
        key = f" {terms[0]} "
        return [{terms[0]: n} if (n := text.count(key)) else {} for text in streams], lengths
    finder = _finder(tuple(terms))  # one scan per stream for every term (2.5x on 4 terms)
    present = [p for p in pairs if p[0] in terms and p[1] in terms]
    counts = []
    for text in streams:
        found: dict[str, int] = {}
        for term in finder.findall(text):
            found[term] = found.get(term, 0) + 1
        both = [p for p in present if p[0] in found and p[1] in found]
        if both:  # positions only where a pair can be
            found |= _pair_counts(_positions(text, finder), both, window)
        counts.append(found)
    return counts, lengths


def _positions(text: str, finder: re.Pattern[str]) -> dict[str, list[int]]:
    """Each term's token positions in an encoded stream, in one scan: a match's
    position is the number of token gaps (two spaces) before it."""
    at: dict[str, list[int]] = {}
    position, last = 0, 0
    for match in finder.finditer(text):
        start = match.start() + 1
        position += text.count("  ", last, start)
        last = start
        at.setdefault(match.group(1), []).append(position)
    return at


def _pair_counts(
    at: Mapping[str, list[int]], pairs: Sequence[tuple[str, str]], window: int
) -> dict[str, int]:
    """Per pair (a, b), how often b follows a within `window` tokens."""
    out = {}
    for a, b in pairs:
        after = at[b]
        n = sum(1 for i in at[a] if bisect_right(after, i + window) > bisect_right(after, i))
        if n:
            out[pair_key((a, b))] = n
    return out


@lru_cache(maxsize=256)
def _finder(terms: tuple[str, ...]) -> re.Pattern[str]:
    """Any of `terms` as a whole token (the query's terms: compiled once)."""
    return re.compile(" (" + "|".join(re.escape(t) for t in terms) + ") ")
