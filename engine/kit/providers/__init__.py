"""Model providers. `kit.providers.base` holds the shared types; `resolve(spec, config)`
turns "provider/model" (or "script:PATH") into (provider, model). SDKs load lazily."""

from kit.providers.registry import resolve, split_spec

__all__ = ["resolve", "split_spec"]
