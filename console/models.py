"""The relational plane: the source of truth every index reconverges from.

No logic lives in save() or signals: writes go through console/services.py.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from ulid import ULID

from recall.types import ISOLATIONS, MEMORY_KINDS

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,119}$")
AGENT_SOURCE = "agent_inferred"  # what an agent's write is learnt as unless it says otherwise
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
# Words that already mean something where a project's slug is shown: "global" labels
# memories outside any project (recall lines, digests, the CLI) and "tenant" names the
# whole deployment's digest (`digest-tenant`), so a project called either would read as
# the other. A new project's slug is checked against them; the API publishes the same rule.
RESERVED_SLUGS = ("global", "tenant")
NEW_SLUG_PATTERN = rf"^(?!(?:{'|'.join(RESERVED_SLUGS)})$){SLUG_RE.pattern[1:]}"
# A note's source: http(s):// and no ASCII space, control character, quote,
# angle bracket or backslash. The API schema publishes this same pattern
# (written without \s, whose meaning differs between regex engines), so what
# the schema allows is what is stored.
SOURCE_URL_RE = re.compile(r"^https?://[^\x00-\x20\x7f<>\"'\\]+$")


def new_id() -> str:
    return str(ULID())


def validate_name(value: str) -> None:
    """A memory name is a slug: lower-case ASCII letters, digits, `-`, `_`, `.`."""
    if not NAME_RE.match(value or ""):
        raise ValidationError(
            f"{value!r} is not a valid name: use 1-120 lower-case letters, digits, "
            "'-', '_' or '.', starting with a letter or digit (for example 'chroma-boot-race').",
            code="invalid_name",
        )


def validate_source_url(value: str) -> None:
    if value and not SOURCE_URL_RE.fullmatch(value):
        raise ValidationError(
            {"source_url": f"{value[:80]!r} is not an http(s) URL (e.g. https://example.org/page)."}
        )


def validate_slug(value: str) -> None:
    if not SLUG_RE.match(value or ""):
        raise ValidationError(
            f"{value!r} is not a valid slug: use 1-64 lower-case letters, digits or '-', "
            "starting with a letter or digit (for example 'billing-api').",
            code="invalid_slug",
        )
    if value in RESERVED_SLUGS:
        raise ValidationError(reserved_slug_message(value), code="reserved_slug")


def reserved_slug_message(value: str) -> str:
    return (
        f"{value!r} is reserved: it names memories outside any project or the whole "
        "deployment's digest. Choose another slug."
    )


class Project(models.Model):
    slug = models.CharField(max_length=64, unique=True, validators=[validate_slug])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    isolation = models.CharField(
        max_length=16, choices=[(i, i) for i in ISOLATIONS], default="open"
    )
    favorite = models.BooleanField(default=False)
    retired_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class ProjectMember(models.Model):
    """A person granted a project in the console (console/roles.py reads these).

    Staff see every project without a row; everyone else sees the global
    items and the projects granted here, sealed ones included only when granted.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="members")
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project__slug", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="project_member_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project}"


class Memory(models.Model):
    id = models.CharField(primary_key=True, max_length=26, default=new_id, editable=False)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="memories"
    )
    kind = models.CharField(max_length=16, choices=[(k, k) for k in MEMORY_KINDS], default="fact")
    name = models.CharField(max_length=120, validators=[validate_name])
    description = models.CharField(max_length=150, blank=True, default="")
    body = models.TextField(blank=True, default="")
    tags = models.JSONField(default=list, blank=True)
    importance = models.FloatField(default=0.5)
    agent_id = models.CharField(max_length=120, blank=True, default="")
    session_id = models.CharField(max_length=120, blank=True, default="")
    # Order of an episodic memory inside its session (LoCoMo turn index).
    session_order = models.IntegerField(null=True, blank=True)
    # When the event it records happened, if the writer knows (a turn's session date).
    occurred_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=32, blank=True, default="user_stated")
    valid_from = models.DateTimeField(default=timezone.now)
    invalid_at = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    favorite = models.BooleanField(default=False)
    # sha256 of the normalised description and body (services.content_hash).
    content_hash = models.CharField(max_length=64, blank=True, default="")
    external_id = models.CharField(max_length=200, blank=True, default="", db_index=True)
    metadata = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(default=timezone.now)
    access_count = models.IntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    # Expiry (`ttl_seconds` / `expires_at` on write): from this instant the memory
    # leaves every read, and `manage.py expire` / the index worker purge it.
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # Memory Worth counters (console/services/feedback.py; recall/worth.py).
    feedback_used = models.IntegerField(default=0)
    feedback_helpful = models.IntegerField(default=0)
    feedback_harmful = models.IntegerField(default=0)

    class Meta:
        verbose_name_plural = "memories"  # the admin said "Memorys"
        ordering = ["-updated", "-id"]
        indexes = [
            # expires_at last: the briefing's count over a scope reads only this index
            # (with the scope as project ids, `store.count`): 100k, 58 -> 3 ms.
            models.Index(fields=["project", "invalid_at", "kind", "expires_at"]),
            models.Index(fields=["name"]),
            models.Index(fields=["updated"]),
            # The briefing's newest-first reads of starred memories and of constraints
            # walk these instead of scanning every memory (100k: 105 -> 29 ms).
            models.Index(fields=["favorite", "updated"]),
            models.Index(fields=["kind", "updated"]),
            models.Index(fields=["session_id", "session_order"]),
            # Exact-duplicate lookups on write (services.memory_duplicate).
            models.Index(fields=["project", "content_hash"]),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @property
    def active(self) -> bool:
        return self.invalid_at is None


class Note(models.Model):
    id = models.CharField(primary_key=True, max_length=26, default=new_id, editable=False)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="notes"
    )
    title = models.CharField(max_length=200)
    slug = models.CharField(max_length=120, validators=[validate_name], db_index=True)
    description = models.CharField(max_length=150, blank=True, default="")
    body = models.TextField(blank=True, default="")
    tags = models.JSONField(default=list, blank=True)
    source_url = models.URLField(blank=True, default="")
    favorite = models.BooleanField(default=False)
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated", "-id"]

    def __str__(self) -> str:
        return self.title


