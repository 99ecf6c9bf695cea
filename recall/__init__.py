"""The recall engine: plain Python, never imports django, ninja or console.

`console/` reaches the engine through these names and `recall.ports`.
"""

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
    resolve,
)
from recall.engine import Engine
from recall.errors import (
    BudgetError,
    ChannelOff,
    ConfigError,
    EmbedderUnavailable,
    IndexUnavailable,
    QueryError,
    RecallError,
)
from recall.planes import Planes
from recall.requests import BriefingRequest, PromptRequest, RecallRequest, SearchRequest
from recall.results import (
    Briefing,
    ContextPack,
    Hit,
    PromptResult,
    Provenance,
    SearchResult,
)
from recall.usage import utility

__all__ = [
    "SECTIONS",
    "Briefing",
    "BriefingConfig",
    "BriefingRequest",
    "BudgetError",
    "ChannelOff",
    "ConfigError",
    "Configs",
    "ContextPack",
    "DedupConfig",
    "EmbedderUnavailable",
    "Engine",
    "Hit",
    "IndexUnavailable",
    "Layer",
    "Planes",
    "Problem",
    "PromptConfig",
    "PromptRequest",
    "PromptResult",
    "Provenance",
    "QueryError",
    "RecallConfig",
    "RecallError",
    "RecallRequest",
    "SearchConfig",
    "SearchRequest",
    "SearchResult",
    "decode_over",
    "from_mapping",
    "resolve",
    "utility",
]
