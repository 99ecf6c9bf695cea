"""One settings file: Django, third-party, project. Values come from the
environment with explicit defaults; the engine never reads settings (the
composition root, `console/wiring.py`, hands it plain values)."""

from __future__ import annotations

import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from console import database_url

# Generic classes such as ModelAdmin[Memory] subscript at run time (typing only).
django_stubs_ext.monkeypatch()


def env(name: str, default: str) -> str:
    return os.environ.get(name, default)


# A bad value stops start-up naming its variable (README "Configuration"): a typo
# in a whole number was a bare int() traceback, and any unknown word read as false
# (RECALL_SYNC_ON_COMMIT=maybe turned indexing on commit off without a word).
TRUE_WORDS, FALSE_WORDS = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    raw = env(name, "1" if default else "0")
    if raw.strip().lower() in TRUE_WORDS | FALSE_WORDS:
        return raw.strip().lower() in TRUE_WORDS
    raise ImproperlyConfigured(f"{name}={raw!r}: expected 1/0, true/false, yes/no or on/off")


def env_int(name: str, default: str, minimum: int | None = None) -> int:
    raw = env(name, default)
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}={raw!r}: expected a whole number (default {default})"
        ) from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(
            f"{name}={raw!r}: expected a whole number >= {minimum} (default {default})"
        )
    return value


def env_level(name: str, default: str) -> str:
    raw = env(name, default).strip().upper()
    if raw not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ImproperlyConfigured(
            f"{name}={raw!r}: expected DEBUG, INFO, WARNING, ERROR or CRITICAL"
        )
    return raw


BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env("RECALL_DATA_DIR", str(BASE_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)  # SQLite cannot create its folder

# --- Django -----------------------------------------------------------------


def installation_secret_key(data_dir: Path) -> str:
    """This installation's own key, made once and kept in `data_dir/secret_key` (0600).

    A key built into the code is public (it is in the repository), and anyone
    who knows it can forge sessions and password-reset links. The file is
    written under a temporary name and linked into place, so processes that
    start together (gunicorn workers, test runners) agree on one key and never
    read a half-written one. `manage.py check --deploy` refuses known keys
    (console/checks.py, recall.E007).
    """
    path = data_dir / "secret_key"
    try:
        key = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        key = ""
    if key:
        return key
    fd, temporary = tempfile.mkstemp(dir=data_dir, prefix=".secret_key.")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_urlsafe(50) + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:  # another process was first, or the file was empty
            if not path.read_text(encoding="ascii").strip():
                os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return path.read_text(encoding="ascii").strip()


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or installation_secret_key(DATA_DIR)
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "ninja",  # serves its bundled Swagger UI for /api/v1/docs (no CDN)
    "axes",  # login throttling (see AXES_* below)
    "console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "console.errors.api_json_errors",  # under /api/v1, every error is JSON
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files under gunicorn
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "console.middleware.same_person",  # a page opened for another person changes nothing
    "console.actor.acting_person",  # revisions name who changed a memory
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "console.middleware.content_security_policy",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into its page
]

# The axes backend first: it refuses a locked-out login before a password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "console.sessions.ModelBackend",  # Django's, its per-request read compiled once
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"
ASGI_APPLICATION = "console.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

# DATABASE_URL (or RECALL_DATABASE_URL, which wins) selects the database:
# postgres://user:password@host:5432/name for the PostgreSQL profile (psycopg 3,
# a pool of RECALL_DB_POOL_SIZE connections per process; 0 = no pool), else the
# embedded SQLite file under RECALL_DATA_DIR (console/database_url.py).
DATABASE_URL = env("RECALL_DATABASE_URL", "") or env("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {
        "default": database_url.parse(
            DATABASE_URL,
            pool_size=env_int("RECALL_DB_POOL_SIZE", "8", 0),
            conn_max_age=env_int("RECALL_DB_CONN_MAX_AGE", "60", 0),
        )
    }
else:
    DATABASES = {
        "default": {"ENGINE": database_url.SQLITE_ENGINE, "NAME": DATA_DIR / "recall.sqlite3"}
    }
if DATABASES["default"]["ENGINE"] == database_url.SQLITE_ENGINE:
    # One writer at a time: writers queue for up to 20 s (IMMEDIATE takes the write
    # lock when a transaction begins, so it never fails half-way); WAL lets readers
    # read while one writes.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests run on an in-memory database, as Django's own backend's do (pytest-django
    # knows that only by that backend's name: it would make a file name up for ours).
    DATABASES["default"]["TEST"] = {"NAME": ":memory:"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "search"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"  # `collectstatic` fills it; whitenoise serves it
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns at start-up when it is missing

DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# A request body that stops arriving for this long is answered 408 (console/bodies.py).
BODY_IDLE_SECONDS = env_int("RECALL_BODY_IDLE_SECONDS", "10", 1)
SESSION_COOKIE_HTTPONLY = True
SESSION_ENGINE = "console.sessions"  # database sessions, read with a compiled statement
CSRF_COOKIE_HTTPONLY = False
CSRF_FAILURE_VIEW = "console.views.base.csrf_failure"  # logged out too: to the login
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# Served over HTTPS (a TLS proxy or load balancer in front, which sets
# X-Forwarded-Proto and redirects plain HTTP itself): RECALL_HTTPS=1 keeps the
# session and CSRF cookies off plain HTTP and tells browsers to use HTTPS for a
# year (HSTS; RECALL_HSTS_SECONDS). Off by default: `make run` serves plain HTTP
# on 127.0.0.1, where secure cookies would never be sent back.
if env_bool("RECALL_HTTPS", False):
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("RECALL_HSTS_SECONDS", "31536000", 0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"quiet_refusals": {"()": "console.logfilters.QuietRefusals"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["quiet_refusals"]}},
    "root": {"handlers": ["console"], "level": env_level("RECALL_LOG_LEVEL", "WARNING")},
}