class LinkName(models.Model):
    """A `[[name]]` a memory's body holds (kept with the body by
    `services.memory_links_rewrite`). A memory written under a name looks here for
    the bodies that already named it (`selectors.memories_naming`), by index:
    scanning every body of the project with LIKE took 16 ms a write (236 ms cold)
    at 10,000 memories a project, inside the write's transaction."""

    src = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["src", "name"], name="link_name_unique")]
        indexes = [models.Index(fields=["name"], name="link_name_name")]


class Edge(models.Model):
    ORIGINS = [("wikilink", "wikilink"), ("explicit", "explicit")]
    src = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="out_edges")
    dst = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="in_edges")
    rel = models.CharField(max_length=32, default="links")
    weight = models.FloatField(default=1.0)
    origin = models.CharField(max_length=16, choices=ORIGINS, default="wikilink")
    # Where the source's body names the target (0 = first): the order links expand in.
    position = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["src", "dst", "rel", "origin"], name="edge_unique")
        ]


class Setting(models.Model):
    key = models.CharField(max_length=64, unique=True)
    value = models.JSONField(default=dict)
    updated = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=150, blank=True, default="")

    def __str__(self) -> str:
        return self.key


class AgentToken(models.Model):
    agent = models.CharField(max_length=120)
    prefix = models.CharField(max_length=12, db_index=True)
    secret_hash = models.CharField(max_length=128, unique=True)
    projects = models.ManyToManyField(Project, related_name="tokens")
    may_write = models.BooleanField(default=False)
    # Admin scope: may create projects (and is then granted them).
    may_admin = models.BooleanField(default=False)
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.agent} ({self.prefix}…)"


class IdempotencyKey(models.Model):
    """A write's first answer, kept so that a retry with the same key gets it again.

    Written in the same transaction as the write it answers for: a write that
    rolled back leaves no key, so its retry runs anew.
    """

    token = models.ForeignKey(AgentToken, on_delete=models.CASCADE, related_name="idempotency")
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    response = models.JSONField()  # queried (a deleted memory's keys go with it)
    # The answer as sent, so a retry gets it byte for byte (PostgreSQL's jsonb keeps
    # no key order); "" on keys kept before it was.
    text = models.TextField(blank=True, default="")
    created = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["token", "key"], name="idempotency_key_unique")
        ]


@models.JSONField.register_lookup
class HasString(models.Lookup[str]):
    """`ids__has_string=value`: the JSON array holds the string `value` as an element.

    A containment test on each database's own JSON functions (substring
    matching over the JSON text would be neither exact nor indexable):
    SQLite's `json_each`, PostgreSQL's `@>` (which a GIN index can serve).
    """

    lookup_name = "has_string"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        sql = f"EXISTS (SELECT 1 FROM json_each({lhs}) AS e WHERE e.value = {rhs})"
        return sql, (*lhs_params, *rhs_params)

    def as_postgresql(self, compiler: Any, connection: Any) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} @> jsonb_build_array(({rhs})::text)", (*lhs_params, *rhs_params)


class RetrievalEvent(models.Model):
    KINDS = [(k, k) for k in ("injected", "prompt", "recalled", "read", "searched", "miss")]
    kind = models.CharField(max_length=16, choices=KINDS)
    ids = models.JSONField(default=list)
    query = models.TextField(blank=True, default="")
    project = models.CharField(max_length=64, blank=True, default="")
    agent = models.CharField(max_length=120, blank=True, default="")
    at = models.DateTimeField(default=timezone.now, db_index=True)
    # A recall's pack id (its reply's `pack_id`): what `POST /feedback` names.
    pack_id = models.CharField(max_length=26, blank=True, default="", db_index=True)
    # A recall's token budget, so the inspector can ask again what the agent asked.
    budget = models.PositiveIntegerField(null=True, blank=True)
    # Whether it feeds the usage boost: a read-only token's events are history alone,
    # as ranking what every writing agent recalls is a write (`access._seen`).
    counts = models.BooleanField(default=True)

    class Meta:
        ordering = ["-at"]


