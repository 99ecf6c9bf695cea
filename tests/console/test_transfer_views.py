"""Import and export pages (console/views/transfer.py).

The export is the command's bytes, streamed, limited to what the person sees;
the import is a preview (nothing written), then the command's import into one
project, copying rows of other projects under ids of their own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, FakePayload, encode_multipart
from django.urls import reverse
from django.utils import timezone

from console import indexing, selectors, transfer
from console.models import IndexJob, Memory, Project, ProjectMember
from tests.console.transfer_world import uploads_fixture, world_fixture  # noqa: F401

pytestmark = pytest.mark.django_db


def staff(client: Client) -> Client:
    client.force_login(User.objects.create_user("ada", is_staff=True))
    return client


def downloaded(response: Any) -> bytes:
    assert response.status_code == 200 and response.streaming  # never built whole
    return b"".join(response.streaming_content)


def upload(client: Client, key: str, body: bytes, name: str = "export.jsonl") -> Any:
    file = SimpleUploadedFile(name, body, content_type="application/jsonl")
    return client.post(reverse("import_upload", args=[key]), {"file": file})


# --- export -------------------------------------------------------------------


def test_a_project_export_is_the_commands_file_streamed_and_named(
    client: Client, world: dict[str, Project], tmp_path: Path
) -> None:
    call_command("export_memories", "--out", str(tmp_path / "cli.jsonl"), "--project", "alpha")

    response = staff(client).get(reverse("export_download"), {"project": "alpha"})

    assert downloaded(response) == (tmp_path / "cli.jsonl").read_bytes()
    today = timezone.now().date().isoformat()
    assert response["Content-Disposition"] == f'attachment; filename="recall-alpha-{today}.jsonl"'


def test_everything_exported_is_what_the_person_sees(
    client: Client, world: dict[str, Project]
) -> None:
    bob = User.objects.create_user("bob")
    ProjectMember.objects.create(user=bob, project=world["alpha"])
    client.force_login(bob)

    lines = downloaded(client.get(reverse("export_download"))).decode().splitlines()
    names = {r.get("name") or r.get("slug") for r in map(json.loads, lines)}

    assert {"alpha", "deploy-steps", "rollback", "house-style"} <= names
    assert "vault-code" not in names and "secret" not in names and "beta" not in names
    assert client.get(reverse("export_download"), {"project": "secret"}).status_code == 404
    assert client.get(reverse("export_download"), {"project": "nope"}).status_code == 404


# --- import: views ------------------------------------------------------------


def test_upload_previews_then_applies_into_the_project(
    client: Client, world: dict[str, Project]
) -> None:
    staff(client)
    body = b'{"name": "fresh", "description": "A new fact"}\n{oops\n'

    response = upload(client, "beta", body)

    assert response.status_code == 200
    page = response.content.decode()
    assert "export.jsonl:2: not JSON" in page and "data-new-memories>1<" in page
    assert not Memory.objects.filter(project=world["beta"]).exists()
    token = response.context["upload"].token

    done = client.post(reverse("import_apply", args=["beta"]), {"token": token})

    assert done.status_code == 302 and done["Location"] == reverse("project_detail", args=["beta"])
    assert list(Memory.objects.filter(project=world["beta"]).values_list("name", flat=True)) == [
        "fresh"
    ]
    said = client.get(done["Location"]).content.decode()
    assert "Imported 1 memory and 0 notes from export.jsonl; 0 already here; 1 refused" in said
    fresh = Memory.objects.get(project=world["beta"])
    assert IndexJob.objects.filter(item_id=fresh.pk).exists()  # queued with the row
    indexing.apply_pending()  # what the index worker does
    assert indexing.status().drift == 0
    hits = selectors.memory_search(query="fresh fact", projects=["beta"], include_global=False)
    assert [h.id for h in hits.hits] == [fresh.pk]
    again = client.post(reverse("import_apply", args=["beta"]), {"token": token})
    assert again["Location"] == reverse("import_upload", args=["beta"])  # applied once only


def test_the_preview_page_lists_notes_renamed_and_the_import_says_so(
    client: Client, world: dict[str, Project]
) -> None:
    staff(client)
    note = {"type": "note", "title": "Pager rota", "slug": "pager-rota", "body": "Weekly."}
    body = "".join(json.dumps(n) + "\n" for n in (note, {**note, "body": "Daily."}))

    page = upload(client, "beta", body.encode()).content.decode()
    token = client.session["import_uploads"].popitem()[0]
    done = client.post(reverse("import_apply", args=["beta"]), {"token": token})

    assert "data-renamed>1<" in page and "data-new-notes>2<" in page
    assert (
        "export.jsonl:2: note &#x27;Pager rota&#x27; imported as &#x27;pager-rota-2&#x27;" in page
    )
    said = client.get(done["Location"]).content.decode()
    assert "Imported 0 memories and 2 notes from export.jsonl; 0 already here; 1 note under " in (
        said
    )


def test_a_file_over_the_limit_is_refused_with_its_size(
    client: Client, world: dict[str, Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transfer, "MAX_UPLOAD_BYTES", 2 * 1024 * 1024)
    response = upload(staff(client), "beta", b"x" * (3 * 1024 * 1024))

    assert response.status_code == 413
    assert "The upload is 3.0 MB; the console imports files up to 2 MB" in (
        response.content.decode()
    )


def test_the_upload_needs_the_csrf_token(world: dict[str, Project]) -> None:
    client = staff(Client(enforce_csrf_checks=True))
    assert upload(client, "beta", b'{"name": "x", "description": "y"}\n').status_code == 403


def test_import_is_for_a_project_the_person_may_change(
    client: Client, world: dict[str, Project]
) -> None:
    bob = User.objects.create_user("bob")
    ProjectMember.objects.create(user=bob, project=world["alpha"])
    client.force_login(bob)
    body = b'{"name": "x", "description": "y"}\n'

    assert upload(client, "secret", body).status_code == 404
    assert client.get(reverse("import_upload", args=["_global"])).status_code == 404
    assert upload(client, "alpha", body).status_code == 200


def test_another_sessions_upload_cannot_be_applied(
    client: Client, world: dict[str, Project]
) -> None:
    token = (
        upload(staff(client), "beta", b'{"name": "x", "description": "y"}\n')
        .context["upload"]
        .token
    )
    other = Client()
    other.force_login(User.objects.create_user("eve", is_staff=True))

    other.post(reverse("import_apply", args=["beta"]), {"token": token})

    assert not Memory.objects.filter(project=world["beta"]).exists()


def test_hostile_html_in_a_file_is_escaped_in_the_preview_and_on_the_memory(
    client: Client, world: dict[str, Project]
) -> None:
    staff(client)
    hostile = "<script>alert(1)</script>"
    body = json.dumps({"name": "x", "description": "y", "kind": hostile}) + "\n"
    body += json.dumps({"name": "evil", "description": "d", "body": hostile}) + "\n"

    response = upload(client, "beta", body.encode())

    assert hostile not in response.content.decode()
    client.post(reverse("import_apply", args=["beta"]), {"token": response.context["upload"].token})
    memory = Memory.objects.get(project=world["beta"], name="evil")
    assert memory.body == hostile  # stored as written, escaped where shown
    assert hostile not in client.get(reverse("memory_detail", args=[memory.pk])).content.decode()


def test_the_project_page_links_export_and_import(
    client: Client, world: dict[str, Project]
) -> None:
    page = staff(client).get(reverse("project_detail", args=["alpha"])).content.decode()
    assert f'href="{reverse("export_download")}?project=alpha"' in page
    assert f'href="{reverse("import_upload", args=["alpha"])}"' in page
    projects = client.get(reverse("projects")).content.decode()
    assert f'href="{reverse("export_download")}"' in projects


class Counted(FakePayload):
    """A request body that counts the bytes the server read of it."""

    def __init__(self, body: bytes) -> None:
        super().__init__(body)
        self.taken = 0

    def read(self, size: int = -1) -> bytes:
        got = super().read(size)
        self.taken += len(got)
        return got


def test_a_body_announced_over_the_limit_is_refused_before_a_byte_is_read(
    client: Client, world: dict[str, Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The 20 MB cap was checked on the file after the whole body was received (and kept
    # in a temporary file by Django's upload handler): 200 MB sent, 200 MB read first.
    monkeypatch.setattr(transfer, "MAX_UPLOAD_BYTES", 1024 * 1024)
    body = Counted(b"x" * 100)
    length = str(30 * 1024 * 1024)
    response = staff(client).generic(
        "POST", reverse("import_upload", args=["beta"]), b"", content_type=MULTIPART_CONTENT,
        **{"wsgi.input": body, "CONTENT_LENGTH": length},
    )  # fmt: skip

    assert response.status_code == 413 and body.taken == 0
    page = response.content.decode()
    assert "The upload is 30.0 MB; the console imports files up to 1 MB" in page
    assert "nothing was read or kept" in page
    assert not list((Path(settings.DATA_DIR) / "uploads").glob("*/*"))


def test_a_file_streaming_past_the_limit_is_cut_off_and_nothing_kept(
    client: Client, world: dict[str, Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A body whose announced length passes (here the form's own allowance is made wide)
    # and whose file runs past the cap: read up to the cap and a chunk, not the rest.
    monkeypatch.setattr(transfer, "MAX_UPLOAD_BYTES", 1024 * 1024)
    monkeypatch.setattr(transfer, "FORM_BYTES", 4 * 1024 * 1024, raising=False)
    file = SimpleUploadedFile("big.jsonl", b"x" * (3 * 1024 * 1024))
    data = encode_multipart(BOUNDARY, {"file": file})
    body = Counted(data)

    response = staff(client).generic(
        "POST", reverse("import_upload", args=["beta"]), data, content_type=MULTIPART_CONTENT,
        **{"wsgi.input": body},
    )  # fmt: skip

    assert response.status_code == 413
    assert "big.jsonl is over 1 MB" in response.content.decode()
    assert body.taken < 1.2 * 1024 * 1024 < len(data)
    assert not list((Path(settings.DATA_DIR) / "uploads").glob("*/*"))
