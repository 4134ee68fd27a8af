"""The agent's tools (§9) as (name, one-line description), for the prompt's tools section.

The agent engineer imports TOOL_SUMMARIES so the prompt and the tool schemas never disagree on
what exists; keep the lines short: they are in every prompt.
"""

from __future__ import annotations

TOOL_SUMMARIES: tuple[tuple[str, str], ...] = (
    ("memory_search", "search MEMORY.md and the daily notes in memory/ (hybrid: meaning + keywords)"),
    ("memory_get", "read lines of a memory file: memory_get(path, start, lines)"),
    ("memory_write", "append a fact to today's daily note: memory_write(text, topic?)"),
    ("skills_list", "list the skills you can use: name, description, readiness"),
    ("skill_view", "read a skill's instructions, or one of its files: skill_view(name, path?)"),
    ("read_file", "read a file in the workspace"),
    ("write_file", "create or replace a file in the workspace"),
    ("edit_file", "replace exact text in a workspace file"),
    ("exec", "run a shell command (subject to the exec policy in kit.yaml)"),
)


def tool_names() -> list[str]:
    return [name for name, _ in TOOL_SUMMARIES]
