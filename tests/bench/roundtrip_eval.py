"""Round trip of real data through import and export (a plain script, not a pytest module).

Usage: .venv/bin/python tests/bench/roundtrip_eval.py [FILE ...] [--format jsonl markdown]

For each file (default: ../shared/eval/locomo/memories.jsonl, which is not in
the repository, so this is a script and not a test) and each format, in fresh
data directories: import the file and export it (the first export), import
that export into an empty data directory and export again (the second). The
two exports must be byte-identical; prints their sizes and exits 1 if any
pair differs. Runs without an embedder: vectors are not part of an export.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT.parent / "shared" / "eval" / "locomo" / "memories.jsonl"


def manage(data_dir: Path, *args: str) -> str:
    env = {**os.environ, "RECALL_DATA_DIR": str(data_dir), "RECALL_EMBEDDER": ""}
    env.pop("DJANGO_SECRET_KEY", None)
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def import_export(source: Path, data_dir: Path, out: Path, fmt: str) -> str:
    manage(data_dir, "migrate", "--noinput", "-v0")
    summary = manage(data_dir, "import_memories", str(source))
    manage(data_dir, "export_memories", "--out", str(out), "--format", fmt)
    return summary


def size_and_differences(first: Path, second: Path) -> tuple[int, list[str]]:
    if first.is_file():
        return first.stat().st_size, [] if filecmp.cmp(first, second, shallow=False) else ["*"]
    names = sorted(str(p.relative_to(first)) for p in first.rglob("*.md"))
    if names != sorted(str(p.relative_to(second)) for p in second.rglob("*.md")):
        return 0, ["the file lists differ"]
    size = sum((first / n).stat().st_size for n in names)
    different = [n for n in names if not filecmp.cmp(first / n, second / n, shallow=False)]
    return size, different


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=[DEFAULT])
    parser.add_argument("--format", nargs="+", default=["jsonl", "markdown"])
    args = parser.parse_args()
    failed = False
    for source in args.files:
        if not source.exists():
            raise SystemExit(f"not found: {source}")
        for fmt in args.format:
            started = time.perf_counter()
            with tempfile.TemporaryDirectory(prefix="roundtrip-") as tmp:
                work = Path(tmp)
                suffix = ".jsonl" if fmt == "jsonl" else ""
                first, second = work / f"first{suffix}", work / f"second{suffix}"
                summary = import_export(source, work / "one", first, fmt)
                import_export(first, work / "two", second, fmt)
                size, different = size_and_differences(first, second)
            verdict = "byte-identical" if not different else f"DIFFERENT: {different[:5]}"
            print(
                f"{source.name} [{fmt}]: {summary.split(' in ')[0]}; second export "
                f"{verdict} ({size:,} bytes) in {time.perf_counter() - started:.0f} s"
            )
            failed = failed or bool(different)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
