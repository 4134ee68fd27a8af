"""`kit import`: bring another agent's files into a Kit workspace, plan first, then apply.

`plan_openclaw(src, dest)` and `plan_hermes(src, dest)` build a frozen `ImportPlan` and writes nothing; `apply_plan(plan)`
executes it. A dry run prints the plan; a re-import finds every file unchanged and does nothing.
"""

from kit.importers.hermes import plan_hermes
from kit.importers.openclaw import plan_openclaw
from kit.importers.plan import Action, ImportPlan, ImportResult, apply_plan

__all__ = ["Action", "ImportPlan", "ImportResult", "apply_plan", "plan_hermes", "plan_openclaw"]
