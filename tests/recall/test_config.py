from __future__ import annotations

import math
from dataclasses import fields

import pytest

from recall.config import (
    SECTIONS,
    BriefingConfig,
    Configs,
    DedupConfig,
    Layer,
    Problem,
    PromptConfig,
    RecallConfig,
    SearchConfig,
    decode_over,
    from_mapping,
    limits,
    resolve,
)
from recall.errors import ConfigError


def test_defaults_follow_the_design():
    recall, search = RecallConfig(), SearchConfig()
    assert (recall.k, recall.depth, recall.limit, recall.max_limit, recall.budget) == (
        60,
        50,
        100,  # as many as fit the budget, up to the cap
        100,
        1000,
    )
    assert recall.item_tokens == 500
    assert (recall.favorite_boost, recall.usage_boost) == (1.15, 0.1)
    graph = (recall.graph_seeds, recall.graph_hops, recall.graph_reverse, recall.graph_cap)
    assert graph == (8, 1, False, 10)  # fabriq GraphSeeds 8, Hops 1, GraphReverse off
    associated = (recall.associated_cap, recall.associated_depth, recall.associated_min_weight)
    assert associated == (10, 1, 0.0)  # Dakera
    assert (search.k, search.depth, search.limit, search.semantic_floor) == (60, 60, 20, 0.40)
    assert (recall.fusion, dict(recall.channel_weights)) == (
        "zscore",
        {"fts": 0.6, "semantic": 0.4, "graph": 0.3, "session": 0.2},
    )
    assert dict(search.channel_weights) == {"identifier": 1.0, "fts": 0.6, "semantic": 0.4}
    assert (BriefingConfig().budget, BriefingConfig().hard_cap_factor) == (1500, 2.0)
    prompt = PromptConfig()
    assert (prompt.min_shared_words, prompt.min_score, prompt.max_hits, prompt.ttl_seconds) == (
        2,
        1.5,
        3,
        30.0,
    )
    assert (DedupConfig().threshold, DedupConfig().candidates) == (0.0, 3)  # 0 = calibrated


def test_override_keeps_absent_keys_and_applies_present_ones():
    config, warnings = decode_over(SearchConfig(), {"semantic_floor": 0.35, "limit": 30})

    assert (config.semantic_floor, config.limit, config.depth) == (0.35, 30, 60)
    assert warnings == ()


@pytest.mark.parametrize(
    ("row", "knob", "message"),
    [
        ({"bogus": 1}, "bogus", "unknown knob; search knobs: channel_weights, depth"),
        ({"limit": "lots"}, "limit", "expected a whole number"),
        ({"limit": True}, "limit", "expected a whole number"),
        ({"limit": 0}, "limit", "limit must be within 1..200 (max_limit), not 0"),
        ({"fusion": "borda"}, "fusion", "fusion must be one of rrf, zscore, not 'borda'"),
        ({"channel_weights": {"fts": -1}}, "channel_weights", "must be a finite number >= 0"),
        ({"channel_weights": "not json"}, "channel_weights", "expected a JSON object of numbers"),
    ],
)
def test_bad_override_keys_are_ignored_with_a_problem_naming_them(
    row: dict[str, object], knob: str, message: str
):
    config, problems = decode_over(SearchConfig(), {**row, "depth": 70})

    assert config == SearchConfig(depth=70)
    assert len(problems) == 1
    problem = problems[0]
    assert (problem.section, problem.knob, problem.source) == (
        "search",
        knob,
        "override row search_config",
    )
    assert message in problem.message and problem.value == row[knob]


@pytest.mark.parametrize("row", ["{broken", "[1, 2]", "42", '"text"'])
def test_an_unreadable_row_falls_back_to_the_base(row: str):
    base = SearchConfig(limit=40)

    config, problems = decode_over(base, row)

    assert config is base
    assert problems and problems[0].knob == "" and "unreadable" in problems[0].message


