"""Trust by content hash for workspace code (skill scripts, hook handlers and commands).

Kept outside the workspace ($XDG_DATA_HOME/kit/trust.json) so a cloned repository cannot
trust itself. Changed code has a different hash and needs trusting again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kit import clock
from kit.errors import KitError
from kit.filewrite import atomic_write
from kit.locks import locked
from kit.paths import trust_file


@dataclass(frozen=True)
class TrustEntry:
    kind: str
    name: str
    digest: str
    location: str
    trusted_at: str


class TrustStore:
    def __init__(self, path: Path | None = None):
        self.path = path or trust_file()

    def _read(self, *, strict: bool = False) -> dict:
        """The store's data. A damaged file reads as empty (nothing is trusted), except when
        `strict` (before a write): then it is an error, so trusting never overwrites what the
        user may still want to repair."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"entries": []}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if strict:
                line = getattr(exc, "lineno", None)
                raise KitError(f"trust store is not valid JSON ({getattr(exc, 'msg', exc)}); fix or remove it",
                               path=str(self.path), line=line) from None
            return {"entries": []}
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            if strict:
                raise KitError('trust store has no "entries" list; fix or remove it', path=str(self.path))
            return {"entries": []}
        return data

    def problem(self) -> KitError | None:
        """Why the store cannot be read (then nothing counts as trusted), or None."""
        try:
            self._read(strict=True)
        except KitError as exc:
            return exc
        return None

    def entries(self) -> list[TrustEntry]:
        out = []
        for raw in self._read()["entries"]:
            try:
                out.append(TrustEntry(**raw))
            except TypeError:
                continue
        return out

    def is_trusted(self, kind: str, name: str, digest: str) -> bool:
        return any(e.kind == kind and e.name == name and e.digest == digest for e in self.entries())

    def trust(self, kind: str, name: str, digest: str, location: str) -> TrustEntry:
        entry = TrustEntry(kind, name, digest, location, clock.now().isoformat(timespec="seconds"))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.path.with_suffix(".lock"), wait=5, what="trust store"):
            data = self._read(strict=True)
            kept = [
                e for e in data["entries"]
                if not (e.get("kind") == kind and e.get("name") == name and e.get("location") == location)
            ]
            kept.append(entry.__dict__)
            kept.sort(key=lambda e: (e["kind"], e["name"], e["location"]))
            atomic_write(self.path, json.dumps({"entries": kept}, indent=2) + "\n")
        return entry
