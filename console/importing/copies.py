"""Ids of an import into one project that copies rows of other projects (the console's).

The command's rule is that an id is an identity: a record whose id exists is
the same row, imported before, and skipped. A person who exports project A and
imports the file into project B means a copy: under that rule nothing came in
(every id was A's), and an edge or a revision of the file would have been
written onto A's rows, a project the person may not even see.

So, with a target project, every id of ours (a ULID) that names a memory or a
note of another project is rewritten, wherever the record holds one (its id,
`superseded_by`, an edge's ends, a revision's memory, a digest sentence's
covers), to an id derived from it and the target: the id's time part is kept
(rows stay in the file's order) and the rest is a hash of both. The same file
imported twice into B gives the same ids, so the second run finds them and
skips them, as the command does; into C it gives other ids. An id that names
nothing yet, or a row of B, is kept as it is.
"""

from __future__ import annotations

import hashlib
from typing import Any

from console.importing.parsing import ULID_RE
from console.models import Memory, Note, Project

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def copy_id(old: str, *, project: str) -> str:
    """The id of `old`'s copy in `project`: old's 10 time characters, 16 of a hash."""
    digest = int.from_bytes(hashlib.sha256(f"{old}\n{project}".encode()).digest()[:10], "big")
    tail = "".join(_CROCKFORD[(digest >> (5 * i)) & 31] for i in range(15, -1, -1))
    return old[:10] + tail


class Rekey:
    """Rewrites the ids of records bound for `target` (see the module docstring)."""

    def __init__(self, target: Project) -> None:
        self.target = target
        self.ids: dict[str, str] = {}

    def one(self, value: Any) -> Any:
        """The id to use for `value`: its copy's when it names another project's row."""
        if not isinstance(value, str) or not ULID_RE.match(value):
            return value
        if value not in self.ids:
            elsewhere = any(
                model.objects.filter(pk=value).exclude(project=self.target).exists()
                for model in (Memory, Note)
            )
            self.ids[value] = copy_id(value, project=self.target.slug) if elsewhere else value
        return self.ids[value]

    def record(self, data: dict[str, Any]) -> dict[str, Any]:
        """A copy of the record with its ids rewritten."""
        data = dict(data)
        for key in ("id", "superseded_by", "src", "dst", "memory"):
            if key in data:
                data[key] = self.one(data[key])
        if isinstance(data.get("edges"), list):
            data["edges"] = [
                {**e, "dst": self.one(e.get("dst"))} if isinstance(e, dict) else e
                for e in data["edges"]
            ]
        if isinstance(data.get("sentences"), list):
            data["sentences"] = [
                {**s, "covers": [self.one(c) for c in s["covers"]]}
                if isinstance(s, dict) and isinstance(s.get("covers"), list)
                else s
                for s in data["sentences"]
            ]
        return data
