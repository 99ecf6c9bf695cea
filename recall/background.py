"""How common a word is in English at large: the prior of a small scope's IDF.

BM25's idf reads how many of the rows a search may see hold a query word. The
full-text planes count that over the caller's visible projects only
(`recall.indexes.scope_statistics` says why), and over a small project (a
dozen session summaries, a few hundred turns of one conversation) the count
is a poor estimate: a word that two summaries of thirteen happen to share
weighs as little as "the" would in a large collection, and a common word the
project happens never to repeat weighs as much as a name. So the count leans
on a prior (Bayesian smoothing, as the Dirichlet prior of Zhai and Lafferty
2001, "A study of smoothing methods for language models applied to ad hoc
information retrieval", SIGIR): `Bm25F.prior_rows` rows of general English of
the scope's mean length are added to the scope's, a word of frequency f
appearing in a share 1 - exp(-f x length) of them (its count in a row
Poisson). A large scope's own count outweighs the prior; a small one's leans
on it. The prior is public text, so no score says anything about text the
caller may not see.

The frequencies are wordfreq's small English list (recall/data/NOTICE): words
that occur once per million words or more. A word it lacks (a name, a code,
another language's word) counts as `FLOOR`, once per million: rare. Its words
are read once per process (about 4 MB, 50 ms): at a server's warm-up
(`load`), else when the first search asks.

Chosen on the development sets (`manage.py bench quality`, fused default
R@10 / nDCG@10 without and with, 100 prior rows; README "Retrieval"): LoCoMo
turns 0.807 / 0.614 -> 0.808 / 0.618, observations 0.814 / 0.678 -> 0.816 /
0.687, session summaries (thirteen per conversation) 0.878 / 0.712 -> 0.883 /
0.735; full text alone on the summaries 0.653 -> 0.707.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

WORDS = Path(__file__).parent / "data" / "words_en.txt.gz"
FLOOR = 1e-6  # a word the list lacks: once per million words (the list's own rarest)


@lru_cache(maxsize=1)
def _frequencies() -> dict[str, float]:
    """word -> its frequency in running English text (see recall/data/NOTICE)."""
    out: dict[str, float] = {}
    with gzip.open(WORDS, "rt", encoding="utf-8") as lines:
        for line in lines:
            centibels, _, words = line.rstrip("\n").partition("\t")
            f = 10 ** (-int(centibels) / 100)
            out.update(dict.fromkeys(words.split(" "), f))
    return out


def load() -> None:
    """Read the list now (a server's warm-up), not at its first search."""
    _frequencies()


def frequency(word: str) -> float:
    """How often `word` (lower case) occurs per word of English text, at least `FLOOR`."""
    return max(_frequencies().get(word, 0.0), FLOOR)


def term_frequencies(
    words: Iterable[str], terms: Callable[[str], Iterable[str]]
) -> dict[str, float]:
    """Each index term of the query's `words` (`terms` of a word: its stems) -> the
    frequency of the commonest word it stands for."""
    out: dict[str, float] = {}
    for word in words:
        f = frequency(word)
        for term in terms(word):
            out[term] = max(out.get(term, 0.0), f)
    return out


@dataclass(frozen=True, slots=True)
class Prior:
    """The general-English prior of one search's terms: their frequencies and the
    scope's mean row length in tokens."""

    frequencies: Mapping[str, float]
    length: float

    def share(self, term: str) -> float:
        """The share of rows of `length` tokens that hold `term`: 1 - exp(-f x length)."""
        f = self.frequencies.get(term, FLOOR)
        return -math.expm1(-f * max(self.length, 1.0))
