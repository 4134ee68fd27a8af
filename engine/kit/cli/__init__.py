from kit.cli.main import main

__all__ = ["main"]