class Feedback(models.Model):
    """One agent's verdict on one item of a recalled pack (Memory Worth).

    A pack item takes one verdict per token (a second one replaces it), so
    the memory's counters count each pack once.
    """

    event = models.ForeignKey(RetrievalEvent, on_delete=models.CASCADE, related_name="feedback")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="feedback")
    agent = models.CharField(max_length=120, blank=True, default="")
    used = models.BooleanField(default=False)
    helpful = models.BooleanField(default=False)
    harmful = models.BooleanField(default=False)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["event", "memory", "agent"], name="feedback_unique")
        ]


class IndexJob(models.Model):
    """Outbox row: written in the same transaction as the change it mirrors."""

    OPS = [("upsert", "upsert"), ("delete", "delete")]
    item = models.CharField(max_length=8)
    item_id = models.CharField(max_length=26)
    op = models.CharField(max_length=8, choices=OPS)
    attempts = models.IntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    created = models.DateTimeField(default=timezone.now)
    # Who is applying it, until when (console/indexing.py claims jobs in one
    # statement, so two processes never apply the same job; a dead claimer's
    # claim lapses and another process takes the job over).
    claimed_by = models.CharField(max_length=64, blank=True, default="")
    claimed_until = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["id"]


class KnownVector(models.Model):
    """A vector a request embedded, kept for the index worker (console/indexing.py
    `keep` / `_known`): `key` is the text's `Doc.embedding_hash` under its model."""

    key = models.CharField(max_length=64, unique=True)
    vector = models.BinaryField()
    created = models.DateTimeField(default=timezone.now, db_index=True)


class Passages(models.Model):
    """A long memory's sentence vectors (recall/passages.py): `rows` unit-length
    float16 rows of the embedder's dimensions. Derived like the planes and written
    by the index with the memory's vector (console/passage_store.py); `key` is
    `recall.passages.texts_hash` of what was embedded, so a reindex or an edit
    that leaves the sentences alone embeds nothing again."""

    memory = models.OneToOneField(
        Memory, primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    key = models.CharField(max_length=64)
    rows = models.PositiveIntegerField()
    vectors = models.BinaryField()


class Digest(models.Model):
    """A project's altitude digest (recall/digest.py): `key` is the project's slug, "" for
    the global memories. Rebuilt by the outbox (`item="digest"` jobs, console/digesting.py);
    `edited` keeps a person's text from automatic rebuilds; `stale` says rows changed."""

    key = models.CharField(max_length=64, unique=True, blank=True)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    # [{"text", "source", "covers": [ids], "score"}], best sentence first
    sentences = models.JSONField(default=list)
    tokens = models.IntegerField(default=0)
    fingerprint = models.CharField(max_length=64, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    built_at = models.DateTimeField(null=True, blank=True)
    stale = models.BooleanField(default=True)
    edited = models.BooleanField(default=False)
    edited_by = models.CharField(max_length=150, blank=True, default="")
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return f"digest of {self.key or 'global'}"


class MemoryRevision(models.Model):
    """One recorded state of a memory (transaction time): written in the same
    transaction as the change it records (console/services/revisions.py).

    `memory_id` is no foreign key: a deleted memory keeps its revisions (the
    last one a `delete`), so what was known before the delete can still be
    read. Revision numbers count from 1 per memory; `recorded_at` is when the
    change committed its row (its transaction time).
    """

    OPS = [
        *(
            (op, op)
            for op in (
                "initial",
                "create",
                "import",
                "edit",
                "supersede",
                "archive",
                "restore",
                "delete",
            )
        ),
        # The old version of a chain whose replacement was deleted: its link is gone
        # (it read "edit", beside a raw superseded_by_id -> blank).
        ("unsupersede", "replacement deleted"),
    ]
    memory_id = models.CharField(max_length=26)
    number = models.PositiveIntegerField()
    op = models.CharField(max_length=16, choices=OPS)
    recorded_at = models.DateTimeField(default=timezone.now)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="revisions"
    )
    kind = models.CharField(max_length=16)
    name = models.CharField(max_length=120)
    description = models.CharField(max_length=150, blank=True, default="")
    body = models.TextField(blank=True, default="")
    tags = models.JSONField(default=list, blank=True)
    importance = models.FloatField(default=0.5)
    valid_from = models.DateTimeField()
    invalid_at = models.DateTimeField(null=True, blank=True)
    superseded_by_id = models.CharField(max_length=26, blank=True, default="")
    source = models.CharField(max_length=32, blank=True, default="")
    agent_id = models.CharField(max_length=120, blank=True, default="")
    session_id = models.CharField(max_length=120, blank=True, default="")
    created = models.DateTimeField(null=True, blank=True)
    deleted = models.BooleanField(default=False)
    # Who made this change: a person's login, "<agent> (agent)", "" for the system
    # (an import, a migration): `console.actor`.
    changed_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["memory_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["memory_id", "number"], name="memory_revision_unique")
        ]
        indexes = [models.Index(fields=["recorded_at"])]

    def __str__(self) -> str:
        return f"{self.memory_id} #{self.number} {self.op}"