# --- third-party --------------------------------------------------------------

# django-axes: after AXES_FAILURE_LIMIT wrong passwords for one login from one
# address, that pair is refused (even with the right password) for the cool-off.
# The address is REMOTE_ADDR only (axes' default): a client-set X-Forwarded-For
# cannot buy fresh attempts. Locking a login from every address would let anyone
# lock the console's owner out. Failures live in the database (tests roll them
# back); `manage.py axes_reset` lifts every lock.
AXES_FAILURE_LIMIT = env_int("RECALL_LOGIN_FAILURE_LIMIT", "5", 1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("RECALL_LOGIN_COOLOFF_MINUTES", "15", 0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "console.lockout.lockout_response"  # the login page, with why

# --- project ----------------------------------------------------------------

# Every key has a default and a one-line meaning; console/checks.py validates
# them at start-up; console/wiring.py turns them into engine objects.
embedder_backend = env("RECALL_EMBEDDER", "recall.embedders.onnx.OnnxEmbedder")
# RECALL_PROFILE picks the derived planes together: `embedded` (tantivy + LanceDB
# directories under RECALL_DATA_DIR) or `postgres` (tsvector and pgvector tables in
# the PostgreSQL database itself, written in the row's own transaction). It follows
# the database unless set; RECALL_TEXT_INDEX / RECALL_VECTOR_INDEX still override.
POSTGRES = DATABASES["default"]["ENGINE"] == database_url.POSTGRES_ENGINE
PROFILE = env("RECALL_PROFILE", "postgres" if POSTGRES else "embedded")
PROFILES = {
    "embedded": {
        "TEXT_INDEX": "recall.indexes.tantivy_index.TantivyIndex",
        "VECTOR_INDEX": "recall.indexes.lance_index.LanceIndex",
    },
    "postgres": {
        "TEXT_INDEX": "console.pgplanes.DjangoPgTextIndex",
        "VECTOR_INDEX": "console.pgplanes.DjangoPgVectorIndex",
    },
}
if PROFILE not in PROFILES:
    raise ImproperlyConfigured(f"RECALL_PROFILE must be one of {sorted(PROFILES)}, not {PROFILE!r}")
text_backend = env("RECALL_TEXT_INDEX", PROFILES[PROFILE]["TEXT_INDEX"])
vector_backend = env("RECALL_VECTOR_INDEX", PROFILES[PROFILE]["VECTOR_INDEX"])
# Each backend's OPTIONS (a backend missing here takes none).
BACKEND_OPTIONS: dict[str, dict[str, Any]] = {
    "recall.indexes.lance_index.LanceIndex": {
        # Build the ANN (IVF_HNSW_SQ) index past this many rows: an exact scan
        # costs ~6 ms at 5k rows and ~15 ms at 10k, the index ~7 ms at either
        # (tests/bench/bench_vector_index.py), with recall@24 of 1.000 at 10k.
        "index_threshold": env_int("RECALL_VECTOR_INDEX_THRESHOLD", "5000", 0),
        # Never inside a request: `indexing.maintain()` builds it off the hot path.
        "auto_index": False,
        # Searches go to the in-process copy (VECTOR_CACHE): small LanceDB caches.
        "cache_mb": 16 if env_bool("RECALL_VECTOR_CACHE", True) else None,
    },
    "console.pgplanes.DjangoPgVectorIndex": {
        # HNSW candidates per search (pgvector's default is 40).
        "ef_search": env_int("RECALL_PG_EF_SEARCH", "100", 1),
    },
}
RECALL: dict[str, Any] = {
    # Each plane's adapter: a dotted path and the OPTIONS its constructor takes
    # (as Django's CACHES). Left out of OPTIONS: a text index's `path` defaults
    # to TEXT_INDEX_DIR/<class name>, a vector index's to VECTOR_INDEX_DIR, and
    # the vector index takes the embedder's `dims`. An empty EMBEDDER BACKEND
    # means no semantic plane. Switching a text backend or the embedder: `reindex`.
    "BACKENDS": {
        "STORE": {"BACKEND": "console.store.DjangoStore", "OPTIONS": {}},
        "TEXT_INDEX": {
            "BACKEND": text_backend,
            "OPTIONS": dict(BACKEND_OPTIONS.get(text_backend, {})),
        },
        "VECTOR_INDEX": {
            "BACKEND": vector_backend,
            "OPTIONS": dict(BACKEND_OPTIONS.get(vector_backend, {})),
        },
        "EMBEDDER": {
            "BACKEND": embedder_backend,
            "OPTIONS": {
                # Threads per query (1 is fastest per query on small machines).
                "threads": env_int("RECALL_EMBEDDER_THREADS", "1", 1),
                # Texts embedded at once when a batch is indexed (one per core): a
                # write of many memories embeds on every core; a query is one text.
                "parallel": env_int("RECALL_EMBEDDER_PARALLEL", str(os.cpu_count() or 1), 1),
                # The derived dynamic-int8 copy (about 2x faster; False = the packaged
                # fp32-compute model). Switching changes the vectors: `reindex`.
                "quantized": env_bool("RECALL_EMBEDDER_QUANTIZED", True),
                # Where that derived copy is cached (built once per machine, about 2 s).
                "cache_dir": Path(
                    env("RECALL_MODEL_CACHE_DIR", str(Path.home() / ".cache" / "recall" / "models"))
                ),
                # Windows of 128 word pieces averaged for a long text (1: cut at 128;
                # 2 costs a long memory twice the embedding for +0.004 nDCG@10 fused
                # on SciFact). Switching changes the vectors' model name: `reindex`.
                "max_chunks": env_int("RECALL_EMBEDDER_MAX_CHUNKS", "1", 1),
            }
            if embedder_backend
            else {},
        },
    },
    # The retrieval channels, each a dotted path to a `recall.ports.Channel` class
    # built from the planes; a config runs a channel when it gives it a weight.
    "CHANNELS": [
        "recall.channels.fulltext.FullText",
        "recall.channels.semantic.Semantic",
        "recall.channels.identifier.Identifier",
        "recall.channels.graph.Graph",
        "recall.channels.session.Session",  # session neighbourhood (Dakera 004)
    ],
    # Where the full-text index and the LanceDB table live (default OPTIONS paths).
    "TEXT_INDEX_DIR": DATA_DIR / "text",
    "VECTOR_INDEX_DIR": DATA_DIR / "vectors",
    # Threads for bulk embedding in batch commands (import, reindex, bench ingest).
    "EMBEDDER_BATCH_THREADS": env_int("RECALL_EMBEDDER_BATCH_THREADS", str(os.cpu_count() or 1)),
    # Where the planes share the database's connection (the postgres profile), write
    # them in the row's own transaction (off = through the outbox, as embedded planes).
    "INDEX_IN_TRANSACTION": env_bool("RECALL_INDEX_IN_TRANSACTION", True),
    # Embed a long memory's sentences beside its vector (recall/passages.py; about four
    # times its embedding work). Off: none are written, Recall reads each memory's one
    # vector, and a reindex after turning it on again writes what is missing.
    "PASSAGES": env_bool("RECALL_PASSAGES", True),
    # Apply pending index jobs on commit (off = only `manage.py sync_indexes`).
    "SYNC_ON_COMMIT": env_bool("RECALL_SYNC_ON_COMMIT", True),
    # Answer vector searches (Recall, Search, dedup hints) from an in-process HNSW
    # copy of the vector plane, loaded on a process's first search and kept
    # current from the plane (recall/indexes/hot_vectors.py); off: ask LanceDB.
    "VECTOR_CACHE": env_bool("RECALL_VECTOR_CACHE", True),
    # The index worker writes that copy's arrays beside the plane (<plane>-copy) and
    # serving processes map them instead of reading the whole plane: shared file
    # pages, not a private copy each (recall/indexes/copy_snapshot.py); off: read it.
    "VECTOR_SNAPSHOTS": env_bool("RECALL_VECTOR_SNAPSHOTS", True),
    # Every write through that copy is also journaled beside the snapshots, and a
    # process that mapped one follows the journal instead of polling the plane, so a
    # serving process never loads LanceDB (recall/indexes/copy_journal.py); the same
    # in every process of a deployment. Off: poll the plane.
    "VECTOR_JOURNAL": env_bool("RECALL_VECTOR_JOURNAL", True),
    # After this many failed attempts an index job is retried once a minute instead of
    # at every apply (it stays visible in index_status; sync_indexes retries it now).
    "MAX_JOB_ATTEMPTS": env_int("RECALL_MAX_JOB_ATTEMPTS", "20", 1),
    # A process's claim on a batch of index jobs lapses after this long (sooner
    # when the process is gone); the lock file serialises plane writes machine-wide.
    "JOB_CLAIM_SECONDS": env_int("RECALL_JOB_CLAIM_SECONDS", "120", 1),
    "INDEX_LOCK_FILE": DATA_DIR / "index.lock",
    # Retrieval knobs per section (recall/config.py has every knob and its default);
    # RECALL_<SECTION>_<KNOB> environment variables and the console's override
    # rows sit on top (console/configuration.py).
    "RECALL": {},
    "SEARCH": {},
    "BRIEFING": {},
    "PROMPT": {},
    "DEDUP": {},
}
