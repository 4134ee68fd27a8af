"""Dreaming: consolidate what the agent keeps recalling from daily notes into MEMORY.md (spec §8).

Light stages recent candidates, REM finds themes and candidate truths, Deep promotes. Only Deep
writes MEMORY.md. Entry point: `kit.dreaming.runner.run_dream(ws)`.
"""
