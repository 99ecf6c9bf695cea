"""The retrieval channels: one module each, registered in the composition root.

`standard(planes)` is the default registry (what `console/wiring.py` builds
from `settings.RECALL["CHANNELS"]` unless told otherwise). A new channel is
one module implementing `recall.ports.Channel`, one line in that list and
one weight in the configs that should run it.
"""

from __future__ import annotations

from recall.channels.fulltext import FullText
from recall.channels.graph import Graph
from recall.channels.identifier import Identifier
from recall.channels.semantic import Semantic
from recall.channels.session import Session
from recall.planes import Planes
from recall.ports import Channel

FTS = FullText.name
SEMANTIC = Semantic.name
IDENTIFIER = Identifier.name
GRAPH = Graph.name
SESSION = Session.name  # the session neighbourhood (Dakera 004)
STANDARD = (FullText, Semantic, Identifier, Graph, Session)


def standard(planes: Planes) -> tuple[Channel, ...]:
    """The built-in channels over `planes`."""
    return tuple(cls(planes) for cls in STANDARD)


__all__ = ["FTS", "GRAPH", "IDENTIFIER", "SEMANTIC", "SESSION", "STANDARD", "standard"]
