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
    # A typo or two (a swapped pair counts as one) in a word long enough to tell.
    # Ties go to the word sharing the longest start ("gpu": "gpus" before "cpu").
    distance, _, best = min((_distance(folded, _folded(c)), -_common_start(folded, _folded(c)), c) for c in choices)
    if distance <= min(2, len(folded) // 3):
        return best
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
    if close:
        return close[0]
    close = difflib.get_close_matches(folded, {_folded(c): c for c in choices}, n=1, cutoff=0.75)
    return {_folded(c): c for c in choices}[close[0]] if close else None


def _common_start(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _distance(a: str, b: str) -> int:
    """Edits from ``a`` to ``b``: insertions, deletions, substitutions and adjacent swaps."""
    if abs(len(a) - len(b)) > 2:
        return 3
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, previous2[j - 2] + 1)
            row.append(cost)
        previous2, previous = previous, row
    return previous[-1]


def did_you_mean(word: str, allowed: Iterable[str]) -> str:
    """``" (did you mean 'nodes'?)"`` or ``""``."""
    found = nearest(word, allowed)
    return f" (did you mean '{found}'?)" if found else ""
