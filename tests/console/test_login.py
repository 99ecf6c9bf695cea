"""Console login throttling (django-axes): a guessed password stops working for a while."""

from __future__ import annotations

import logging
import stat
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"
LOCKED = "Too many failed log-ins"


@pytest.fixture
def ada(settings: Any) -> User:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return User.objects.create_user("ada", password=PASSWORD)


def log_in(client: Client, password: str, *, username: str = "ada", **extra: Any) -> Any:
    return client.post("/login/", {"username": username, "password": password}, **extra)


def fail(client: Client, times: int, **extra: Any) -> None:
    for n in range(times):
        log_in(client, f"wrong-{n}", **extra)


def logged_in(client: Client) -> bool:
    return client.get("/").status_code == 200


def test_the_right_password_is_refused_during_the_lock_out(
    client: Client, ada: User, caplog: pytest.LogCaptureFixture
) -> None:
    fail(client, settings.AXES_FAILURE_LIMIT)

    with caplog.at_level(logging.WARNING):
        response = log_in(client, PASSWORD)

    assert response.status_code == 429
    page = response.content.decode()
    assert LOCKED in page and 'id="id_username"' in page  # the login page, with its form
    assert not logged_in(client)
    assert any("locked out" in r.getMessage() and "ada" in r.getMessage() for r in caplog.records)


def test_the_lock_out_ends_after_the_cool_off(client: Client, ada: User) -> None:
    from axes.models import AccessAttempt

    fail(client, settings.AXES_FAILURE_LIMIT)
    assert log_in(client, PASSWORD).status_code == 429

    earlier = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=earlier)

    assert log_in(client, PASSWORD).status_code == 302
    assert logged_in(client)


def test_fewer_failures_than_the_limit_still_let_the_right_password_in(
    client: Client, ada: User
) -> None:
    fail(client, settings.AXES_FAILURE_LIMIT - 1)

    assert log_in(client, PASSWORD).status_code == 302
    assert logged_in(client)


def test_a_forwarded_for_header_does_not_escape_the_lock_out(client: Client, ada: User) -> None:
    fail(client, settings.AXES_FAILURE_LIMIT)

    response = log_in(client, PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.9")

    assert response.status_code == 429


def test_the_lock_is_per_login_and_address(client: Client, ada: User) -> None:
    User.objects.create_user("grace", password=PASSWORD)
    fail(client, settings.AXES_FAILURE_LIMIT)

    assert log_in(Client(), PASSWORD, username="grace").status_code == 302
    assert log_in(Client(), PASSWORD, REMOTE_ADDR="198.51.100.7").status_code == 302


def test_ensure_login_keeps_the_password_file_private(settings: Any, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    call_command("ensure_login", stdout=StringIO())

    stored = tmp_path / "login.txt"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    username, password = stored.read_text().split()
    assert User.objects.get(username=username).check_password(password)


def test_a_login_link_opened_logged_in_goes_on_to_its_page(client: Client, ada: User) -> None:
    # It showed an empty login form beside "Log out ada".
    client.force_login(ada)

    response = client.get("/login/?next=/projects/")

    assert response.status_code == 302 and response["Location"] == "/projects/"


def test_a_second_login_made_by_ensure_login_keeps_the_first_ones_line(
    settings: Any, tmp_path: Path
) -> None:
    # `--username ops` wrote its line over login.txt: the admin's password was gone,
    # and the next `make run` printed ops's login as the console's.
    settings.DATA_DIR = tmp_path
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("ensure_login", stdout=StringIO())
    call_command("ensure_login", "--username", "ops", stdout=StringIO())
    again = StringIO()
    call_command("ensure_login", stdout=again)

    lines = [line.split() for line in (tmp_path / "login.txt").read_text().splitlines()]
    assert [name for name, _ in lines] == ["admin", "ops"]
    for name, password in lines:
        assert User.objects.get(username=name).check_password(password)
    assert again.getvalue().startswith(f"Console login: admin / {lines[0][1]} ")


def test_ensure_login_keeps_the_password_of_a_login_its_file_does_not_hold(
    settings: Any, tmp_path: Path
) -> None:
    # A restored backup (the README lists the database and the secret key, not
    # login.txt): `make run` set the admin a new password, printed it as ever, and
    # the operator's own was refused.
    settings.DATA_DIR = tmp_path
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    User.objects.create_superuser(username="admin", password="the-operators-own")
    said = StringIO()

    call_command("ensure_login", stdout=said)

    assert User.objects.get(username="admin").check_password("the-operators-own")
    assert "its password is the one it had" in said.getvalue()
    assert "--reset" in said.getvalue() and not (tmp_path / "login.txt").exists()


def test_a_wrong_password_is_refused_in_the_console_s_words(client: Client, ada: User) -> None:
    """The page said Django's sentence ("Your username and password didn't match"), and
    the form carried its other one ("Please enter a correct username and password.
    Note that both fields may be case-sensitive.")."""
    page = log_in(client, "wrong").content.decode()

    said = "That username and password do not match a login. Check both (capital letters count)"
    assert said in page
    assert "didn" not in page and "Please enter a correct" not in page
    assert "username is wrong" not in page.lower() and "password is wrong" not in page.lower()


def test_a_blank_username_is_named(client: Client, ada: User) -> None:
    page = log_in(client, "wrong", username="").content.decode()

    assert "Username is required." in page and "This field is required" not in page
