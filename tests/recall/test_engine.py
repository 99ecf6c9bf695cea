"""The facade: every section's config resolved per call, override rows included."""

from __future__ import annotations

import json

from recall.requests import BriefingRequest, PromptRequest, RecallRequest
from tests.recall.conftest import MakeEngine, make_memory

DEPLOY = [
    make_memory(1, "deploy-order", description="deploy services in dependency order"),
    make_memory(2, "deploy-rollback", description="deploy rollback needs the previous image"),
    *(make_memory(10 + i, f"filler-{i}", description=f"unrelated note {i}") for i in range(20)),
]


def test_each_call_reads_its_sections_row(make_engine: MakeEngine):
    rows: dict[str, str] = {}
    engine = make_engine(DEPLOY, overrides=rows.get, embedder=None)

    before = engine.recall(RecallRequest("deploy", "alpha"))
    rows["recall"] = json.dumps({"limit": 1, "budget": 500})
    after = engine.recall(RecallRequest("deploy", "alpha"))

    assert len(before.items) == 2 and before.budget == 1000
    assert len(after.items) == 1 and after.budget == 500


def test_a_subagent_briefing_uses_the_prompt_sections_row(make_engine: MakeEngine):
    rows: dict[str, str] = {}
    engine = make_engine(DEPLOY, overrides=rows.get, embedder=None)
    ask = BriefingRequest(project="alpha", agent_type="reviewer", prompt="deploy services order")

    default = engine.briefing(ask)
    rows["prompt"] = json.dumps({"min_shared_words": 5})
    strict = engine.briefing(ask)

    assert "RELEVANT" in default.text and "deploy-order" in default.text
    assert "RELEVANT" not in strict.text


def test_prompt_recall_and_dedup_read_their_rows(make_engine: MakeEngine):
    rows: dict[str, str] = {}
    engine = make_engine(DEPLOY, overrides=rows.get)
    prompt = PromptRequest(project="alpha", prompt="deploy services order")
    near = {"name": "deploy-plan", "description": "deploy the services in order"}

    assert engine.prompt_recall(prompt).ids and engine.dedup_hint(project="alpha", **near) is None
    rows["prompt"] = json.dumps({"max_hits": 1, "min_score": 99})
    rows["dedup"] = json.dumps({"threshold": 0.3})

    assert engine.prompt_recall(prompt).ids == ()
    assert engine.dedup_hint(project="alpha", **near) is not None


def test_a_bad_row_value_is_skipped_and_the_rest_applies(make_engine: MakeEngine):
    rows = {"recall": json.dumps({"limit": "lots", "budget": 400})}
    engine = make_engine(DEPLOY, overrides=rows.get, embedder=None)

    config, problems = engine.config(type(engine.base.recall))

    assert (config.limit, config.budget) == (100, 400)
    assert [(p.knob, p.source) for p in problems] == [("limit", "override row recall_config")]
