"""One error family for the engine, translated to HTTP statuses at the edges."""

from __future__ import annotations


class RecallError(Exception):
    """Base of every error the engine raises on purpose."""


class QueryError(RecallError):
    """The caller's input is unusable (maps to 400); `field` names the input at fault."""

    def __init__(self, message: str = "", field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class WalkConflict(RecallError):
    """A search cursor handed out by another search (maps to 409: the request is well
    formed, but the walk it continues is not this search's)."""


class IndexUnavailable(RecallError):
    """A derived plane cannot be read or written (maps to 503 when no degrade)."""


class EmbedderUnavailable(RecallError):
    """The embedder failed at run time (the semantic leg degrades with a warning)."""


class ConfigError(RecallError):
    """A local misconfiguration: surfaced as an error, never a silent degrade.

    `problems` names each bad value (knob, value, where it came from) when
    the error comes from configuration layers (`recall.config`).
    """

    def __init__(self, message: str, problems: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class ChannelOff(RecallError):
    """A channel that is not configured here (no embedder, say): skipped silently."""


class BudgetError(RecallError):
    """A token budget that cannot be honoured (maps to 400)."""
