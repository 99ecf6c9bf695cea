"""Who is logged in, read with compiled statements on every console request.

Each logged-in request reads its session row and its user row. Through the
ORM each read compiles its SQL again, about 0.35 ms apiece, which made a
login-guarded page cost 1.7 ms before its view ran (the palette's keystrokes
pay it each time). These two classes are Django's own database session store
and model backend with those two reads done by `console.prepared.Prepared`
(compiled once, values bound); everything else (decoding, the session hash
check, expiry, writes, `user_can_authenticate`) is Django's, unchanged.

Settings: `SESSION_ENGINE = "console.sessions"`, and `console.sessions.
ModelBackend` in place of Django's in `AUTHENTICATION_BACKENDS` (a session
records its backend's path, so sessions made before the switch log in again).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth import backends as auth_backends
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.db.models import QuerySet
from django.utils import timezone

from console.prepared import Prepared

USING = "default"
User = get_user_model()
_USER_FIELDS = [f.attname for f in User._meta.concrete_fields]


def _session(_: object, key: str, now: datetime) -> QuerySet[Session]:
    return Session.objects.filter(session_key=key, expire_date__gt=now)


def _user(_: object, pk: int) -> QuerySet[Any]:
    return User._default_manager.filter(pk=pk)


_SESSION = Prepared(_session, model=Session, columns=["session_data"], using=USING)
_USER = Prepared(_user, model=User, columns=_USER_FIELDS, using=USING)


class SessionStore(db.SessionStore):
    """Django's database sessions; the row is read by a compiled statement."""

    def _get_session_from_db(self) -> Session | None:
        key = self.session_key
        rows = _SESSION.rows("session", key, timezone.now()) if key else []
        if key is None or not rows:
            self._session_key = None
            return None
        return Session(session_key=key, session_data=rows[0][0])


class ModelBackend(auth_backends.ModelBackend):
    """Django's model backend; a request's user is read by a compiled statement."""

    def get_user(self, user_id: Any) -> Any:
        try:
            pk = int(user_id)
        except (TypeError, ValueError):
            return None
        rows = _USER.rows("user", pk)
        if not rows:
            return None
        user = User.from_db(USING, _USER_FIELDS, rows[0])
        return user if self.user_can_authenticate(user) else None
