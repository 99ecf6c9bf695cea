"""`make run`'s server warms what its first requests would wait for (console/apps.py)."""

from __future__ import annotations

import pytest

from console.apps import serving_by_runserver


@pytest.mark.parametrize(
    ("argv", "environ", "serving"),
    [
        (["manage.py", "runserver", "127.0.0.1:8000"], {"RUN_MAIN": "true"}, True),
        (["manage.py", "runserver", "--noreload"], {}, True),
        # the autoreloader's parent only watches files: its child serves
        (["manage.py", "runserver", "127.0.0.1:8000"], {}, False),
        (["manage.py", "migrate"], {"RUN_MAIN": "true"}, False),
        (["pytest"], {}, False),
    ],
)
def test_only_runservers_serving_process_warms(
    argv: list[str], environ: dict[str, str], serving: bool
) -> None:
    assert serving_by_runserver(argv, environ) is serving
