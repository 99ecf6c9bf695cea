"""Print the p50 of several `manage.py bench speed` reports side by side.

    .venv/bin/python tests/bench/compare_speed.py before=A.json after=B.json

Runs on one machine, taken back to back (A/B/A/B), are the only fair
comparison: the raw adapter rows (raw embed, raw fts, raw vector) run code
the comparison does not change, so their spread is the machine's noise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(args: list[str]) -> None:
    names = [a.partition("=")[0] for a in args]
    reports = [json.loads(Path(a.partition("=")[2]).read_text()) for a in args]
    for backend in reports[0]["backends"]:
        print(f"\n{backend} p50 ms".ljust(30) + "".join(f"{n:>10}" for n in names))
        for op in reports[0]["backends"][backend]["ops"]:
            row = [r["backends"][backend]["ops"][op]["p50"] for r in reports]
            print(f"{op:30}" + "".join(f"{v:10.3f}" for v in row))
        ratios = [r["backends"][backend]["recall_over_raw"]["p50"] for r in reports]
        print(f"{'recall / raw parts (p50)':30}" + "".join(f"{v:10.3f}" for v in ratios))
    rates = [r["ingest"]["ingest_per_s"] for r in reports]
    print(f"\n{'ingest memories/s':30}" + "".join(f"{v:10.1f}" for v in rates))


if __name__ == "__main__":
    main(sys.argv[1:])
