"""Hooks (§6): HOOK.md folders in three roots whose handlers or commands run on events.

Entry points: `kit.hooks.registry.registry_for(ws).fire(event_type, data, session_key=...)`,
`kit.hooks.bootstrap.bootstrap_callback(ws)` and `kit.hooks.registry.doctor_checks(ws)`.
"""
