"""The WSGI application (gunicorn's `console.wsgi`), refused when a setting is bad
or the database cannot be reached.

`make serve` runs `migrate` first, whose system checks stop on a bad setting or
environment value; a server started on its own (the README's Deployment line)
runs the same checks here, so a bad `RECALL_*` value stops start-up instead of
answering 503 on every search. It connects once too: a DATABASE_URL naming a
database that is not there (or a server that is down) stops start-up in one line
with the server's reason, instead of a server answering every request 500.
"""

from __future__ import annotations

import os

from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.core.wsgi import get_wsgi_application
from django.db import connections

from console.bodies import reading_bodies
from console.pgbackend import unreachable

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
application = reading_bodies(get_wsgi_application())  # console.bodies
if serious := [str(m) for m in run_checks() if m.is_serious()]:
    raise ImproperlyConfigured("; ".join(serious))
said = unreachable()
# Nothing connected crosses gunicorn's fork (--preload): the connection, and the pool
# it came from, whose sockets two workers would share (their replies mixed: "the last
# operation didn't produce records").
database = connections["default"]
database.close()
if hasattr(database, "close_pool"):
    database.close_pool()
if said:
    raise ImproperlyConfigured(said)
