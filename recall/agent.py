"""What an agent receives: the JSON of a pack, item by item, and what it costs.

One rendering for every agent surface (the REST reply and the MCP tool
result carry the same compact JSON text), so the token counts the engine
reports are counts of exactly that text:
- `dumps`: compact JSON (no spaces, UTF-8 kept), the bytes that go out;
- `item_view`: one item's fields (`text` or, at detail "index", the
  description; provenance only with debug);
- `pack_view`: the envelope {items, associated (when asked), omitted,
  total_found, tokens, budget, warnings};
  `debug` rides outside the budget, only when asked.

Every text field goes through `recall.sanitize` first: no control
characters (the snippet sentinels among them), no phrase that starts an
injection, `<` and `>` escaped so no stored text can open or close a tag
the agent's harness wraps it in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from recall import sanitize
from recall.results import ContextPack, GraphLink, Hit, Provenance
from recall.types import MEMORY, Record

INDEX, FULL = "index", "full"
DETAILS = (INDEX, FULL)
MAX_WARNING_CHARS = 160
DESCRIPTION_CHARS = 150  # of a description an agent is shown (its stored limit too)
FUSED = "fused"  # an item's `source` when the envelope leaves it out: found by several
PRIOR_WORTH = 0.5  # Memory Worth before any verdict (recall.worth), left out of an item
_LAST_SECOND = datetime.max.replace(microsecond=0)  # none after it to round up to
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def dumps(value: object) -> str:
    """Compact JSON, UTF-8 kept: exactly what an agent's context receives."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def iso(value: datetime | None) -> str | None:
    """ISO-8601 in UTC with a `Z` (seconds; microseconds only when present)."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    spec = "microseconds" if value.microsecond else "seconds"
    return value.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def second(value: datetime) -> str:
    """An item's time to the second, rounded up: the microseconds every written time
    carries were 7 bytes of each `valid_from` an agent reads. Up, not down, so an
    `as_of` given the figure shown finds the state it begins, as with the exact time
    (valid over [valid_from, invalid_at), recall.timetravel): a `valid_from` cut down
    read the memory as not yet valid (memory_read as_of: 404). The exact time stays
    in the memory's own record (memory_read)."""
    value = value.astimezone(UTC)
    if value.microsecond and value.replace(tzinfo=None) < _LAST_SECOND:
        value = value.replace(microsecond=0) + timedelta(seconds=1)
    return value.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def figure(value: float) -> float:
    """A score as an agent reads it, to 3 significant digits (`1.04`,
    `0.0323`): its order is the items' own, and a fourth digit only cost a token."""
    return float(f"{value:.3g}")


def text_of(record: Record, *, limit: int | None = None) -> str:
    """A memory's text for an agent: its body, or description plus body, sanitized;
    with `limit`, only its first `limit` characters (a pack that can show no more
    does not sanitize a 150 KB log whole).

    An imported long text keeps its head as the description and the whole
    text as the body: then the body alone says it all. Each part is read as
    the text it is (`body_text`): a body opening with its turn's speaker label
    keeps it under a description, as its write's warnings said.
    """
    description, body = record.description.strip(), record.body.strip()
    lead = description.rstrip("…").strip()
    if lead and body.startswith(lead):
        description = ""
    parts = [part for part in (description, body) if part]
    if limit is not None:  # the first `limit` characters of the two joined by a newline
        room, cut = limit, []
        for part in parts:
            cut.append(part[: max(room, 0)])
            room -= len(part) + 1
        parts = cut
    return "\n".join(shown for shown in map(body_text, parts) if shown)


def body_text(text: str, *, opening: bool = True) -> str:
    """Multi-line agent text: control characters dropped, each line scrubbed (a cut
    marked `sanitize.WITHHELD`), angle brackets escaped (the multi-line sibling of
    `sanitize.field`). `opening`: `text` starts a memory's text (not a sentence
    taken from inside one), see `shown_lines`."""
    lines = shown_lines(text, opening=opening)
    return "\n".join(sanitize.escape_angles(line) for line in lines).strip()


