"""Kit: a file-system-native, Markdown-driven agent kit."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # the fleet is an extra: `from kit import Fleet` imports it (not Celery) only when asked for
    if name == "Fleet":
        from kit.fleet import Fleet

        return Fleet
    raise AttributeError(f"module 'kit' has no attribute {name!r}")
