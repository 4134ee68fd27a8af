"""Budgeted bootstrap prompts (§4): file order, run kinds, budgets, the skills block, the template.

Entry point: `kit.prompt.builder.build_prompt(ws, kind=...)`. Kept import-light on purpose:
`kit prompt` must start instantly and never import torch.
"""
