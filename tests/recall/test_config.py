from __future__ import annotations

import pytest

from recall.config import (
    BriefingConfig,
    DedupConfig,
    PromptConfig,
    RecallConfig,
    SearchConfig,
    decode_over,
    from_mapping,
)
from recall.errors import ConfigError


def test_defaults_follow_the_design():
    recall, search = RecallConfig(), SearchConfig()
    assert (recall.k, recall.depth, recall.limit, recall.max_limit, recall.budget) == (
        60,
        50,
        10,
        100,
        1000,
    )
    assert (recall.favorite_boost, recall.usage_boost, recall.link_seeds) == (1.15, 0.1, 5)
    assert (search.k, search.depth, search.limit, search.semantic_floor) == (60, 60, 20, 0.25)
    assert (recall.fusion, dict(recall.channel_weights)) == (
        "zscore",
        {"fts": 0.6, "semantic": 0.4},
    )
    assert (BriefingConfig().budget, BriefingConfig().hard_cap_factor) == (1500, 2.0)
    prompt = PromptConfig()
    assert (prompt.min_shared_words, prompt.min_score, prompt.max_hits, prompt.ttl_seconds) == (
        2,
        1.5,
        3,
        30.0,
    )
    assert (DedupConfig().threshold, DedupConfig().candidates) == (0.83, 3)


def test_override_keeps_absent_keys_and_applies_present_ones():
    config, warnings = decode_over(SearchConfig(), {"semantic_floor": 0.35, "limit": 30})

    assert (config.semantic_floor, config.limit, config.depth) == (0.35, 30, 60)
    assert warnings == ()


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ({"bogus": 1}, "unknown"),
        ({"limit": "lots"}, "limit"),
        ({"limit": True}, "limit"),
        ({"limit": 0}, "limit"),
        ({"fusion": "borda"}, "fusion"),
        ({"channel_weights": {"fts": -1}}, "negative"),
        ({"channel_weights": "not json"}, "channel_weights"),
    ],
)
def test_bad_override_keys_are_ignored_with_a_warning(row: dict[str, object], fragment: str):
    config, warnings = decode_over(SearchConfig(), {**row, "depth": 70})

    assert config == SearchConfig(depth=70)
    assert len(warnings) == 1 and fragment in warnings[0]


@pytest.mark.parametrize("row", ["{broken", "[1, 2]", "42", '"text"'])
def test_an_unreadable_row_falls_back_to_the_base(row: str):
    base = SearchConfig(limit=40)

    config, warnings = decode_over(base, row)

    assert config is base
    assert warnings and "unreadable" in warnings[0]


def test_a_json_row_and_no_row():
    assert decode_over(RecallConfig(), '{"k": 5}')[0].k == 5
    assert decode_over(RecallConfig(), None) == (RecallConfig(), ())


def test_from_mapping_parses_environment_strings():
    env = {
        "RECALL_SEARCH_SEMANTIC_FLOOR": "0.42",
        "RECALL_SEARCH_LIMIT": "25",
        "RECALL_SEARCH_FUSION": "rrf",
        "RECALL_SEARCH_CHANNEL_WEIGHTS": '{"fts": 1, "semantic": 1}',
        "HOME": "/root",
    }

    config = from_mapping(SearchConfig(), env, prefix="RECALL_SEARCH_")

    assert (config.semantic_floor, config.limit, config.fusion) == (0.42, 25, "rrf")
    assert config.channel_weights == {"fts": 1.0, "semantic": 1.0}


def test_from_mapping_reads_a_settings_dict_and_booleans():
    assert from_mapping(RecallConfig(), {"semantic": "false", "depth": 30}).semantic is False


@pytest.mark.parametrize("env", [{"NOPE": 1}, {"limit": "x"}, {"k": 0}])
def test_from_mapping_is_strict(env: dict[str, object]):
    with pytest.raises(ConfigError):
        from_mapping(RecallConfig(), env)