def shown_lines(text: str, *, opening: bool = True) -> list[str]:
    """Each line of `text` as an agent reads it, once unescaped (`sanitize.restore`).

    Lines are scrubbed one by one, and each as the line it is: a speaker label
    ("assistant:", `sanitize.SPEAKERS`) opening the text is the label of the turn
    it holds, while one opening any later line would fake a turn and is cut, as
    `sanitize.field` and the write's warnings (`sanitize.cut_lines`) read it.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    return [_shown(line, first=opening and n == 0) for n, line in enumerate(lines)]


def _shown(line: str, *, first: bool) -> str:
    cleaned = _CONTROLS.sub("", line.replace("\t", "    "))
    if first:
        return sanitize.unimaged(sanitize.scrub(cleaned, mark=True)).rstrip()
    shown = sanitize.scrub("\n" + cleaned, mark=True)  # a later line: one after a newline
    return sanitize.unimaged(shown.removeprefix("\n")).rstrip()


def item_view(
    hit: Hit, *, detail: str = FULL, debug: bool = False, home: str | None = None
) -> dict[str, Any]:
    """One item as the agent receives it. What it would say for nothing is left out: an
    absent value, a default (`item` memory, `source` fused, `worth` 0.5, no verdict
    yet) and `home`, the pack's project, which its envelope says once (a global item's
    `project` is null). These were a quarter of an item's fields.

    `kind` is the memory's kind, the name every write, filter and memory_read uses
    for it; `item` says a note or a digest (the engine's `Doc.item`): an item said
    `memory_kind` and a search hit `kind` for memory|note, so one word meant two things."""
    view: dict[str, Any] = {"id": hit.id}
    if hit.kind != MEMORY:
        view["item"] = hit.kind
    view["name"] = sanitize.name(hit.name)
    if hit.kind == MEMORY:
        view["kind"] = hit.memory_kind
    elif hit.title and hit.title != hit.name:
        view["title"] = sanitize.field(hit.title, 200)
    if home is None or hit.project != home:
        view["project"] = hit.project
    # An index is names and descriptions to choose from (memory_read gives the rest):
    # its items leave out the times, the attribution and the worth, about a third of
    # an item's tokens, so a small budget lists more of them.
    index = detail == INDEX and hit.covers is None  # a digest always carries its text
    if index:
        view["description"] = sanitize.field(hit.description, DESCRIPTION_CHARS)
        if hit.invalid_at is not None:  # a past or archived version (history): not live
            view["invalid_at"] = second(hit.invalid_at)
    else:
        view["text"] = hit.text or ""
        if hit.truncated:
            view["truncated"] = True
        times = (
            ("valid_from", hit.valid_from), ("invalid_at", hit.invalid_at),
            ("occurred_at", hit.occurred_at),
        )  # fmt: skip
        for key, value in times:
            if value is not None:
                view[key] = second(value)
    if hit.superseded_by:  # a past version: which memory says what is true now
        view["superseded_by"] = hit.superseded_by
    attribution = {} if index else _attribution(hit)
    if attribution:
        view["attribution"] = attribution
    if hit.graph is not None:
        view["graph"] = [_link(link) for link in hit.graph]
    if hit.favorite:
        view["favorite"] = True
    if hit.source != FUSED:
        view["source"] = hit.source
    view["score"] = figure(hit.score)
    if hit.worth is not None and not index and round(hit.worth, 4) != PRIOR_WORTH:
        view["worth"] = round(hit.worth, 4)  # as the feedback reply and memory_read say it
    if hit.depth is not None:  # an associated item: how it hangs off the main items
        view["depth"] = hit.depth
        view["via"] = hit.via
        view["rel"] = sanitize.name(hit.rel or "")
    if hit.covers is not None:
        view["covers"] = hit.covers
    view["tokens"] = hit.tokens if hit.tokens is not None else 0
    if debug:
        view["sources"] = [_provenance(p) for p in hit.sources]
    return view


def _attribution(hit: Hit) -> dict[str, str]:
    """Who and what a memory came from (seed 003): its source, agent and session
    (`sanitize.label`: read, not names to round-trip)."""
    given = (("source", hit.origin), ("agent", hit.agent_id), ("session", hit.session_id))
    return {key: sanitize.label(value) for key, value in given if value}


def _link(link: GraphLink) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": link.id,
        "name": sanitize.name(link.name),
        "rel": sanitize.name(link.rel),
        "weight": round(link.weight, 4),
    }
    if link.reverse:
        view["reverse"] = True
    return view


def _provenance(p: Provenance) -> dict[str, Any]:
    view: dict[str, Any] = {"channel": p.channel, "rank": p.rank, "raw": round(p.raw, 6)}
    if p.hops is not None:
        view["hops"] = p.hops
        view["path"] = list(p.path)
    return view


def envelope(
    items: Sequence[Mapping[str, Any]],
    *,
    omitted: int,
    tokens: int,
    budget: int,
    warnings: Sequence[str],
    total_found: int | None = None,
    associated: Sequence[Mapping[str, Any]] | None = None,
    pack_id: str | None = None,
    project: str | None = None,
) -> dict[str, Any]:
    """The reply around the items; `project` (the items' own unless they say another),
    `associated`, `total_found`, `pack_id` only when set."""
    view: dict[str, Any] = {} if project is None else {"project": project}
    view["items"] = list(items)
    if associated is not None:
        view["associated"] = list(associated)
    view["omitted"] = omitted
    if total_found is not None:
        view["total_found"] = total_found
    view["tokens"] = tokens
    view["budget"] = budget
    view["warnings"] = [sanitize.field(w, MAX_WARNING_CHARS) for w in warnings]
    if pack_id is not None:  # what `POST /feedback` names (console/services/feedback.py)
        view["pack_id"] = pack_id
    return view


def home_said(
    home: str | None, items: Sequence[Any], associated: Sequence[Any] | None
) -> str | None:
    """The project a sent pack's envelope says: none for a pack with no item, whose
    project would name no item's (a 64-letter one took the room of the warning saying
    which budget to ask with, at a budget the schema accepts)."""
    return home if items or associated else None


def pack_view(pack: ContextPack) -> dict[str, Any]:
    """The whole reply an agent receives for a pack (`debug` when it was asked)."""
    debug, home = pack.debug is not None, pack.project
    items = [item_view(h, detail=pack.detail, debug=debug, home=home) for h in pack.items]
    associated = None
    if pack.associated is not None:
        associated = [
            item_view(h, detail=pack.detail, debug=debug, home=home) for h in pack.associated
        ]
    view = envelope(
        items, omitted=pack.omitted, tokens=pack.tokens, budget=pack.budget,
        warnings=pack.warnings, total_found=pack.total_found, associated=associated,
        pack_id=pack.pack_id, project=home_said(home, items, associated),
    )  # fmt: skip
    if pack.debug is not None:
        view["debug"] = pack.debug
    return view
