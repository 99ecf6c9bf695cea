"""Plain text for people: markdown stripped, snippets cut at sentences, matches marked.

A result's snippet is cut from the stored text, not from the index's
fragment: markdown is reduced to the words a reader sees (`[[name|label]]`
to label, `[text](url)` to text, fences, emphasis and list marks dropped,
code lines kept as lines), split into sentences, and the sentence holding
the most query words starts the snippet, so it never starts mid-sentence
and never cuts off the only match (a long sentence is windowed around its
first match instead). The same matcher marks titles and counts which words
a result holds, so what is highlighted is what the relevance label counted.

Stopwords (two-letter ones too: "of", "to", "is") and single letters are
left out (unless nothing else was typed); other two-letter words count, as
the index finds them ("kv", "db", "ci", "s3"). A query word matches a text
word when both reduce to the same stem (a light English suffix strip:
"retries" ~ "retry", "webhooks" ~ "webhook"; accents off, as the planes
fold words: "Hermès" ~ "hermes"),
when the text word is one the index marked in its own fragment, or, for the
last word typed, when the text word starts with it (a prefix, as in the
palette). Every piece of text is HTML-escaped before `<mark>` is added.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from recall.markdown import closes, fence, rule
from recall.prompt import STOPWORDS
from recall.query import CJK, CJK_CHAR, SAME_LENGTH_FOLDS, WORD, fold, spaceless
from recall.query import words as query_words
from recall.sanitize import revealed

# Two-letter function words: never a reason to call a result a match.
SHORT_STOPWORDS = frozenset({
    "am", "an", "as", "at", "be", "by", "do", "he", "if", "in", "is", "it",
    "me", "my", "no", "of", "on", "or", "so", "to", "up", "us", "we",
})  # fmt: skip
SENTINELS = str.maketrans({"\x01": "", "\x02": ""})
_MARKED = re.compile(r"\x01([^\x01\x02]*)\x02")
_TOKEN = re.compile(WORD)  # a kana or ideograph is a word of its own, as the planes read it
_LINE_MARK = re.compile(r"^\s*(#{1,6}\s+|>\s?|[-*+]\s+(\[[ xX]\]\s+)?|\d{1,3}[.)]\s+)")
# A link's destination: CommonMark lets it hold balanced parentheses
# ("https://en.wikipedia.org/wiki/Idempotence_(computing)"), one level deep here.
_DESTINATION = r"\((?:[^()]|\([^()]*\))*\)"
_INLINE = [
    (re.compile(r"!\[([^\]]*)\]" + _DESTINATION), r"\1"),  # images: their alt text
    (re.compile(r"\[\[([^\]|]+)\|([^\]]+)\]\]"), r"\2"),  # [[name|label]]
    (re.compile(r"\[\[([^\]]+)\]\]"), r"\1"),  # [[name]]
    (re.compile(r"\[([^\]]+)\]" + _DESTINATION), r"\1"),  # [text](url)
    (re.compile(r"<(https?://[^>\s]+)>"), r"\1"),  # autolinks
    (re.compile(r"(\*\*|__|~~)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # strong, strike
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # *em*
    (re.compile(r"`+([^`]*)`+"), r"\1"),  # inline code
]
_INLINE_MARK = re.compile(r"[\[<*_~`]")  # a character every `_INLINE` pattern needs
# A sentence ends at . ! ? (or a closing quote after one) before a space.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]*\s+")
_SUFFIXES = ("ies", "ing", "ed", "es", "s")

SNIPPET_CHARS = 220
LONG_SENTENCE = 280
LEAD_CHARS = 60


def plain_blocks(markdown: str) -> list[str]:
    """Markdown as the blocks a reader sees: paragraphs joined, each code line alone."""
    blocks: list[str] = []
    paragraph: list[str] = []
    opened = ""  # the fence of the code block being read, if any

    def flush() -> None:
        if paragraph:
            blocks.append(" ".join(paragraph))
            paragraph.clear()

    for raw in (markdown or "").translate(SENTINELS).splitlines():
        if opened and closes(raw, opened):
            opened = ""
            continue
        if opened:
            if raw.strip():
                blocks.append(raw.strip())
            continue
        if fence(raw):
            flush()
            opened = fence(raw)
            continue
        line = raw.strip()
        if not line or rule(line):
            flush()
            continue
        marked = _LINE_MARK.match(raw)
        if marked or line.startswith("|"):
            flush()  # a heading, quote, list item or table row is a block of its own
        line = _LINE_MARK.sub("", raw).strip()
        if line.startswith("|"):
            line = " · ".join(cell.strip() for cell in line.strip("|").split("|") if cell.strip())
        if _INLINE_MARK.search(line):  # most lines hold no mark: eight scans saved
            for pattern, repl in _INLINE:
                line = pattern.sub(repl, line)
        paragraph.append(line)
        if marked:
            flush()
    flush()
    return [b for b in blocks if b]


def plain(markdown: str) -> str:
    """Markdown as one line of plain text."""
    return " ".join(plain_blocks(markdown))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix strip, enough to match a plural or a tense."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            return base + "y" if suffix == "ies" else base
    return word


_NO_TOKEN = re.compile(r"(?!)")  # matches nothing
_TOKEN_CHAR = re.compile(rf"[^\W_{CJK}]")  # a character of a spaced word (`_TOKEN`)


@lru_cache(maxsize=1024)
def _starts(words: tuple[str, ...]) -> re.Pattern[str]:
    """Where a text word that can match one of `words` may start: a word's first
    three letters, any case (a word under three letters: itself), or a kana or
    ideograph of them (a word of its own). Every way `Matcher.word_of` matches (the
    same stem, the typed prefix, a form the index marked, whose first four letters
    it shares) starts so, so asking only the words found there (`Matcher.tokens`)
    gives what asking every word gave, in a fraction of the calls. Only the starts
    are compiled per query: a character class that leaves out the ideographs took
    2-6 ms to compile, more than it saved."""
    starts = sorted({w if CJK_CHAR.fullmatch(w) else w[:3] for w in words}, key=len, reverse=True)
    if not starts:
        return _NO_TOKEN
    return re.compile("|".join(re.escape(w) for w in starts), re.IGNORECASE)


@dataclass(frozen=True)
class Matcher:
    """Which text words a query matches (see the module docstring)."""

    words: tuple[str, ...]
    prefix: bool = False
    marked: frozenset[str] = frozenset()
    _stems: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)
    # word_of per lower-cased token: a page of results asks about the same words often
    _seen: dict[str, str | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # Where the text words that can match start (`_starts`): only they are asked `word_of`.
    _starts: re.Pattern[str] = field(default=_NO_TOKEN, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for word in reversed(self.words):  # the first word wins a shared stem
            self._stems[stem(word)] = word
        object.__setattr__(self, "_starts", _starts(self.words))

    @classmethod
    def for_query(
        cls, query: str, *, prefix: bool = False, fragments: Iterable[str | None] = ()
    ) -> Matcher:
        typed = query_words(query, keep_short_last=prefix)
        # Stopwords and single letters neither count nor light up, unless nothing
        # else was typed; the word being typed always does, and so does a kana or
        # ideograph (a word of its own).
        found = [
            w
            for i, w in enumerate(typed)
            if (len(w) >= 3 and w not in STOPWORDS)
            or (len(w) == 2 and w not in SHORT_STOPWORDS)
            or spaceless(w)
            or (prefix and i == len(typed) - 1)
        ] or typed
        marked = {
            token.lower()
            for fragment in fragments
            if fragment
            for term in _MARKED.findall(fragment)
            for token in _TOKEN.findall(fold(term))
        }
        return cls(tuple(found), prefix and bool(found), frozenset(marked))

    @staticmethod
    def marks_more(query: str, *, prefix: bool) -> bool:
        """Whether the index's fragments (`for_query`'s `fragments`) could mark a word
        the query's own words do not: not for one word of up to four letters typed
        as a prefix (the palette's first word), as a form the index marked counts
        by its first four letters, which then start with the word typed (`_word_of`).
        A caller may then leave the index's snippets out (about 0.5 ms of eight)."""
        typed = query_words(query, keep_short_last=prefix)
        return not (prefix and len(typed) == 1 and len(typed[0]) <= 4)

    def tokens(self, text: str) -> Iterator[re.Match[str]]:
        """The words of `text` (as `_TOKEN` cuts them) that may match: a superset of
        those `word_of` names, found where one of the query's starts opens a word.
        The starts are looked for in the text folded letter for letter (`é` as `e`,
        offsets kept); a letter that folds to two (`æ`, `ß`) is looked for as is."""
        seen = text if text.isascii() else text.translate(SAME_LENGTH_FOLDS)
        find, at = self._starts.search, 0
        while (start := find(seen, at)) is not None:
            begin = start.start()
            if begin and _TOKEN_CHAR.match(seen, begin - 1) and _TOKEN_CHAR.match(seen, begin):
                at = begin + 1  # inside a word, not at its start
                continue
            token = _TOKEN.match(text, begin)
            if token is None:  # pragma: no cover - a start is a word character
                at = begin + 1
                continue
            yield token
            at = token.end()

    def word_of(self, token: str) -> str | None:
        """The query word this text word matches, or None."""
        low = fold(token.lower())
        if low in self._seen:
            return self._seen[low]
        word = self._seen[low] = self._word_of(low)
        return word

    def _word_of(self, low: str) -> str | None:
        hit = self._stems.get(low) or self._stems.get(stem(low))
        if hit is not None:
            return hit
        if self.prefix and low.startswith(self.words[-1]):
            return self.words[-1]
        if low in self.marked:  # a form the index matched that the stem strip missed
            return next((w for w in self.words if low[:4] == w[:4]), None)
        return None

    def found(self, text: str) -> set[str]:
        """The query words the text holds."""
        out: set[str] = set()
        if not self.words or not text:
            return out
        for token in {t.group().lower() for t in self.tokens(text)}:
            word = self.word_of(token)
            if word is not None:
                out.add(word)
                if len(out) == len(self.words):
                    break
        return out

    def mark(self, text: str) -> SafeString:
        """The text, escaped, with each matching word in `<mark>`; a character that
        would reverse or hide the text around it shows as `⟨U+202E⟩` (`revealed`)."""
        text = revealed((text or "").translate(SENTINELS))
        if not self.words:
            return mark_safe(escape(text))  # noqa: S308 - escaped
        spans: list[list[int]] = []
        for match in self.tokens(text):
            if self.word_of(match.group()) is None:
                continue
            if spans and spans[-1][1] == match.start():  # ideographs: one mark for 发票
                spans[-1][1] = match.end()
            else:
                spans.append([match.start(), match.end()])
        out: list[str] = []
        at = 0
        for start, end in spans:
            out.append(f"{escape(text[at:start])}<mark>{escape(text[start:end])}</mark>")
            at = end
        out.append(escape(text[at:]))
        return mark_safe("".join(out))  # noqa: S308 - every piece escaped


def sentences(block: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(block) if s.strip()]


def _window(sentence: str, matcher: Matcher, chars: int, lead: int) -> str:
    """A long sentence cut around its first match, at word boundaries."""
    first = next((m.start() for m in matcher.tokens(sentence) if matcher.word_of(m.group())), 0)
    start = 0 if first <= lead else sentence.rfind(" ", 0, first - lead // 2) + 1
    end = start + chars
    if end < len(sentence):
        cut = sentence.rfind(" ", start, end)
        end = cut if cut > first else end
    head = "…" if start > 0 else ""
    tail = "…" if end < len(sentence) else ""
    return head + sentence[start:end].strip() + tail


def snippet_text(
    blocks: Sequence[str],
    matcher: Matcher,
    *,
    chars: int = SNIPPET_CHARS,
    lead: int = LEAD_CHARS,
    near: bool = False,
) -> str | None:
    """The plain-text passage that best shows the matches, or None when nothing matches.

    The sentence holding the most query words (the first of equals) starts
    it; following sentences of its block are added while they fit `chars`.
    A sentence that alone runs past the room is windowed around its first match,
    and so is one whose first match lies past `lead` when `near` (a snippet shown
    on one line, cut by an ellipsis: the palette's, which a phone shows 40 letters of).
    """
    most = 0  # query words in the best sentence so far (read in order: the first of equals)
    best: tuple[list[str], int] | None = None  # (its block's sentences, its position)
    every = len(set(matcher.words))
    for block in blocks:
        parts = sentences(block)
        for s, sentence in enumerate(parts):
            hits = len(matcher.found(sentence))
            if hits > most:
                most, best = hits, (parts, s)
                if most == every:
                    break
        if most == every:
            break  # no later sentence can hold more: the rest of the text is not read
    if best is None:
        return None
    parts, s = best
    first = parts[s]
    offset = matcher_offset(first, matcher)
    if len(first) > max(chars, LONG_SENTENCE) or offset > (lead if near else chars - 20):
        return _window(first, matcher, chars, lead)
    text = first
    for following in parts[s + 1 :]:
        if len(text) + 1 + len(following) > chars:
            break
        text += " " + following
    return text


def matcher_offset(sentence: str, matcher: Matcher) -> int:
    """Where the first matching word starts (0 when none does)."""
    for match in matcher.tokens(sentence):
        if matcher.word_of(match.group()):
            return match.start()
    return 0


def lead_text(blocks: Sequence[str], *, chars: int = SNIPPET_CHARS) -> str:
    """The opening sentences, up to `chars` (for a hit no word matched)."""
    out = ""
    for sentence in (s for b in blocks for s in sentences(b)):
        if out and len(out) + 1 + len(sentence) > chars:
            break
        out = f"{out} {sentence}".strip()
        if len(out) > chars:
            cut = out.rfind(" ", 0, chars)
            return out[: cut if cut > 0 else chars] + "…"
    return out
