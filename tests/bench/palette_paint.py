"""Palette keypress-to-paint in Debian's Chromium at 10k memories (a plain script).

Usage:

    .venv/bin/python tests/bench/palette_paint.py [--size 10000] [--words 60]
        [--data-dir /tmp/palette-bench] [--keep]

Builds a throwaway data directory with the synthetic corpus
(console/bench/corpus.py, `--size` memories across 8 projects, 10% superseded)
through the normal import path, serves it with gunicorn as `make serve` does
(2 workers x 4 threads, whitenoise), logs in with Playwright and types words
into the Ctrl-K palette one letter at a time. For each keystroke it takes the
time from the keydown event to the first frame painted after the palette
showed the results for that exact text: the DOM update is seen by a
MutationObserver, then one requestAnimationFrame, then a MessageChannel task,
which runs once that frame has been painted. Each letter waits for its own
paint before the next key, so no answer is superseded. Prints p50 / p95 / max
per prefix length and overall. The palette never embeds, so the corpus is
indexed without the embedding model (RECALL_EMBEDDER=""), which only makes
the set-up faster. A second run with the same --data-dir reuses the corpus.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"
GUNICORN = ROOT / ".venv" / "bin" / "gunicorn"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PASSWORD = "palette bench password"

WATCH = """() => {
  const results = document.getElementById('palette-results');
  const input = document.getElementById('palette-q');
  window.__paints = [];
  window.__pending = null;
  input.addEventListener('keydown', e => { window.__pending = {t0: e.timeStamp}; }, true);
  new MutationObserver(() => {
    const pending = window.__pending;
    if (!pending || results.dataset.q !== input.value) return;
    window.__pending = null;
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => {
        const fetched = performance.getEntriesByType('resource')
          .filter(r => r.name.includes('/palette/?')).pop();
        window.__paints.push({
          q: input.value, ms: performance.now() - pending.t0,
          fetch: fetched ? fetched.responseEnd - fetched.startTime : null,
          start: fetched ? fetched.startTime - pending.t0 : null,
        });
        performance.clearResourceTimings();
      };
      channel.port2.postMessage(null);
    });
  }).observe(results, {childList: true, subtree: true, attributes: true});
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(PYTHON), "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def prepare(env: dict[str, str], data: Path, size: int) -> list[str]:
    """The corpus in `data` (built once) and its vocabulary."""
    sys.path.insert(0, str(ROOT))
    from console.bench.corpus import generate

    corpus = generate(size)
    marker = data / f"corpus-{size}.ready"
    if not marker.exists():
        print(f"building {size} memories in {data} (no embedding) ...", flush=True)
        started = time.perf_counter()
        manage(env, "migrate", "--noinput", "-v0")
        path = corpus.write(data / "corpus.jsonl")
        manage(env, "import_memories", str(path))
        manage(env, "sync_indexes")
        marker.touch()
        print(f"  built in {time.perf_counter() - started:.0f} s", flush=True)
    manage(env, "collectstatic", "--noinput", "-v0")  # this tree's CSS and JS
    script = (
        "from django.contrib.auth.models import User;"
        "u, _ = User.objects.get_or_create(username='bench');"
        f"u.set_password({PASSWORD!r}); u.is_staff = True; u.save()"  # sees every project
    )
    manage(env, "shell", "-c", script)
    return corpus.vocabulary


def measure(base: str, words: list[str]) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(base_url=base, viewport={"width": 1440, "height": 900})
        page.goto("/login/")
        page.fill("#id_username", "bench")
        page.fill("#id_password", PASSWORD)
        page.click("form.stack button[type=submit]")
        page.wait_for_selector("nav.nav")
        page.keyboard.press("Control+k")
        page.wait_for_selector("#palette-results [role=option]")
        page.evaluate(WATCH)
        for word in words:
            page.fill("#palette-q", "")
            page.wait_for_function(
                "() => document.getElementById('palette-results').dataset.q === ''"
            )
            for n in range(1, len(word) + 1):
                seen = page.evaluate("window.__paints.length")
                page.keyboard.type(word[n - 1])
                page.wait_for_function(f"() => window.__paints.length > {seen}")
                page.wait_for_timeout(30)
        paints = list(page.evaluate("window.__paints"))
        browser.close()
    return paints


def report(paints: list[dict[str, Any]]) -> None:
    def line(label: str, values: list[float]) -> str:
        if len(values) < 2:
            return f"{label:>10}  n={len(values)}"
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        return (
            f"{label:>10}  n={len(values):4d}  p50 {statistics.median(values):6.1f} ms"
            f"  p95 {p95:6.1f} ms  max {ordered[-1]:6.1f} ms"
        )

    by_length: dict[int, list[float]] = {}
    paints = [p for p in paints if p["q"]]  # clearing the box between words is not a keystroke
    for paint in paints:
        by_length.setdefault(min(len(paint["q"]), 5), []).append(float(paint["ms"]))
    print("palette keypress-to-paint (keydown -> first frame painted with its results)")
    for length in sorted(by_length):
        label = f"{length}{'+' if length == 5 else ''} letter{'s' if length > 1 else ''}"
        print(line(label, by_length[length]))
    print(line("all", [float(p["ms"]) for p in paints]))
    fetches = [float(p["fetch"]) for p in paints if p.get("fetch") is not None]
    if fetches:
        print(
            line("of which", fetches).replace("n=", "request n=", 1) + "  (request to response end)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--words", type=int, default=60, help="words typed, letter by letter")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep a temporary data dir")
    args = parser.parse_args()
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="palette-bench-"))
    data.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "RECALL_DATA_DIR": str(data),
        "RECALL_EMBEDDER": "",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    server = None
    try:
        vocabulary = prepare(env, data, args.size)
        rng = random.Random(5)
        words = [w for w in vocabulary if 4 <= len(w) <= 9]
        chosen = [rng.choice(words) for _ in range(args.words)]
        port = free_port()
        server = subprocess.Popen(
            [str(GUNICORN), "console.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "--workers", "2", "--threads", "4", "--preload"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        print(f"{args.size} memories, {len(chosen)} words typed letter by letter", flush=True)
        report(measure(f"http://127.0.0.1:{port}", chosen))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        if args.data_dir is None and not args.keep:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
