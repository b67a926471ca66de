"""The one did-you-mean helper: schema errors, cross-checks and open-mirroring names use it."""

from __future__ import annotations

import difflib
from typing import Any, Iterable


def suggest(word: Any, choices: Iterable[Any]) -> str:
    """' (did you mean 'x'?)' for the closest choice, or ''."""
    choices = [str(c) for c in choices]
    text = str(word)
    for choice in choices:
        if choice.lower() == text.lower() or choice.replace("_", "-") == text.replace("_", "-"):
            return f" (did you mean '{choice}'?)"
    close = difflib.get_close_matches(text, choices, n=1, cutoff=0.6)
    if not close and len(text) >= 3:
        close = [c for c in choices if c.lower().startswith(text.lower())][:1]
    return f" (did you mean '{close[0]}'?)" if close else ""
