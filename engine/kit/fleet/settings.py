"""The fleet's settings: the `fleet` section of the config schema, read without a workspace
(defaults < user kit.yaml < environment `KIT_FLEET__*` < command-line flags)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.config import Config, load_config
from kit.paths import fleet_registry_file


@dataclass(frozen=True)
class FleetSettings:
    broker: str
    backend: str
    queue: str
    registry: Path
    visibility_timeout_s: float
    task_time_limit_s: float
    heartbeat_schedule: str | None
    beat_refresh_s: float

    @classmethod
    def from_config(cls, cfg: Config) -> FleetSettings:
        fleet = cfg.fleet
        return cls(
            broker=fleet.broker,
            backend=fleet.backend or fleet.broker,
            queue=fleet.queue,
            registry=Path(fleet.registry).expanduser() if fleet.registry else fleet_registry_file(),
            visibility_timeout_s=fleet.visibility_timeout_s,
            task_time_limit_s=fleet.task_time_limit_s,
            heartbeat_schedule=fleet.heartbeat_schedule,
            beat_refresh_s=fleet.beat_refresh_s,
        )

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "registry": str(self.registry), "broker": redact(self.broker),
                "backend": redact(self.backend)}


def load_settings(flags: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None) -> FleetSettings:
    """The fleet settings in force here; `flags` are dotted keys (`{"fleet.broker": url}`)."""
    wanted = {k: v for k, v in (flags or {}).items() if v is not None}
    return FleetSettings.from_config(load_config(None, flags=wanted, environ=environ))


def redact(url: str) -> str:
    """A broker URL fit to print: the password replaced by ***."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    user, colon, _password = creds.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}@{host}"
