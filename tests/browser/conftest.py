"""Browser fixtures: one Chromium per module (Debian's, never downloaded),
a fresh context per test against pytest-django's live_server, and guards
that fail a test on any JavaScript dialog or Content-Security-Policy report."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
# axe-core from the npm registry, pinned by package-lock.json and installed by
# `make test`'s set-up (`make axe`); nothing is fetched while the tests run.
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
PASSWORD = "correct horse battery staple"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (run `make chromium`)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@dataclass
class Watch:
    """What the page did that it must never do."""

    dialogs: list[str] = field(default_factory=list)
    csp: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # A test that leaves forms it filled on purpose says "leave" to the page's
    # unsaved-text prompt (tests/browser/test_console.py checks the prompt itself).
    leave_unsaved: bool = False
    # Console errors a test causes on purpose (a refused request's "status of 403"):
    # ignored from when it says so, late answers included.
    expected: tuple[str, ...] = ()


@pytest.fixture
def watch() -> Watch:
    return Watch()


class InFlight:
    """Requests the live server has started and not yet finished.

    A debounced htmx request can still be running in a server thread when a test
    ends. Closing the browser does not stop it, and pytest-django's flush of the
    shared in-memory database would then run beside its queries and fail (and the
    next test would find the last one's rows). The page fixture waits for none.
    """

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def started(self, **_: Any) -> None:
        with self.lock:
            self.count += 1

    def finished(self, **_: Any) -> None:
        with self.lock:
            self.count -= 1

    def settle(self, timeout: float = 15.0, quiet: float = 0.2) -> None:
        deadline = time.monotonic() + timeout
        idle_since: float | None = None
        while time.monotonic() < deadline:
            if self.count > 0:
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= quiet:
                return
            time.sleep(0.02)
        raise AssertionError(f"{self.count} request(s) still running on the live server")


@pytest.fixture
def page(browser: Any, live_server: Any, planes: Path, watch: Watch) -> Iterator[Any]:
    inflight = InFlight()
    request_started.connect(inflight.started, weak=False)
    request_finished.connect(inflight.finished, weak=False)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    tab = context.new_page()

    def on_dialog(dialog: Any) -> None:
        if dialog.type == "beforeunload" and watch.leave_unsaved:
            dialog.accept()
            return
        watch.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_console(message: Any) -> None:
        document = message.text.startswith("Failed to load resource") and (
            message.location.get("url") == tab.url
        )
        if document:
            return  # the page's own status (a 404 page on purpose), not a broken resource
        if "Content Security Policy" in message.text:
            watch.csp.append(message.text)
        elif message.type == "error" and not any(e in message.text for e in watch.expected):
            watch.errors.append(message.text)

    tab.on("dialog", on_dialog)
    tab.on("console", on_console)
    tab.on("pageerror", lambda exc: watch.errors.append(str(exc)))
    yield tab
    context.close()  # no new requests; the ones running finish before the flush
    try:
        inflight.settle()
    finally:
        request_started.disconnect(inflight.started)
        request_finished.disconnect(inflight.finished)
    assert watch.dialogs == [], "a dialog fired"
    assert watch.csp == [], "the page tried something the CSP refused"
    assert watch.errors == [], "JavaScript errors on the page"


@pytest.fixture
def user(transactional_db: None, settings: Any) -> User:
    # A fast hasher: the suite logs in once per test; PBKDF2 would cost a second each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The operator's login: staff see every project and open Settings (console/roles.py).
    return User.objects.create_user("ada", password=PASSWORD, is_staff=True)


def log_in(page: Any, user: User) -> None:
    page.goto("/login/")
    page.fill("#id_username", user.get_username())
    page.fill("#id_password", PASSWORD)
    page.click("form.stack button[type=submit]")
    page.wait_for_selector("nav.nav")


def shoot(page: Any, name: str, *, full_page: bool = True) -> None:
    """Save the page in light and dark (the CSS follows prefers-color-scheme)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")  # a sticky header otherwise lands mid-page
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{scheme}.png"), full_page=full_page)
    page.emulate_media(color_scheme="light")


def axe(page: Any) -> list[str]:
    """axe-core's violations on the page as it is now, one readable line each.

    The script is evaluated through the DevTools protocol, which the page's
    Content-Security-Policy does not govern, so the page itself stays strict.
    """
    if not AXE.exists():
        pytest.fail(f"axe-core is missing at {AXE}: run `make axe` (npm ci)")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    found = page.evaluate(
        """async () => {
          const result = await axe.run(document, {resultTypes: ['violations']});
          return result.violations.map(v => `${v.id} (${v.impact}): ${v.help} -> ` +
            v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
        }"""
    )
    return [str(line) for line in found]


def overflow(page: Any) -> int:
    """How many CSS pixels the page is wider than its viewport (0: no sideways scroll)."""
    return int(
        page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    )
