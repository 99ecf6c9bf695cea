"""SECRET_KEY: one of this installation's own, never the publicly known one."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

ROOT = Path(__file__).resolve().parents[2]
# The key settings.py used to fall back on: it is in the repository's history.
PUBLIC_KEY = "dev-only-insecure-key-change-me-in-production-0123456789"


def settings_secret(data_dir: Path, **env: str) -> str:
    """The SECRET_KEY a fresh process computes for `data_dir` (and `env`)."""
    environ = {k: v for k, v in os.environ.items() if k != "DJANGO_SECRET_KEY"}
    environ.update(RECALL_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="console.settings", **env)
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_the_variable_each_installation_makes_and_keeps_its_own_key(
    tmp_path: Path,
) -> None:
    first = settings_secret(tmp_path / "one")

    assert first != PUBLIC_KEY and len(first) >= 50
    stored = tmp_path / "one" / "secret_key"
    assert stored.read_text(encoding="ascii").strip() == first
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert settings_secret(tmp_path / "one") == first  # kept, not remade
    assert settings_secret(tmp_path / "two") != first  # per installation


def test_the_variable_wins_and_nothing_is_written(tmp_path: Path) -> None:
    key = "k" * 20 + "-an-operator-chosen-key-of-enough-length"

    assert settings_secret(tmp_path, DJANGO_SECRET_KEY=key) == key
    assert not (tmp_path / "secret_key").exists()


def test_processes_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    from console.settings import installation_secret_key

    start = threading.Barrier(8)

    def make() -> str:
        start.wait()
        return installation_secret_key(tmp_path)

    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: make(), range(8)))

    assert len(keys) == 1
    assert list(tmp_path.iterdir()) == [tmp_path / "secret_key"]  # no temporary file left


@pytest.mark.parametrize("key", [PUBLIC_KEY, "django-insecure-" + "x1y2z3" * 9])
def test_check_deploy_fails_on_a_publicly_known_key(settings: Any, key: str) -> None:
    settings.SECRET_KEY = key

    with pytest.raises(SystemCheckError, match=r"recall\.E007"):
        call_command("check", "--deploy", "--fail-level", "ERROR")


def test_check_deploy_accepts_the_installation_key(settings: Any, tmp_path: Path) -> None:
    from console.checks import secret_key_known

    settings.SECRET_KEY = settings_secret(tmp_path)

    assert secret_key_known(None) == []