def test_weights_merge_over_the_base_so_other_channels_keep_theirs():
    config, _ = decode_over(RecallConfig(), {"channel_weights": {"fts": 1.0}})
    assert config.channel_weights == {"fts": 1.0, "semantic": 0.4, "graph": 0.3, "session": 0.2}


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
    assert config.channel_weights == {"identifier": 1.0, "fts": 1.0, "semantic": 1.0}


def test_from_mapping_reads_a_settings_dict_and_booleans():
    assert from_mapping(RecallConfig(), {"semantic": "false", "depth": 30}).semantic is False


@pytest.mark.parametrize("env", [{"NOPE": 1}, {"limit": "x"}, {"k": 0}])
def test_from_mapping_is_strict(env: dict[str, object]):
    with pytest.raises(ConfigError):
        from_mapping(RecallConfig(), env)


def test_a_strict_layer_names_the_knob_the_value_and_its_source():
    env = {"RECALL_SEARCH_LIMIT": "abc", "RECALL_SEARCH_DEPTH": "70"}
    layers = [
        Layer("settings.RECALL['SEARCH']", {"k": 10}),
        Layer("environment variable {key}", env, prefix="RECALL_SEARCH_"),
    ]

    with pytest.raises(ConfigError) as caught:
        resolve(SearchConfig(), layers, strict=True)

    assert caught.value.problems == (
        Problem(
            "search", "limit", "abc", "environment variable RECALL_SEARCH_LIMIT",
            "expected a whole number",
        ),
    )  # fmt: skip
    assert str(caught.value) == (
        "search.limit = 'abc' (environment variable RECALL_SEARCH_LIMIT): expected a whole number"
    )


def test_layers_apply_in_order_defaults_settings_environment_row():
    layers = [
        Layer("settings", {"limit": 30, "depth": 70}),
        Layer("environment variable {key}", {"RECALL_SEARCH_LIMIT": "40"}, "RECALL_SEARCH_"),
        Layer("override row search_config", {"depth": 80}),
    ]

    config, problems = resolve(SearchConfig(), layers, strict=False)

    assert (config.limit, config.depth, config.k) == (40, 80, 60) and problems == ()


def test_every_section_has_a_config_and_configs_hold_one_each():
    assert set(SECTIONS) == {"recall", "search", "briefing", "prompt", "dedup"}
    configs = Configs()
    for name, cls in SECTIONS.items():
        assert isinstance(configs.section(name), cls)
    with pytest.raises(ValueError, match="no config section 'nope'"):
        configs.section("nope")


@pytest.mark.parametrize("section", [RecallConfig, SearchConfig])
def test_the_session_prior_defaults_to_0_3_and_refuses_a_negative_weight(section: type) -> None:
    assert section().session_prior == 0.3
    assert section(session_prior=0).session_prior == 0
    with pytest.raises(ValueError, match="session_prior"):
        section(session_prior=-0.1)
    with pytest.raises(ValueError, match="session_prior"):
        section(session_prior=math.inf)


@pytest.mark.parametrize("value", [3.0, -2.0, math.nan])
def test_searchs_floor_is_a_cosine(value: float) -> None:
    # Settings saved 3 (every meaning-only hit dropped, "meaning" silently off) and -2.
    with pytest.raises(ValueError, match="semantic_floor"):
        SearchConfig(semantic_floor=value)
    assert SearchConfig(semantic_floor=-1).semantic_floor == -1  # the edges: no floor
    assert SearchConfig(semantic_floor=1).semantic_floor == 1


@pytest.mark.parametrize(
    ("knob", "value"),
    [
        ("scan_limit", 0), ("scan_limit", 1_000_000_000), ("hard_cap_factor", 0.5),
        ("hard_cap_factor", 1e300), ("description_chars", 3), ("description_chars", 100_000),
    ],
)  # fmt: skip
def test_briefing_knobs_are_bounded_on_both_sides(knob: str, value: float) -> None:
    """Settings saved 1,000,000,000 newest memories to read (every memory of a large
    deployment on every briefing) and 3-character lines without a word."""
    with pytest.raises(ValueError, match=knob):
        BriefingConfig(**{knob: value})
    BriefingConfig(scan_limit=10_000, hard_cap_factor=10, description_chars=20)  # the edges


