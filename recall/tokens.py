"""Token estimates for budgeting what an agent sees."""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """(UTF-8 bytes + 3) // 4: the cheap estimate seamless uses (~4 bytes/token)."""
    return (len(text.encode("utf-8")) + 3) // 4


class ByteEstimate:
    """The default TokenCounter: `estimate_tokens`."""

    def count(self, text: str) -> int:
        return estimate_tokens(text)
