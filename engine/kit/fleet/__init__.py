"""Kit's fleet: many workspaces on a real task queue (Celery, with Redis as broker and backend).

    from kit.fleet import Fleet
    fleet = Fleet.open()                        # settings from the fleet config (KIT_FLEET__BROKER …)
    fleet.registry.add(["/srv/kit/users/*"])    # paths or globs of workspaces
    batch = fleet.dispatch("dream")             # one task per workspace
    outcomes = fleet.wait(batch, progress=cb)   # cb(done, total, outcome)
    fleet.status()                              # last run, result and duration per workspace

Nothing here imports Celery or Redis until a method needs them, and no other command imports this
package: the fleet is an extra (`pip install 'kit-agent[fleet]'`). docs/fleet.md has the guarantees.
"""

from __future__ import annotations

from kit.fleet.control import Batch, Fleet, StatusRow
from kit.fleet.jobs import KINDS, Outcome
from kit.fleet.registry import Entry, Member, Registry
from kit.fleet.settings import FleetSettings

__all__ = ["KINDS", "Batch", "Entry", "Fleet", "FleetSettings", "Member", "Outcome", "Registry", "StatusRow"]
