"""recall/markdown.py: open fences and prose, as packing and digests read them."""

from __future__ import annotations

import pytest

from recall.markdown import open_fence, prose


@pytest.mark.parametrize(
    ("text", "left_open"),
    [
        ("no code at all", ""),
        ("```py\nx = 1\n```\nprose after", ""),
        ("```py\nx = 1", "```"),
        ("````md\n```\nstill inside: a shorter fence closes nothing", "````"),
        ("~~~\n```\ninside a tilde block, backticks close nothing", "~~~"),
        ("```\none\n```\n   ```\ntwo, opened again (three spaces of indent)", "```"),
        ("    ```\nfour spaces: an indented code line, no fence", ""),
    ],
)
def test_open_fence_names_the_block_left_open(text: str, left_open: str) -> None:
    assert open_fence(text) == left_open


def test_prose_drops_code_tables_and_rules_and_keeps_the_rest() -> None:
    text = (
        "Intro line.\n```\ncode\n```\n| a | b |\n| --- | :-: |\nc | d | e\n"
        "***\n- a bullet stays\nA sentence with one | pipe stays."
    )

    assert prose(text) == "Intro line.\n- a bullet stays\nA sentence with one | pipe stays."
