"""The recall engine: plain Python, never imports django, ninja or console.

`console/` reaches the engine through these names and `recall.ports`.
"""

from recall.config import (
    BriefingConfig,
    DedupConfig,
    PromptConfig,
    RecallConfig,
    SearchConfig,
    decode_over,
    from_mapping,
)
from recall.engine import Engine
from recall.errors import (
    BudgetError,
    ConfigError,
    EmbedderUnavailable,
    IndexUnavailable,
    QueryError,
    RecallError,
)
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
    "Briefing",
    "BriefingConfig",
    "BriefingRequest",
    "BudgetError",
    "ConfigError",
    "ContextPack",
    "DedupConfig",
    "EmbedderUnavailable",
    "Engine",
    "Hit",
    "IndexUnavailable",
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
    "utility",
]
