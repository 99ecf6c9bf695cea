"""Writes to altitude digests: a person's edit, a rebuild a person asks for, a first build
an agent's recall asks for (console/digesting.py keeps them fresh through the outbox)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from console import digesting, wiring
from console.models import Digest
from console.services.writes import request_hash
from recall import digest as digests
from recall import sanitize
from recall.agent import body_text

MAX_DIGEST_CHARS = 20_000


def _same(text: str) -> str:
    return " ".join(text.split())


def _shown(text: str) -> str:
    """A stored (agent) sentence as the edit box shows it to a person: unescaped."""
    return _same(sanitize.read_back(text))


@transaction.atomic
class DigestChanged(ValueError):
    """The digest is no longer what the person editing it was shown."""


def digest_stamp(row: Digest) -> str:
    """What a person was shown of a digest, as a short hash: an edit sends it back."""
    return request_hash([s.get("text", "") for s in row.sentences])[:16]


def digest_edit(*, project: str | None, text: str, by: str, seen: str = "") -> Digest:
    """Replace a built digest's text with a person's, one sentence per line.

    The box shows each sentence as the text it stands for (agent text unescaped:
    `<id>`, not `&lt;id&gt;`). A line equal (up to spacing) to a built sentence as
    shown keeps that sentence and what it covers; any other line is the person's,
    sanitized for agents
    (`recall.agent.body_text`), and covers no row. The digest is
    marked edited, so automatic rebuilds keep it (recall/digest.py, "covers").
    `seen` (`digest_stamp` of the digest the person edited) refuses an edit of a
    digest rebuilt or edited since (DigestChanged); an empty text is refused too.
    """
    if len(text) > MAX_DIGEST_CHARS:
        raise ValueError(f"A digest holds at most {MAX_DIGEST_CHARS} characters.")
    if not text.strip():
        raise ValueError(
            "An empty digest would leave agents asking for one with nothing: write at "
            "least one sentence, or rebuild it from the rows."
        )
    row = Digest.objects.select_for_update().get(key=digesting.key_of(project))
    if seen and seen != digest_stamp(row):
        raise DigestChanged(
            "The digest changed since you opened this page (rebuilt, or edited by someone "
            "else): it is shown as it is now, with your text kept in the box to compare."
        )
    built = {_shown(s.text): s for s in digesting.to_value(row).sentences}
    lines = [_same(line) for line in text.splitlines() if line.strip()]
    # A person's own line reaches agents sanitized like every memory text, and as a
    # line of a text of many: one agents would read as withheld (a phrase, a speaker
    # label such as "assistant:") is refused, not stored as the mark (it was lost).
    sentences = [built.get(line) or digests.Sentence(body_text(line)) for line in lines]
    cut = [n for n, s in enumerate(sentences, 1) if digests.digest_line(s.text) != s.text]
    if cut:
        said = ", ".join(str(n) for n in cut[:5]) + (", ..." if len(cut) > 5 else "")
        raise ValueError(
            f"Line{'s' if len(cut) > 1 else ''} {said} cannot reach agents as written: a "
            "speaker label such as 'assistant:' would read as a turn of their conversation, "
            f"and an instruction as {sanitize.WITHHELD!r}. Rephrase it."
        )
    row.sentences = digesting.sentence_rows(sentences)
    row.tokens = wiring.engine().planes.tokens.count("\n".join(s.text for s in sentences))
    row.edited, row.edited_by, row.edited_at = True, by[:150], timezone.now()
    row.save()
    return row


def digest_rebuild(*, project: str | None) -> Digest | None:
    """Rebuild now, a person's edit included (they asked); None without an embedder."""
    return digesting.rebuild(project, force=True)


def digest_request(*, project: str | None) -> int:
    """Queue a first build of the project's digest if it has none (an agent asked for one)."""
    if Digest.objects.filter(key=digesting.key_of(project)).exists():
        return 0
    return digesting.queue([project])