DECLARED = [(name, knob) for name, cls in SECTIONS.items() for knob in sorted(limits(cls()))]
# Knobs held under another: set at their least, the other is set there too.
ALONG = {"max_limit": {"limit": 1}, "max_budget": {"budget": 50}, "max_depth": {"depth": 1}}


@pytest.mark.parametrize(("section", "knob"), DECLARED)
def test_the_limits_a_section_declares_are_the_ones_it_checks(section: str, knob: str) -> None:
    """The console says a setting's range from `limits` ("1.5" in "Newest memories read":
    "a whole number between 1 and 10,000"): a range said is the range enforced."""
    cls = SECTIONS[section]
    low, high = limits(cls())[knob]
    step = 1 if isinstance(getattr(cls(), knob), int) else 0.01
    for value in (low - step, high + step, math.nan, math.inf):
        with pytest.raises(ValueError, match=knob):
            cls(**{knob: value})
    if (section, knob) != ("recall", "session_decay"):  # above 0: (0, 1]
        assert getattr(cls(**{knob: low}, **ALONG.get(knob, {})), knob) == low
    assert getattr(cls(**{knob: high}), knob) == high


def test_every_number_knob_has_declared_limits() -> None:
    """A knob without an upper bound saved 10^12 hits (`max_limit`), a half-life of
    1e308 days and a cache of 1e300 seconds: every recall then read them."""
    for name, cls in SECTIONS.items():
        numbers = {
            f.name
            for f in fields(cls)
            if isinstance(getattr(cls(), f.name), int | float)
            and not isinstance(getattr(cls(), f.name), bool)
        }
        assert numbers <= limits(cls()).keys(), name


@pytest.mark.parametrize(
    ("section", "row", "said"),
    [
        ("recall", {"max_limit": 10**12}, "max_limit must be within 1..100, not 1000000000000"),
        ("recall", {"decay_half_life_days": 1e308}, "decay_half_life_days must be within 0.01.."),
        ("prompt", {"ttl_seconds": 1e300}, "ttl_seconds must be within 0..86400"),
        ("search", {"max_limit": 10**12}, "max_limit must be within 1..200"),
    ],
)  # fmt: skip
def test_a_huge_override_is_refused_naming_the_knob_and_its_range(
    section: str, row: dict[str, float], said: str
) -> None:
    base = SECTIONS[section]()
    config, problems = decode_over(base, row)

    assert config == base
    [problem] = problems
    assert problem.knob == next(iter(row)) and said in problem.message


def test_a_refused_long_value_is_quoted_cut_not_repeated_whole() -> None:
    """A 300-letter tag with markup was quoted whole twice in the Settings field error
    (the knob's value, then the check's own "not ..."), 700 characters for one field."""
    tag = "<b>" + "x" * 300 + "</b>"
    with pytest.raises(ConfigError) as caught:
        resolve(BriefingConfig(), [Layer("the settings row", {"tag": tag})], strict=True)

    said = str(caught.value)
    assert said.startswith("briefing.tag = '<b>xxx") and len(said) < 250, said
    assert said.count("\u2026") == 2 and "x" * 60 not in said, said


def test_asking_turns_is_on_at_one_by_default_and_refuses_a_negative_weight() -> None:
    assert RecallConfig().asking_turns == 1.0
    assert RecallConfig(asking_turns=1.0).asking_turns == 1.0
    with pytest.raises(ValueError, match="asking_turns"):
        RecallConfig(asking_turns=-0.5)
    with pytest.raises(ValueError, match="asking_turns"):
        RecallConfig(asking_turns=math.inf)
