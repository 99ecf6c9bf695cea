"""User text to safe query parts, and identifier detection.

User text is never handed to an engine's query parser: `words` splits it
into plain words that every adapter quotes and ORs itself, so `NOT`, `AND`,
quotes, dashes or a NUL byte are text, never syntax.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from whoosh.lang.porter import stem as _porter

MAX_QUERY_CHARS = 2000
MAX_WORDS = 32
MIN_WORD_CHARS = 2
NO_WORDS = "the query has no searchable words"  # what an empty answer says when so

# Scripts written without spaces between words (kana, CJK ideographs, halfwidth
# katakana): each character is a word of its own in every text plane and query, or
# a run of them ("发票任务") would be one word, found only whole. Hangul is written
# with spaces between words and keeps them.
CJK = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
WORD = rf"[{CJK}]|[^\W_{CJK}]+"  # what a text plane indexes as a word (Python `re`)
WORD_RE = re.compile(WORD)
CJK_CHAR = re.compile(f"[{CJK}]")  # one kana or ideograph
_ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$", re.IGNORECASE)
_ID_PREFIX = re.compile(r"^[0-9A-HJKMNP-TV-Z]{8,25}$", re.IGNORECASE)
_SLUG = re.compile(r"^[a-z0-9]+(?:[-_.][a-z0-9]+)+$")


# Latin letters without their accents, as tantivy's `ascii_fold` (Lucene's
# ASCIIFoldingFilter) reads the common ones: what decomposes to ASCII letters and
# marks ("é" = "e" + U+0301, "ǆ" = "dž") loses the marks, and the letters that do
# not decompose get their usual spelling ("ø" o, "ß" ss, "æ" ae). Other scripts
# keep theirs.
_UNDECOMPOSED = dict(zip("øØłŁđĐħĦıŧŦƀƚŀĿŋŊſ", "oOlLdDhHitTbllLnNs", strict=True)) | {
    "ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "þ": "th",
    "Þ": "TH", "ð": "d", "Ð": "D", "ĳ": "ij", "Ĳ": "IJ",
}  # fmt: skip


def _latin_folds() -> dict[int, str]:
    out = {ord(ch): base for ch, base in _UNDECOMPOSED.items()}
    for code in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00)):
        bare = "".join(
            c for c in unicodedata.normalize("NFKD", chr(code)) if not unicodedata.combining(c)
        )
        if bare != chr(code) and bare.isascii() and bare.isalpha():
            out[code] = bare
    return out


# Full-width Latin letters and digits (U+FF10-FF19, FF21-FF3A, FF41-FF5A, what an IME
# types in full-width mode) as ASCII, as tantivy's ASCII folding and NFKC read them:
# "Ｄｅｐｌｏｙ" finds "Deploy" in every text plane, and the other way round.
FULL_WIDTH = {
    code: chr(code - 0xFEE0)
    for code in (*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B))
}
FOLDS = _latin_folds() | FULL_WIDTH  # a `str.translate` table
# The folds that keep one character for one: a text translated with it keeps its offsets.
SAME_LENGTH_FOLDS = {code: base for code, base in FOLDS.items() if len(base) == 1}


def fold(text: str) -> str:
    """`text` with its Latin letters' accents off: "Hermès" reads "Hermes", and full-width
    letters and digits as ASCII: "Ｄｅｐｌｏｙ" reads "Deploy" (`FOLDS`).
    Every text plane indexes words folded and `words` folds the query's, so either
    spelling finds the other. ASCII text is returned as it is (translating 580
    characters of it took 7 us, the check 0.1)."""
    return text if text.isascii() else text.translate(FOLDS)


def clean(text: str) -> str:
    """NFKC-normalise, drop control characters and cap the length.

    NFKC, not NFC: the query is embedded as it comes out of here, and the stored
    texts are embedded NFKC-normalised (`recall.types.embeddable`), so a full-width
    or ligature query reads as the same words by meaning as by letters."""
    text = unicodedata.normalize("NFKC", text[: MAX_QUERY_CHARS * 2])
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return text[:MAX_QUERY_CHARS].strip()


def words(text: str, *, keep_short_last: bool = False) -> list[str]:
    """The query's words, lower-cased and `fold`ed, in order, duplicates removed.

    Words shorter than two characters are dropped (they match everything),
    except the last one when `keep_short_last` (a palette prefix being typed) and
    a kana or ideograph, each a word of its own (`CJK`). At most MAX_WORDS words
    are kept.
    """
    found = [fold(w.lower()) for w in WORD_RE.findall(clean(text))]
    out: list[str] = []
    for i, word in enumerate(found):
        is_last = i == len(found) - 1
        if not kept(word) and not (keep_short_last and is_last):
            continue
        if word not in out:
            out.append(word)
    return out[:MAX_WORDS]


def spaceless(word: str) -> bool:
    """Whether `word` is one kana or ideograph: a word of its own (`CJK`)."""
    return CJK_CHAR.fullmatch(word) is not None


def kept(word: str) -> bool:
    """Whether `word` is long enough to search for: two characters, or `spaceless`."""
    return len(word) >= MIN_WORD_CHARS or spaceless(word)


def ends_mid_word(text: str) -> bool:
    """True when the text ends inside a word (the palette is still typing it)."""
    return bool(text) and WORD_RE.fullmatch(text[-1]) is not None


def is_ulid(text: str) -> bool:
    return bool(_ULID.match(text.strip()))


def is_id_prefix(text: str) -> bool:
    """8 to 25 Crockford base-32 characters containing at least one digit."""
    token = text.strip()
    return bool(_ID_PREFIX.match(token)) and any(c.isdigit() for c in token)


def is_slug(text: str) -> bool:
    """A slug-looking single token such as `chroma-boot-race`."""
    return bool(_SLUG.match(text.strip()))


def looks_like_identifier(text: str) -> bool:
    token = text.strip()
    if not token or " " in token:
        return False
    return is_ulid(token) or is_id_prefix(token) or is_slug(token)


def porter(word: str) -> str:
    """A lower-cased word's Porter stem, not cached (`stem` is the cached one)."""
    return str(_porter(word))


# Porter stems of lower-cased words, cached: the read-time matchers that stem in Python
# (PromptRecall, query terms) see each distinct word once.
stem = lru_cache(maxsize=1 << 17)(porter)
