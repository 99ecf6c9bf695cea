"""What each setting is called on the Settings page, and one line saying what it does.

Keyed by section, then by knob (a weight by `channel_weights.<channel>`). A
knob missing here still shows, under its engine name, with a generic line.
"""

from __future__ import annotations

from recall.config import MIN_TEXT_BUDGET

WEIGHTS = {
    "fts": ("Weight: word matches", "How much matching the words counts. 0 turns it off."),
    "semantic": ("Weight: meaning", "How much similar meaning counts. 0 turns it off."),
    "identifier": ("Weight: exact name or id", "Puts an exact name or id first. 0 turns it off."),
    "graph": (
        "Weight: linked memories",
        "How much a link or association from a top result counts. 0: none.",
    ),
}
FUSION = ("How rankings combine", "zscore keeps score gaps (measured better); rrf uses ranks only.")
K = ("Rank smoothing (RRF k)", "Only for rrf: higher flattens the difference between ranks.")
PRIOR = (
    "Same-conversation lift",
    "How much a strong match lifts the other results of its session. 0 turns it off.",
)

HELP: dict[str, dict[str, tuple[str, str]]] = {
    "briefing": {
        "budget": (
            "Size (tokens)",
            f"How much text the session-start briefing may use (at least {MIN_TEXT_BUDGET}).",
        ),
        "hard_cap_factor": (
            "Hard cap (x size)",
            "Rules and starred memories may pass the size up to this multiple, never beyond.",
        ),
        "scan_limit": (
            "Newest memories read",
            "How many recent memories the index is built from (at most 10,000).",
        ),
        "description_chars": (
            "Line length (characters)",
            "Each memory's line is cut to this (20 to 2,000); a rule's line to four times it.",
        ),
        "relevant_hits": (
            "Matches for a subagent",
            "How many memories matching a subagent's task it gets.",
        ),
        "tag": ("Wrapping tag", "The tag around the briefing, e.g. <memory-briefing>."),
    },
    "search": {
        "limit": (
            "Results per search",
            "How many results an agent's search returns when it asks for no number. "
            "The console shows 20 a page.",
        ),
        "favorites_first": (
            "Favorites first",
            "Starred results lead the page, after exact name or id matches.",
        ),
        "max_limit": ("Most results allowed", "The largest number of results anyone may ask for."),
        "depth": ("Candidates per channel", "How deep each channel looks before ranking."),
        "fusion": FUSION,
        "k": K,
        "semantic_floor": (
            "Minimum similarity for meaning-only results",
            "-1 to 1. Results that share no word with the search must be at least this "
            "similar (-1 keeps them all).",
        ),
        "since_depth_factor": (
            "Extra depth with a date filter",
            "Look this many times deeper when results must be recent.",
        ),
        "max_depth": ("Deepest look", "The most candidates any channel reads."),
        "identifier_limit": ("Exact-name results", "How many exact name or id matches go first."),
        "session_prior": PRIOR,
    },
    "recall": {
        "meaning_floor": (
            "Least similarity when no word matches",
            "0 to 1. When no memory holds any of the question's words, results by meaning "
            "below this are left out, and the agent is told nothing answers.",
        ),
        "budget": ("Token budget", "How much text an agent receives when it names no budget."),
        "max_budget": ("Largest budget", "The most tokens an agent may ask for."),
        "limit": ("Items per recall", "How many memories at most when the agent names none."),
        "max_limit": ("Most items allowed", "The largest number of items an agent may ask for."),
        "item_tokens": (
            "Longest item (tokens)",
            "A longer memory is cut at a sentence. 0: no cut.",
        ),
        "depth": ("Candidates per channel", "How deep each channel looks before ranking."),
        "fusion": FUSION,
        "k": K,
        "semantic": ("Match by meaning", "Use the meaning channel when an embedding model is set."),
        "session_prior": PRIOR,
        "asking_turns": (
            "Lower turns that only ask",
            "How far a conversation turn ending in a question falls below the turn that "
            "answers it. 0 turns it off.",
        ),
        "graph_seeds": (
            "Results whose links are followed",
            "Links and associations of this many top memories are followed.",
        ),
        "graph_hops": ("Link hops", "How many links away from a top result to look, 0 to 3."),
        "graph_reverse": ("Follow links backwards", "Also follow links that point at a result."),
        "graph_min_weight": ("Lightest link followed", "0 to 1. Lighter associations are skipped."),
        "graph_cap": ("Most linked memories", "How many memories the links may add."),
        "graph_decay": ("Per-hop discount", "A memory two links away counts this much less."),
        "associated_cap": ("Most associated memories", "0 to 10, when an agent asks for them."),
        "associated_depth": ("Associated: hops", "How many links away they may be, 1 to 3."),
        "associated_min_weight": (
            "Associated: lightest link",
            "0 to 1. Lighter links are skipped.",
        ),
        # routing and fabriq's knobs (recall/routing.py)
        "routing": (
            "Routing",
            "auto: weights by the kind of query; hybrid, vector or bm25: always those channels.",
        ),
        "routing_weights.identifier": ("Auto: meaning share for a name or id", "0 to 1."),
        "routing_weights.temporal": ("Auto: meaning share for a when-question", "0 to 1."),
        "routing_weights.keyword": ("Auto: meaning share for a few keywords", "0 to 1."),
        "routing_weights.natural": ("Auto: meaning share for a question or sentence", "0 to 1."),
        "max_depth": ("Most candidates per channel", "The largest `k` an agent may ask for."),
        # --- session neighbourhood (recall/neighbourhood.py) ---
        "session_neighbours": (
            "Add session neighbours",
            "Bring the memories said just before or after a top result in its session.",
        ),
        "session_seeds": ("Results whose session is read", "Only episodic memories count."),
        "session_window_minutes": ("Session: minutes around", "By when they happened."),
        "session_turns": ("Session: turns around", "By their order in the session."),
        "session_cap": ("Session: most per result", "How many neighbours one result may bring."),
        "session_decay": ("Per-turn discount", "A neighbour two turns away counts this much less."),
        # --- end session neighbourhood ---
        # --- meaning in context (recall/context.py) ---
        "context_mix": (
            "Meaning in context",
            "0 to 1. How much a turn's meaning is read with the turns before it. 0 turns it off.",
        ),
        "context_turns": ("Context: turns before", "How many earlier turns a turn is read with."),
        "context_pool": ("Context: results read", "How many meaning matches are read in context."),
        "passage_mix": (
            "Meaning by sentence",
            "0 to 1. How much a long memory's best-matching sentence counts. 0 turns it off.",
        ),
        # --- end meaning in context ---
        "favorite_boost": ("Starred boost", "Starred memories' scores are multiplied by this."),
        "usage_boost": ("Usage boost", "How much being useful to agents before lifts a memory."),
        # --- importance, worth, decay (recall/worth.py, recall/decay.py) ---
        "importance_weighted": ("Weigh importance", "More important memories rank higher."),
        "importance_weight": ("Importance weight", "Score x (1 + this x (importance - 0.5))."),
        "worth_weight": ("Worth weight", "Score x (1 + this x (worth - 0.5)); worth: feedback."),
        "decay": ("Recency decay", "Older memories fade by a half-life per kind (off: README)."),
        "decay_half_life_days": ("Decay half-life (days)", "For an episode; other kinds scale it."),
        "decay_floor": ("Decay floor", "The least share of its score an old memory keeps."),
    },
    "prompt": {
        "min_shared_words": (
            "Shared words needed",
            "A memory must share at least this many words with the prompt.",
        ),
        "min_score": ("Minimum match score", "Higher shows fewer, surer matches."),
        "max_hits": ("Most memories per prompt", "How many memories one prompt may bring."),
        "min_word_chars": ("Shortest word counted", "Shorter words are ignored when matching."),
        "ttl_seconds": ("Refresh after (seconds)", "How long the word list is reused."),
        "corpus_limit": ("Memories considered", "How many active memories are matched against."),
        "description_chars": ("Line length (characters)", "Each memory's line is cut to this."),
        "tag": ("Wrapping tag", "The tag around the block, e.g. <memory-recall>."),
        "budget": (
            "Size (tokens)",
            f"How much text the block may use when none is asked (at least {MIN_TEXT_BUDGET}).",
        ),
    },
    "dedup": {
        "threshold": (
            "Similarity for a duplicate",
            "0 to 1. A new memory this similar to an old one gets a duplicate hint "
            "(0: the value measured for the model).",
        ),
        "episodic_threshold": (
            "Similarity for a duplicate turn",
            "The same for episodes and working notes (0: the value measured for the model).",
        ),
        "candidates": ("Memories compared", "How many similar memories are checked."),
    },
}


def labels(section: str, base: object) -> dict[str, tuple[str, str]]:
    """Field name -> (label, help) for one section, weights expanded per channel."""
    out = dict(HELP.get(section, {}))
    weights = getattr(base, "channel_weights", None) or {}
    for channel in weights:
        out[f"channel_weights.{channel}"] = WEIGHTS.get(
            channel, (f"Weight: {channel}", "How much this channel counts. 0 turns it off.")
        )
    return out
