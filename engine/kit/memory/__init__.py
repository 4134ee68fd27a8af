"""Memory: daily notes, a Markdown-aware index, offline hybrid search and the recall log (spec §7).

Entry point: `kit.memory.service.memory_for(ws)` → `Memory`. Heavy imports (torch,
sentence-transformers) happen only when a text is actually embedded.
"""
