"""The environment handed to child processes (exec tool, command hooks): no code-injection variables."""

from __future__ import annotations

import os
from collections.abc import Mapping

DANGEROUS_ENV = frozenset({
    "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT", "PYTHONUSERBASE",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH",
    "DYLD_FRAMEWORK_PATH", "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "IFS",
    "CDPATH", "GLOBIGNORE", "PERL5LIB", "PERLLIB", "PERL5OPT", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS",
    "NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH", "GIT_CONFIG_GLOBAL", "ZDOTDIR", "LUA_INIT",
})
# exported bash functions (BASH_FUNC_name%%) run on every bash start
_DANGEROUS_PREFIXES = ("BASH_FUNC_", "LD_", "DYLD_")


def clean_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without variables that inject code."""
    source = os.environ if environ is None else environ
    return {
        k: v for k, v in source.items()
        if k not in DANGEROUS_ENV and not k.startswith(_DANGEROUS_PREFIXES)
    }
