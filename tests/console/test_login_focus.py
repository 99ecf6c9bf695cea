"""A refused log-in puts the cursor where the person types next."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db


def _autofocused(page: str) -> list[str]:
    return re.findall(
        r'<input[^>]*\bautofocus\b[^>]*\bname="(\w+)"|<input[^>]*\bname="(\w+)"[^>]*\bautofocus\b',
        page,
    )


def test_a_refused_log_in_focuses_the_password_it_cleared(client: Client, planes: Path) -> None:
    # The username stayed filled and focused: the next keys typed went after it.
    User.objects.create_user("ada", password="correct horse battery")

    first = client.get("/login/").content.decode()
    refused = client.post("/login/", {"username": "ada", "password": "wrong"}).content.decode()
    blank = client.post("/login/", {"username": "", "password": "x"}).content.decode()

    def names(page: str) -> list[str]:
        return ["".join(pair) for pair in _autofocused(page)]

    assert names(first) == ["username"]
    assert "do not match a login" in refused and names(refused) == ["password"]
    assert names(blank) == ["username"]  # nothing typed there yet: start there
