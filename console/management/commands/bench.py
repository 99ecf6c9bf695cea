"""`manage.py bench quality|speed|smoke|all`: the evaluation and benchmark harness.

Thin: argument parsing and printing; the work lives in `console/bench/`.
Every measurement runs in a child process over a throwaway data directory
(`console/bench/isolate.py`); `worker` is that child's entry point.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.bench import report

EVAL = Path(__file__).resolve().parents[3].parent / "shared" / "eval"


def _variant(text: str) -> tuple[str, dict[str, Any]]:
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise CommandError(f"--variant wants NAME=JSON, got {text!r}")
    try:
        values = json.loads(raw)
    except ValueError as exc:
        raise CommandError(f"--variant {name}: bad JSON ({exc})") from exc
    if not isinstance(values, dict):
        raise CommandError(f"--variant {name}: JSON must be an object")
    return name, values


class Command(BaseCommand):
    help = "Retrieval quality on eval data, speed on a synthetic corpus, or a smoke run of both."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        q = sub.add_parser("quality", help="R@5, R@10, nDCG@10, MRR on a dataset")
        q.add_argument("--dataset", type=Path, required=True, help="memories JSONL")
        q.add_argument("--queries", type=Path, help="queries JSONL (default: beside dataset)")
        q.add_argument("--variant", action="append", default=[], metavar="NAME=JSON")
        q.add_argument("--limit-queries", type=int)
        q.add_argument("--no-peers", action="store_true")
        s = sub.add_parser("speed", help="latency, ingest, reindex, memory on a synthetic corpus")
        s.add_argument("--size", type=int, default=10_000)
        s.add_argument("--backend", choices=("tantivy", "whoosh", "both"), default="both")
        s.add_argument("--queries", type=int, default=200, help="timed calls per operation")
        sub.add_parser("smoke", help="both, on a tiny generated corpus; fails on a missing figure")
        a = sub.add_parser("all", help="quality on every eval set, then speed")
        a.add_argument("--eval", type=Path, default=EVAL)
        a.add_argument("--size", type=int, action="append", help="speed sizes (default 10000)")
        w = sub.add_parser("worker", help="(internal) one job in a throwaway data directory")
        w.add_argument("job")
        w.add_argument("--spec", type=Path, required=True)
        w.add_argument("--out", type=Path, required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        started = time.perf_counter()
        if action == "worker":
            self._worker(options["job"], options["spec"], options["out"])
            return
        if action == "quality":
            variants = dict(_variant(v) for v in options["variant"])
            self.quality(options["dataset"], options["queries"], variants, options)
        elif action == "speed":
            self.speed(options["size"], options["backend"], options["queries"])
        elif action == "smoke":
            from console.bench import smoke

            problems, _ = smoke.run(self.stdout.write)
            if problems:
                raise CommandError("smoke: missing figures: " + "; ".join(problems))
        elif action == "all":
            self.all(options["eval"], options["size"] or [10_000])
        self.stdout.write(f"bench {action}: {time.perf_counter() - started:.1f} s")

    def quality(
        self, dataset: Path, queries: Path | None, variants: dict[str, Any], options: dict[str, Any]
    ) -> dict[str, Any]:
        from console.bench.isolate import run_worker

        if not dataset.exists():
            raise CommandError(f"not found: {dataset}")
        queries = queries or dataset.with_name(dataset.name.replace("memories", "queries"))
        if not queries.exists():
            raise CommandError(f"not found: {queries} (give --queries)")
        spec = {
            "dataset": str(dataset),
            "queries": str(queries),
            "variants": variants,
            "limit_queries": options.get("limit_queries"),
            "skip_peers": options.get("no_peers", False),
        }
        body = run_worker("quality", spec)
        self.stdout.write(report.quality_tables(body))
        path = report.write("quality", f"{dataset.parent.name}-{dataset.stem}", body)
        self.stdout.write(f"report: {path}")
        return body

    def speed(self, size: int, backend: str, queries: int) -> dict[str, Any]:
        from console.bench import speed

        body = speed.run(size=size, backends=speed.backends(backend), queries=queries)
        self.stdout.write(speed.tables(body))
        path = report.write("speed", f"{size}-{backend}", body)
        self.stdout.write(f"report: {path}")
        return body

    def all(self, eval_dir: Path, sizes: list[int]) -> None:
        sets = [
            ("locomo", "memories.jsonl", "queries.jsonl"),
            ("locomo", "memories_observation.jsonl", "queries_observation.jsonl"),
            ("locomo", "memories_summary.jsonl", "queries_summary.jsonl"),
            ("scifact", "memories.jsonl", "queries.jsonl"),
        ]
        for folder, memories, queries in sets:
            path = eval_dir / folder / memories
            if not path.exists():
                self.stderr.write(f"skipping {path}: not found")
                continue
            self.quality(path, eval_dir / folder / queries, {}, {})
        for size in sizes:
            self.speed(size, "both", 200)

    def _worker(self, job: str, spec_path: Path, out: Path) -> None:
        spec = json.loads(spec_path.read_text())
        root = spec_path.parent
        if job == "quality":
            from console.bench import quality

            body = quality.evaluate(spec, root)
        elif job.startswith("speed-"):
            from console.bench import speed

            body = speed.worker(job, spec, root)
        else:
            raise CommandError(f"unknown worker job {job!r}")
        out.write_text(json.dumps(body, default=str))
