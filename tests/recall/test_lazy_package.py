"""A package registered by `defer_init`: submodules import, `__init__` waits for a name."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from recall.indexes import lazy_package

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    root = tmp_path / "deferred_pkg"
    root.mkdir()
    (root / "__init__.py").write_text("from deferred_pkg.heavy import Heavy\nNAME = 'init ran'\n")
    (root / "heavy.py").write_text("class Heavy:\n    pass\n")
    (root / "light.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "deferred_pkg"
    for name in [n for n in sys.modules if n.split(".")[0] == "deferred_pkg"]:
        del sys.modules[name]


def test_a_submodule_imports_without_the_package_init(package: str) -> None:
    lazy_package.defer_init(package)

    from deferred_pkg.light import VALUE

    assert VALUE == 42
    assert "deferred_pkg.heavy" not in sys.modules  # only the __init__ imports it


def test_the_package_own_names_run_its_init_on_first_read(package: str) -> None:
    lazy_package.defer_init(package)
    import deferred_pkg

    assert deferred_pkg.NAME == "init ran"
    from deferred_pkg import Heavy

    assert Heavy.__module__ == "deferred_pkg.heavy"
    with pytest.raises(AttributeError):
        _ = deferred_pkg.missing


def test_an_imported_or_unknown_package_is_left_alone(package: str) -> None:
    import deferred_pkg

    lazy_package.defer_init(package)
    lazy_package.defer_init("no_such_package_here")

    assert sys.modules[package] is deferred_pkg and deferred_pkg.NAME == "init ran"
    assert "no_such_package_here" not in sys.modules


def test_lancedb_opens_a_table_without_the_rest_client_api() -> None:
    # In a fresh interpreter: this one may have imported lancedb already.
    script = (
        "import sys, tempfile\n"
        "from recall.indexes.lance_index import _lancedb\n"
        "import pyarrow as pa\n"
        "db = _lancedb().connect(tempfile.mkdtemp())\n"
        "table = db.create_table('t', pa.table({'a': [1, 2, 3]}))\n"
        "print(table.count_rows(), len(table.search().where('a > 1').to_arrow()))\n"
        "print(sorted(n for n in sys.modules if '_urllib3_client.api' in n))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()

    assert out == ["3 2", "[]"]
