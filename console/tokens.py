"""Agent tokens: created with their secret shown once, stored hashed, revocable.

A secret is `rct_<prefix>_<random>`: 32 random bytes (256 bits) after a short
public prefix. Only the sha256 of the whole secret is stored; sha256 is enough
for a high-entropy secret (no dictionary to defend against, so no slow KDF).
Verification looks the row up by its prefix and compares hashes with
`hmac.compare_digest`, so timing reveals nothing about the stored hash.
`last_used` is written at most once a minute per token to keep reads from
turning into writes under load.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from console.models import AgentToken, Project
from recall.types import ISOLATION_SEALED

SCHEME = "rct"
PREFIX_CHARS = 10
LAST_USED_EVERY = timedelta(minutes=1)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> tuple[str, str]:
    """A fresh (prefix, secret) pair."""
    prefix = secrets.token_hex(PREFIX_CHARS // 2)
    return prefix, f"{SCHEME}_{prefix}_{secrets.token_urlsafe(32)}"


def _prefix_of(secret: str) -> str | None:
    scheme, _, rest = secret.partition("_")
    prefix, _, random_part = rest.partition("_")
    if scheme != SCHEME or len(prefix) != PREFIX_CHARS or not random_part:
        return None
    return prefix


@transaction.atomic
def token_create(
    *, agent: str, projects: Sequence[str], may_write: bool = False, may_admin: bool = False
) -> tuple[AgentToken, str]:
    """A token bound to `projects`; returns it with its secret (never stored, shown once).

    A sealed project lets nothing in or out, so its token names it alone.
    `may_admin`: the token may create projects (and is granted each one).
    """
    agent = agent.strip()
    if not agent or len(agent) > 120:
        raise ValidationError("The agent name must be 1-120 characters.")
    slugs = list(dict.fromkeys(projects))
    if not slugs:
        raise ValidationError("A token needs at least one project.")
    found = {p.slug: p for p in Project.objects.filter(slug__in=slugs)}
    missing = [s for s in slugs if s not in found]
    if missing:
        raise ValidationError(f"No such project: {', '.join(missing)}.")
    token_projects_check(list(found.values()))
    prefix, secret = new_secret()
    token = AgentToken.objects.create(
        agent=agent,
        prefix=prefix,
        secret_hash=hash_secret(secret),
        may_write=may_write,
        may_admin=may_admin,
    )
    token.projects.set(found.values())
    return token, secret


def token_scope(token: AgentToken) -> str:
    """What a token may do, in the words `agent_token create` prints: "read-only",
    "read-write", either followed by ", admin" (it may create projects)."""
    scope = "read-write" if token.may_write else "read-only"
    return scope + (", admin" if token.may_admin else "")


def token_projects_check(projects: Sequence[Project]) -> None:
    """Raise ValidationError when a sealed project is mixed with others.

    The one rule for the command, the admin form and `token_create`: a
    ValidationError here is shown to the person as a form or command error.
    """
    sealed = [p.slug for p in projects if p.isolation == ISOLATION_SEALED]
    if sealed and len(projects) > 1:
        raise ValidationError(
            f"{sealed[0]} is sealed (nothing in or out): its token may name no other project."
        )


def token_verify(secret: str) -> AgentToken | None:
    """The live token this secret belongs to, or None (unknown, malformed or revoked)."""
    prefix = _prefix_of(secret or "")
    if prefix is None:
        return None
    wanted = hash_secret(secret)
    match: AgentToken | None = None
    for token in AgentToken.objects.filter(prefix=prefix):
        if hmac.compare_digest(token.secret_hash, wanted):
            match = token
    if match is None or match.revoked is not None:
        return None
    now = timezone.now()
    if match.last_used is None or now - match.last_used >= LAST_USED_EVERY:
        AgentToken.objects.filter(pk=match.pk).update(last_used=now)
        match.last_used = now
    return match


MIN_PREFIX = 4  # the fewest characters of a prefix that find a token by its start


def token_find(id_or_prefix: str) -> AgentToken:
    """One token by numeric id, prefix, or the start of a prefix (`MIN_PREFIX` characters
    or more). Raises AgentToken.DoesNotExist or ValidationError (several match)."""
    key = id_or_prefix.strip()
    if key.startswith(f"{SCHEME}_"):
        key = _prefix_of(key) or key.split("_")[1]
    query = Q(prefix=key) | Q(pk=int(key)) if key.isdigit() else Q(prefix=key)
    rows = list(AgentToken.objects.filter(query)[:2])
    if not rows and len(key) >= MIN_PREFIX:  # the start of a prefix, as `list` shows it
        rows = list(AgentToken.objects.filter(prefix__startswith=key)[:2])
    if not rows:
        why = f" (a prefix's start needs at least {MIN_PREFIX} characters)"
        said = "" if key.isdigit() or len(key) >= MIN_PREFIX else why
        raise AgentToken.DoesNotExist(f"no token with id or prefix {id_or_prefix!r}{said}")
    if len(rows) > 1:
        raise ValidationError(f"{id_or_prefix!r} matches several tokens; give the numeric id.")
    return rows[0]


def token_revoke(*, token: AgentToken) -> AgentToken:
    """Stamp `revoked` (idempotent); the token stops working on its next request."""
    if token.revoked is None:
        token.revoked = timezone.now()
        AgentToken.objects.filter(pk=token.pk).update(revoked=token.revoked)
    return token


def token_list() -> QuerySet[AgentToken]:
    return AgentToken.objects.prefetch_related("projects").order_by("-created", "-id")
