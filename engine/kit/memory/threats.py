"""The memory threat scan lives in `kit.threats` (one scan for every door); this module keeps the
names memory code and dreaming import."""

from __future__ import annotations

from kit.threats import RULES, Rule, Threat, ThreatError, scan, scan_added, scan_text

__all__ = ["RULES", "Rule", "Threat", "ThreatError", "scan", "scan_added", "scan_text"]
