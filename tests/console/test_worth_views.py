"""The console's controls for importance, worth, decay and expiry: the Recall
inspector's options, the memory page's worth and expiry, the edit form's expiry."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from console import indexing, services
from console.models import Memory
from tests.console.test_views import HX, form_data, make_memory


@pytest.fixture
def pair(planes: Path) -> tuple[Memory, Memory]:
    project = services.project_create(slug="billing-api", name="Billing API")
    plain = make_memory(project, name="chroma-plain", description="chroma boot race")
    vital = make_memory(project, name="chroma-vital", description="chroma boot race",
                        importance=1.0)  # fmt: skip
    indexing.apply_pending()
    return plain, vital


def _order(html: str, *names: str) -> list[str]:
    return sorted(names, key=html.index)


def test_inspector_controls_importance_worth_and_decay(admin_client: Client, pair: tuple) -> None:
    plain, vital = pair
    ask = {"mode": "recall", "query": "chroma", "project": "billing-api",
           "w_semantic": "0", "w_graph": "0", "w_session": "0"}  # fmt: skip

    page = admin_client.get("/inspect/").content.decode()
    weighted = admin_client.get("/inspect/", ask, **HX).content.decode()
    unweighted = admin_client.get("/inspect/", {**ask, "importance_weighted": "false"}, **HX)
    decayed = admin_client.get("/inspect/", {**ask, "decay": "true", "worth_weight": "2"}, **HX)
    bad = admin_client.get("/inspect/", {**ask, "worth_weight": "3"}, **HX).content.decode()

    for control in ('name="importance_weighted"', 'name="worth_weight"', 'name="decay"'):
        assert control in page
    assert _order(weighted, plain.name, vital.name) == [vital.name, plain.name]
    assert "<span data-hit-worth>worth 0.50</span>" in weighted
    # the two tie without importance: their order is the id's (plain was written first)
    assert _order(unweighted.content.decode(), plain.name, vital.name) == [plain.name, vital.name]
    assert decayed.status_code == 200 and vital.name in decayed.content.decode()
    assert "Worth weight must be between 0 and 2." in bad


def test_memory_page_shows_worth_and_expiry_and_the_form_sets_expiry(
    admin_client: Client, pair: tuple
) -> None:
    plain, _ = pair
    Memory.objects.filter(pk=plain.pk).update(feedback_helpful=3, feedback_harmful=1)

    shown = admin_client.get(f"/memories/{plain.pk}/").content.decode()
    data = form_data(plain, expires_at="2030-01-02 03:04")
    saved = admin_client.post(f"/memories/{plain.pk}/edit/", data, **HX)
    after = admin_client.get(f"/memories/{plain.pk}/").content.decode()

    assert "data-worth" in shown and "0.67" in shown  # (3 + 1) / (3 + 1 + 2)
    assert "3 helpful, 1 harmful" in shown and "data-expires" not in shown
    assert saved["HX-Redirect"] == f"/memories/{plain.pk}/"
    plain.refresh_from_db()
    assert plain.expires_at is not None
    assert plain.expires_at.isoformat() == "2030-01-02T03:04:00+00:00"
    assert "data-expires" in after and "2030-01-02 03:04" in after
    assert 'name="expires_at"' in admin_client.get(f"/memories/{plain.pk}/edit/").content.decode()


def test_an_expired_memory_leaves_the_console_lists_and_search(
    admin_client: Client, pair: tuple
) -> None:
    plain, vital = pair
    for m in pair:
        services.favorite_toggle(item=m, value=True)
    Memory.objects.filter(pk=vital.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    project = admin_client.get("/projects/billing-api/").content.decode()
    starred = admin_client.get("/favorites/").content.decode()
    found = admin_client.get("/", {"q": "chroma"}).content.decode()

    for html in (project, starred, found):
        assert plain.name in html and vital.name not in html
