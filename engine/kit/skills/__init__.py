"""Skills (§5): catalog (roots, precedence, validation, readiness), progressive disclosure,
security scan with trust by content hash, and scaffolding.

Entry point for the facade: `kit.skills.catalog.catalog_for(ws)`.
"""
