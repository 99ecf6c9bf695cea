"""Printed tables and JSON reports in bench-reports/ (gitignored)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from console.bench.metrics import METRICS


def reports_dir() -> Path:
    path = Path(settings.BASE_DIR) / "bench-reports"
    path.mkdir(exist_ok=True)
    return path


def write(kind: str, label: str, body: Mapping[str, Any]) -> Path:
    """Write `body` as bench-reports/<kind>-<label>-<timestamp>.json."""
    slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or "run"
    path = reports_dir() / f"{kind}-{slug}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(body, indent=1, default=str))
    return path


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain fixed-width table (first column left-aligned, numbers right)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w)
        for i, (h, w) in enumerate(zip(headers, widths, strict=True))
    )
    out = [line, "-" * len(line)]
    for row in cells:
        out.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return "\n".join(out)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


# --- session neighbourhood (Dakera 004): its effect on every set, on and off ---
SESSION_RUNS = (
    ("off", "session-off"),
    ("channel", "session-channel"),
    ("associated", "session-assoc"),
)


def _session_effect(systems: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[str]:
    """The session neighbourhood's line: off, as a fused channel, as associated items."""
    runs = [(label, systems[name]["overall"]) for label, name in SESSION_RUNS if name in systems]
    if len(runs) < 2:
        return []
    cells = ", ".join(f"{label} {s['R@10']:.3f} / {s['nDCG@10']:.3f}" for label, s in runs)
    return [f"session neighbourhood, R@10 / nDCG@10: {cells}"]


# --- end session neighbourhood ---


def quality_tables(body: Mapping[str, Any]) -> str:
    """Overall and no-cat5 rows per system, then R@10 / nDCG@10 per category."""
    systems: Mapping[str, Mapping[str, Mapping[str, float]]] = body["systems"]
    load, check = body["load"], body["engine_check"]
    parts = [
        f"{body['dataset']}  ({body['n_queries']} queries; {load['memories']} memories "
        f"imported in {load['seconds']} s = {load['per_s']}/s; default "
        f"{json.dumps(body['base_config'])}; Engine.recall top-10 = core on "
        f"{check['same_top10']}/{check['checked']} queries; graph channel on vs off: same "
        f"top-10 on {check.get('graph_same_top10', '?')}/{check['checked']}, "
        f"{check.get('edges', '?')} edges)",
        "mean ms/query: " + json.dumps(body["latency_ms_mean"]),
    ]
    parts += _session_effect(systems)
    groups = [g for g in ("overall", "no-cat5") if g in next(iter(systems.values()))]
    for group in groups:
        rows = [[name, *(s[group][m] for m in METRICS)] for name, s in systems.items()]
        parts.append(f"\n[{group}]\n" + table(["system", *METRICS], rows))
    cats = [g for g in next(iter(systems.values())) if g.startswith("cat")]
    if cats:
        for metric in ("R@10", "nDCG@10"):
            rows = [[name, *(s[c][metric] for c in cats)] for name, s in systems.items()]
            head = [f"{c} (n={next(iter(systems.values()))[c]['n']})" for c in cats]
            parts.append(f"\n[{metric} per category]\n" + table(["system", *head], rows))
    parts.append(routing_table(body))
    ci: Mapping[str, Mapping[str, Mapping[str, float]]] = body.get("ci") or {}
    if ci:
        rows = [
            [f"default - {peer}", key, v["diff"], f"[{v['low']:+.3f}, {v['high']:+.3f}]"]
            for peer, values in ci.items()
            for key, v in values.items()
        ]
        head = ["paired bootstrap, 95%", "metric", "diff", "interval"]
        parts.append("\n[default minus each peer]\n" + table(head, rows))
    return "\n".join(parts)


ROUTING_RUNS = ("routing-auto", "routing-hybrid", "routing-vector", "routing-bm25")


def routing_table(body: Mapping[str, Any]) -> str:
    """auto vs hybrid vs vector vs bm25: R@10 / nDCG@10 overall, then per category,
    and the classes `auto` gave the queries."""
    systems: Mapping[str, Mapping[str, Mapping[str, float]]] = body["systems"]
    present = [name for name in ROUTING_RUNS if name in systems]
    if not present:
        return ""
    groups = list(systems[present[0]])  # overall, no-cat5 and each category when there are
    head = ["routing", *(f"{g} R@10 / nDCG@10" for g in groups)]
    rows = [
        [name.removeprefix("routing-"),
         *(f"{systems[name][g]['R@10']:.3f} / {systems[name][g]['nDCG@10']:.3f}" for g in groups)]
        for name in present
    ]  # fmt: skip
    classes: Mapping[str, Mapping[str, int]] = body.get("routing_classes") or {}
    counts = [
        f"{g}: " + ", ".join(f"{c} {n}" for c, n in sorted(classes[g].items()))
        for g in groups
        if g in classes
    ]
    return (
        "\n[routing: R@10 / nDCG@10]\n"
        + table(head, rows)
        + "\nauto's classes: "
        + "; ".join(counts)
    )
