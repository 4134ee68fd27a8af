"""Kit: a file-system-native, Markdown-driven agent kit."""

__version__ = "0.1.0"
