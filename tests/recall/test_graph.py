"""The graph walk (`recall.graph.traverse`) on hand-built graphs, scores by hand."""

from __future__ import annotations

import pytest

from recall.graph import traverse
from recall.testing import InMemoryStore
from recall.types import Filter
from tests.recall.conftest import make_memory, uid

ALPHA = Filter(projects=("alpha",), include_global=True)


def store_with(n: int, *edges: tuple[int, int, float], **records: object) -> InMemoryStore:
    """Memories 1..n in project alpha and explicit edges (source, target, weight)."""
    store = InMemoryStore([make_memory(i) for i in range(1, n + 1)])
    for source, target, weight in edges:
        store.connect(uid(source), uid(target), weight)
    return store


def walk(
    store: InMemoryStore, seeds: dict[int, float], **kw: object
) -> list[tuple[str, float, int]]:
    found = traverse(store, [(uid(i), s) for i, s in seeds.items()], where=ALPHA, **kw)  # type: ignore[arg-type]
    return [(r.id, round(r.score, 6), r.hops) for r in found]


# A chain 1 -> 2 -> 3 -> 4 -> 5, weights 0.8, 0.5, 1.0, 1.0.
CHAIN = ((1, 2, 0.8), (2, 3, 0.5), (3, 4, 1.0), (4, 5, 1.0))


@pytest.mark.parametrize(
    ("hops", "expected"),
    [
        (0, []),
        (1, [(uid(2), 0.8, 1)]),
        (2, [(uid(2), 0.8, 1), (uid(3), 0.2, 2)]),  # 1 x 0.8 x 0.5 x decay 0.5
        (3, [(uid(2), 0.8, 1), (uid(3), 0.2, 2), (uid(4), 0.1, 3)]),  # x 1.0 x 0.5 again
    ],
)
def test_hops_one_to_three_score_seed_times_weights_times_decay(hops, expected):
    assert walk(store_with(5, *CHAIN), {1: 1.0}, hops=hops) == expected


def test_more_than_three_hops_is_refused():
    with pytest.raises(ValueError, match="hops"):
        walk(store_with(2), {1: 1.0}, hops=4)


def test_edges_are_followed_forward_only_unless_reverse():
    store = store_with(3, (2, 1, 0.6), (1, 3, 0.9))

    assert walk(store, {1: 1.0}) == [(uid(3), 0.9, 1)]
    found = traverse(store, [(uid(1), 1.0)], where=ALPHA, reverse=True)
    assert [(r.id, r.steps[-1].reverse) for r in found] == [(uid(3), False), (uid(2), True)]


def test_lighter_edges_than_min_weight_are_not_followed():
    store = store_with(4, (1, 2, 0.3), (2, 3, 1.0), (1, 4, 0.7))

    assert walk(store, {1: 1.0}, hops=2, min_weight=0.5) == [(uid(4), 0.7, 1)]
    assert [i for i, _, _ in walk(store, {1: 1.0}, hops=2)] == [uid(4), uid(2), uid(3)]


def test_cap_keeps_the_best_and_ties_break_on_hops_then_path():
    store = store_with(6, *((1, t, 1.0) for t in range(2, 7)))

    assert [i for i, _, _ in walk(store, {1: 1.0}, cap=3)] == [uid(2), uid(3), uid(4)]
    assert walk(store, {1: 1.0}, cap=0) == []


def test_cycles_end_where_they_close_and_seeds_are_never_returned():
    store = store_with(3, (1, 2, 1.0), (2, 3, 1.0), (3, 1, 1.0), (2, 1, 1.0))

    found = traverse(store, [(uid(1), 1.0)], where=ALPHA, hops=3)

    assert [(r.id, r.path) for r in found] == [
        (uid(2), (uid(1), uid(2))),
        (uid(3), (uid(1), uid(2), uid(3))),
    ]
    two = store_with(2, (1, 2, 1.0), (2, 1, 1.0))
    assert walk(two, {1: 1.0}, hops=3) == [(uid(2), 1.0, 1)]
    assert two.reads == 2  # hop 2 only leads back: hop 3 has nothing to read


def test_a_node_keeps_its_best_path_over_seeds():
    store = store_with(4, (1, 3, 0.5), (2, 3, 0.9), (3, 4, 1.0))

    found = traverse(store, [(uid(1), 1.0), (uid(2), 0.8)], where=ALPHA, hops=2)

    by_id = {r.id: r for r in found}
    assert by_id[uid(3)].seed == uid(2) and by_id[uid(3)].score == pytest.approx(0.72)
    assert by_id[uid(4)].path == (uid(2), uid(3), uid(4))
    assert by_id[uid(4)].score == pytest.approx(0.8 * 0.9 * 1.0 * 0.5)


def test_a_superseded_node_is_never_reached_nor_walked_through():
    store = store_with(3, (1, 2, 1.0), (2, 3, 1.0))
    store.invalidate(uid(2), superseded_by=uid(3))

    assert walk(store, {1: 1.0}, hops=3) == []


def test_an_out_of_scope_node_is_never_reached_nor_walked_through():
    store = store_with(3, (1, 2, 1.0), (2, 3, 1.0))
    store.add(make_memory(2, project="beta"))
    store.add(make_memory(4, project=None))
    store.connect(uid(1), uid(4), 0.5)

    assert walk(store, {1: 1.0}, hops=3) == [(uid(4), 0.5, 1)]
    sealed = Filter(projects=("alpha",), include_global=False)
    assert traverse(store, [(uid(1), 1.0)], where=sealed, hops=3) == []


def test_wikilinks_count_at_weight_one_beside_explicit_edges():
    store = InMemoryStore(
        [make_memory(1, body="see [[two]]"), make_memory(2, "two"), make_memory(3)]
    )
    store.connect(uid(1), uid(3), 0.4, rel="caused")

    found = traverse(store, [(uid(1), 1.0)], where=ALPHA)

    assert [(r.id, r.score, r.rel) for r in found] == [
        (uid(2), 1.0, "links"),
        (uid(3), 0.4, "caused"),
    ]


def test_one_store_read_per_hop():
    store = store_with(5, *CHAIN)

    traverse(store, [(uid(1), 1.0)], where=ALPHA, hops=3)

    assert store.reads == 3
