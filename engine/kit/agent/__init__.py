"""The agent runtime: loop, tools, providers, sessions, compaction."""
