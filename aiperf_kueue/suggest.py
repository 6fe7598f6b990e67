"""The nearest allowed word to a misspelt one: ``did you mean 'nodes'?``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def _folded(word: str) -> str:
    return word.lower().replace("_", "").replace("-", "")


def nearest(word: str, allowed: Iterable[str]) -> str | None:
    """The allowed word ``word`` most likely means, or ``None`` when none is close: one that
    differs only in case, ``_`` or ``-`` (``aiperf_kueue``, ``node_labels``), else the closest
    by similarity (``inventroy`` → ``inventory``)."""
    choices = [a for a in allowed if a != word]
    if not choices or len(word) > 200:
        return None
    folded = _folded(word)
    for choice in choices:
        if _folded(choice) == folded:
            return choice
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
    if close:
        return close[0]
    close = difflib.get_close_matches(folded, {_folded(c): c for c in choices}, n=1, cutoff=0.75)
    return {_folded(c): c for c in choices}[close[0]] if close else None


def did_you_mean(word: str, allowed: Iterable[str]) -> str:
    """``" (did you mean 'nodes'?)"`` or ``""``."""
    found = nearest(word, allowed)
    return f" (did you mean '{found}'?)" if found else ""
