"""An agent writes one LoCoMo conversation over MCP, then recalls its questions.

Usage: .venv/bin/python tests/bench/agent_conversation.py [--conversation conv-26] [--budget 1000]

What an agent gets when it uses the product as documented, measured against
the same turns imported by `manage.py import_memories`:
1. a fresh data directory, the conversation's project, a write token;
2. the SDK's MCP client (`manage.py mcp` over stdio) writes every turn in
   order, one `memory_write` each, with `session_id`, `session_order` and
   `occurred_at` (the session's date), as the importer maps them;
3. it asks every question of the conversation (../shared/eval, dev split)
   with `memory_recall` at the budget, and counts a hit when a gold turn is in
   the pack; it also checks that every result's text, counted by the
   project's token counter, is within the budget;
4. a second data directory imports the same turns and answers the same
   questions through the same engine (`selectors.memory_recall`).
Prints both hit rates, the mean tokens, the largest result, and the write
rate over MCP. The eval data is read from its shared directory, never copied.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SETUP = """
import django; django.setup()
from console import services, tokens
services.project_create(slug={project!r})
print(tokens.token_create(agent="bench-agent", projects=[{project!r}], may_write=True)[1])
"""

IMPORTED = """
import django, json, sys; django.setup()
from django.core.management import call_command
call_command("import_memories", {path!r}, verbosity=0)
from console import selectors
from console.models import Memory
from recall.agent import dumps, pack_view
from recall.tokens import ByteEstimate
ext = dict(Memory.objects.values_list("id", "external_id"))
hits, tokens = 0, []
for q in json.loads({queries!r}):
    pack = selectors.memory_recall(query=q["query"], project={project!r}, budget={budget})
    got = {{ext[i.id] for i in pack.items}}
    hits += bool(got & set(q["gold"]))
    tokens.append(ByteEstimate().count(dumps(pack_view(pack))))
print(json.dumps({{"hits": hits, "tokens": tokens}}))
"""


def env(data_dir: Path, token: str = "") -> dict[str, str]:
    return {
        **os.environ,
        "RECALL_DATA_DIR": str(data_dir),
        "RECALL_AGENT_TOKEN": token,
        "DJANGO_SETTINGS_MODULE": "console.settings",
    }


def python(data_dir: Path, code: str) -> str:
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env(data_dir), capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    return run.stdout.strip().splitlines()[-1]


def turn_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A turn as the agent writes it: what the importer makes of an eval line."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ.setdefault("RECALL_DATA_DIR", tempfile.mkdtemp())
    django.setup()
    from console.importing.parsing import cut_description, derive_name

    text = str(row["description"])
    meta = row["metadata"]
    fields: dict[str, Any] = {
        "name": derive_name(str(row["name"])),
        "kind": "episode",
        "description": cut_description(text) if len(text) > 150 else text,
        "session_id": f"{row['project']}:S{meta['session']}",
        "session_order": meta["turn_index"],
        "occurred_at": row["created_at"],
        "source": "imported",
    }
    if len(text) > 150:
        fields["body"] = text
    return fields


async def over_mcp(
    data_dir: Path, token: str, turns: list[dict[str, Any]], queries: list[dict[str, Any]],
    budget: int,
) -> dict[str, Any]:  # fmt: skip
    from recall.tokens import ByteEstimate

    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp"], env=env(data_dir, token), cwd=ROOT
    )
    ids: dict[str, str] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        started = time.perf_counter()
        for row in turns:
            result = await session.call_tool("memory_write", turn_fields(row))
            body = json.loads(result.content[0].text)
            if result.is_error:
                raise RuntimeError(f"write refused: {body}")
            ids[body["memory"]["id"]] = str(row["id"])
        seconds = time.perf_counter() - started
        hits, tokens = 0, []
        for q in queries:
            result = await session.call_tool(
                "memory_recall", {"query": q["query"], "budget": budget}
            )
            text = result.content[0].text
            tokens.append(ByteEstimate().count(text))
            got = {ids.get(i["id"], "") for i in json.loads(text)["items"]}
            hits += bool(got & set(q["gold"]))
    return {"hits": hits, "tokens": tokens, "write_s": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=Path("/work/shared/eval"))
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--budget", type=int, default=1000)
    args = parser.parse_args()
    project = args.conversation
    rows = [json.loads(line) for line in (args.eval / "locomo" / "memories.jsonl").open()]
    turns = [r for r in rows if r["project"] == project]
    questions = [json.loads(line) for line in (args.eval / "locomo" / "queries.jsonl").open()]
    queries = [q for q in questions if q["project"] == project and q["gold"]]
    with tempfile.TemporaryDirectory() as tmp:
        written_dir, imported_dir = Path(tmp) / "written", Path(tmp) / "imported"
        for folder in (written_dir, imported_dir):
            folder.mkdir()
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env(folder),
                check=True,
            )  # fmt: skip
        token = python(written_dir, SETUP.format(project=project))
        mcp = anyio.run(over_mcp, written_dir, token, turns, queries, args.budget)
        source = Path(tmp) / "turns.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in turns))
        code = IMPORTED.format(
            path=str(source), queries=json.dumps(queries), project=project, budget=args.budget
        )
        imported = json.loads(python(imported_dir, code))
    n = len(queries)
    over = [t for t in mcp["tokens"] if t > args.budget]
    print(f"{project}: {len(turns)} turns, {n} questions, budget {args.budget}")
    print(
        f"written over MCP:   hit rate {mcp['hits'] / n:.3f}, mean tokens "
        f"{sum(mcp['tokens']) / n:.0f}, largest {max(mcp['tokens'])}, over budget {len(over)}"
    )
    print(
        f"imported:           hit rate {imported['hits'] / n:.3f}, mean tokens "
        f"{sum(imported['tokens']) / n:.0f}, largest {max(imported['tokens'])}"
    )
    print(
        f"MCP writes: {len(turns)} in {mcp['write_s']:.1f} s "
        f"({len(turns) / mcp['write_s']:.1f}/s, one memory_write call each)"
    )
    gap = abs(mcp["hits"] - imported["hits"]) / n
    print(f"difference in hit rate: {gap:.3f} ({'within' if gap <= 0.01 else 'OVER'} 0.01)")
    sys.exit(0 if gap <= 0.01 and not over else 1)


if __name__ == "__main__":
    main()
