"""Who is logged in (`console.sessions`): Django's sessions and model backend, their
per-request reads compiled once. What a login means must not change with it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from console import sessions

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"


@pytest.fixture
def ada(settings: Any) -> User:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return User.objects.create_user("ada", password=PASSWORD)


def logged_in(client: Client) -> bool:
    return client.get("/favorites/").status_code == 200


def log_in(client: Client) -> None:
    response = client.post("/login/", {"username": "ada", "password": PASSWORD})
    assert response.status_code == 302


def test_the_console_uses_these_classes() -> None:
    assert settings.SESSION_ENGINE == "console.sessions"
    assert "console.sessions.ModelBackend" in settings.AUTHENTICATION_BACKENDS
    assert "django.contrib.auth.backends.ModelBackend" not in settings.AUTHENTICATION_BACKENDS


def test_a_login_holds_across_requests_and_reads_the_user_as_stored(
    client: Client, ada: User
) -> None:
    log_in(client)

    assert logged_in(client)
    user = sessions.ModelBackend().get_user(ada.pk)
    assert user is not None and user.pk == ada.pk and user.username == "ada"
    assert user.date_joined == ada.date_joined and user.date_joined.tzinfo is not None
    assert user.is_active is True and user.password == ada.password


def test_a_guarded_page_reads_the_session_and_the_user_once_each(client: Client, ada: User) -> None:
    log_in(client)
    client.get("/favorites/")

    with CaptureQueriesContext(connection) as queries:
        client.get("/favorites/")

    sql = [q["sql"] for q in queries.captured_queries]
    assert sum('FROM "django_session"' in s for s in sql) == 1
    assert sum('FROM "auth_user"' in s for s in sql) == 1


def test_logging_out_ends_the_session_for_a_copied_cookie(client: Client, ada: User) -> None:
    log_in(client)
    copy = Client()
    copy.cookies = client.cookies.__class__(client.cookies)  # the same session cookie

    left = client.post("/logout/", follow=True)

    assert not Session.objects.exists()
    assert not logged_in(copy)
    assert "Logged out ada." in left.content.decode()  # the login page says what happened


def test_an_expired_session_is_no_login(client: Client, ada: User) -> None:
    log_in(client)
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))

    assert not logged_in(client)


def test_an_unknown_or_malformed_session_key_is_no_login(client: Client, ada: User) -> None:
    for key in ("x" * 32, "short", ""):
        client.cookies[settings.SESSION_COOKIE_NAME] = key
        assert not logged_in(client)


def test_a_deactivated_user_is_logged_out(client: Client, ada: User) -> None:
    log_in(client)
    User.objects.filter(pk=ada.pk).update(is_active=False)

    assert not logged_in(client)
    assert sessions.ModelBackend().get_user(ada.pk) is None
    assert sessions.ModelBackend().get_user("not a number") is None
    assert sessions.ModelBackend().get_user(ada.pk + 1000) is None


def test_a_password_change_logs_out_the_other_sessions(client: Client, ada: User) -> None:
    log_in(client)
    ada.set_password("another horse battery")
    ada.save()

    assert not logged_in(client)
