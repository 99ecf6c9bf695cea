"""Agent tokens: hashed at rest, shown once, verified in constant time, revocable."""

from __future__ import annotations

import hashlib
import html
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from console import services, tokens
from console.models import AgentToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def projects() -> None:
    services.project_create(slug="alpha")
    services.project_create(slug="beta")
    services.project_create(slug="vault", isolation="sealed")


def test_create_stores_only_the_hash_and_binds_projects(projects: None) -> None:
    token, secret = tokens.token_create(agent="coder", projects=["alpha", "beta"], may_write=True)

    row = AgentToken.objects.get(pk=token.pk)
    assert secret.startswith(f"rct_{row.prefix}_") and len(secret) > 50
    assert row.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in row.secret_hash
    assert sorted(row.projects.values_list("slug", flat=True)) == ["alpha", "beta"]
    assert row.may_write is True and row.revoked is None


def test_two_tokens_never_share_a_secret(projects: None) -> None:
    secrets = {tokens.token_create(agent="a", projects=["alpha"])[1] for _ in range(20)}

    assert len(secrets) == 20


def test_verify_accepts_the_secret_and_nothing_else(projects: None) -> None:
    token, secret = tokens.token_create(agent="coder", projects=["alpha"])

    assert tokens.token_verify(secret) == token
    for wrong in ("", "nonsense", secret[:-1] + ("A" if secret[-1] != "A" else "B"), secret + "x",
                  secret.replace("rct_", "xyz_"), f"rct_{token.prefix}_"):  # fmt: skip
        assert tokens.token_verify(wrong) is None, wrong


def test_a_revoked_token_stops_verifying(projects: None) -> None:
    token, secret = tokens.token_create(agent="coder", projects=["alpha"])

    tokens.token_revoke(token=token)

    assert tokens.token_verify(secret) is None
    first = AgentToken.objects.get(pk=token.pk).revoked
    tokens.token_revoke(token=token)
    assert AgentToken.objects.get(pk=token.pk).revoked == first


def test_last_used_is_written_at_most_once_a_minute(projects: None) -> None:
    token, secret = tokens.token_create(agent="coder", projects=["alpha"])

    tokens.token_verify(secret)
    first = AgentToken.objects.get(pk=token.pk).last_used
    tokens.token_verify(secret)
    assert AgentToken.objects.get(pk=token.pk).last_used == first

    AgentToken.objects.filter(pk=token.pk).update(last_used=first - timedelta(minutes=2))
    tokens.token_verify(secret)
    assert AgentToken.objects.get(pk=token.pk).last_used > first - timedelta(seconds=1)
    assert first is not None and first <= timezone.now()


@pytest.mark.parametrize(
    ("agent", "slugs", "message"),
    [
        ("", ["alpha"], "agent name"),
        ("coder", [], "at least one project"),
        ("coder", ["alpha", "nowhere"], "No such project: nowhere"),
        ("coder", ["vault", "alpha"], "vault is sealed"),
    ],
)
def test_create_refuses(projects: None, agent: str, slugs: list[str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        tokens.token_create(agent=agent, projects=slugs)
    assert AgentToken.objects.count() == 0


def test_a_sealed_project_alone_is_fine(projects: None) -> None:
    token, _ = tokens.token_create(agent="vaulter", projects=["vault"])

    assert list(token.projects.values_list("slug", flat=True)) == ["vault"]


def test_find_by_id_prefix_or_secret(projects: None) -> None:
    token, secret = tokens.token_create(agent="coder", projects=["alpha"])

    assert tokens.token_find(str(token.pk)) == token
    assert tokens.token_find(token.prefix) == token
    assert tokens.token_find(secret) == token
    with pytest.raises(AgentToken.DoesNotExist):
        tokens.token_find("ffffffffff")
    tokens.token_create(agent="reviewer", projects=["alpha"])  # another, to tell apart
    assert tokens.token_find(token.prefix[:8]) == token  # the start of its prefix
    with pytest.raises(AgentToken.DoesNotExist):
        tokens.token_find(token.prefix[:3])  # too short to name one


# --- the command --------------------------------------------------------------


def _run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("agent_token", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_command_names_an_unknown_project_and_heads_its_list(projects: None) -> None:
    # "No such project: nope." said neither what the slug is nor where to look; the
    # list's columns (prefix, scope) had no names.
    with pytest.raises(CommandError, match=r"no project with slug 'nope': `manage.py project"):
        _run("create", "--agent", "coder", "--project", "alpha", "--project", "nope")
    assert not AgentToken.objects.exists()
    _run("create", "--agent", "coder", "--project", "alpha")
    head, row = _run("list")[0].splitlines()
    assert head.split() == ["id", "prefix", "agent", "scope", "projects", "last", "used", "state"]
    assert row.split()[2:5] == ["coder", "ro", "alpha"]


def test_command_creates_lists_and_revokes(projects: None) -> None:
    out, err = _run("create", "--agent", "coder", "--project", "alpha", "--project", "beta",
                    "--write")  # fmt: skip
    secret = out.strip()
    assert secret.startswith("rct_") and "shown once" in err
    token = tokens.token_verify(secret)
    assert token is not None and token.may_write

    listed, _ = _run("list")
    assert token.prefix in listed and "alpha,beta" in listed and "rw" in listed
    assert secret not in listed and "live" in listed

    revoked, _ = _run("revoke", token.prefix[:4])  # the start `list` shows is enough
    assert f"revoked token {token.pk}" in revoked
    assert tokens.token_verify(secret) is None
    assert "revoked" in _run("list")[0]
    again, _ = _run("revoke", str(token.pk))  # it said "revoked token N" again
    assert f"token {token.pk} ({token.prefix}) of coder was revoked already" in again


def test_command_reports_errors_cleanly(projects: None) -> None:
    with pytest.raises(CommandError, match="no project with slug 'nowhere'"):
        _run("create", "--agent", "coder", "--project", "nowhere")
    with pytest.raises(CommandError, match="no token"):
        _run("revoke", "ffffffffff")
    with pytest.raises(CommandError, match="a prefix's start needs at least 4 characters"):
        _run("revoke", "c")  # the start of a real prefix, too short to be one
    assert _run("list")[0].strip() == "no tokens"


def test_admin_revokes_tokens_in_bulk(projects: None, admin_client) -> None:
    token, secret = tokens.token_create(agent="coder", projects=["alpha"])

    r = admin_client.post(
        "/admin/console/agenttoken/",
        {"action": "revoke_tokens", "_selected_action": [token.pk]},
        follow=True,
    )

    assert r.status_code == 200
    assert tokens.token_verify(secret) is None


def test_admin_add_shows_the_secret_once(projects: None, admin_client) -> None:
    from console.models import Project

    alpha = Project.objects.get(slug="alpha")
    r = admin_client.post(
        "/admin/console/agenttoken/add/",
        {"agent": "from-admin", "projects": [alpha.pk], "may_write": "on"},
        follow=True,
    )

    assert r.status_code == 200
    token = AgentToken.objects.get(agent="from-admin")
    page = r.content.decode()
    secret = re.search(r"rct_[0-9a-f]{10}_[A-Za-z0-9_-]{43}", page)
    assert secret is not None and tokens.token_verify(secret.group()) == token
    assert token.may_write and list(token.projects.all()) == [alpha]
    # How to use it, as `manage.py agent_token create` says (the page said neither).
    said = html.unescape(page)
    assert "Authorization: Bearer <secret>" in said and "RECALL_AGENT_TOKEN" in said
