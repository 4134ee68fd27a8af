"""Counting real calls: a spy runs the real function and notes each call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def spy(monkeypatch, owner: Any, name: str, record: Callable[..., Any] = lambda *args, **kwargs: args) -> list:
    """From here on each call of `owner.name` appends `record(*args, **kwargs)` to the returned list
    and then runs the real function (a count of real calls, not a stand-in). On a class, the
    arguments include the instance."""
    calls: list = []
    real = getattr(owner, name)

    def spying(*args, **kwargs):
        calls.append(record(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spying)
    return calls
