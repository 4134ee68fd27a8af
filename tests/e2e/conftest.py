"""Fixtures for the end-to-end suite against a real llama.cpp server (SmolLM2-135M-Instruct).

`make e2e` installs the server packages into .venv-llm, sets KIT_E2E_REQUIRED=1 (a missing package
is then a failure, not a skip) and runs `pytest tests/e2e`; `make test` never collects this folder.

One server serves the whole session (loading takes seconds, a cold Kit prompt tens of seconds on
a busy 2-core machine). It decodes greedily (temperature 0, fixed seed), so a run is reproducible,
and caps every reply at SERVER_CAP tokens, so no test waits for a rambling model. Every workspace
is a folder named "ws" with the same files and clock: Kit's prompt is then byte-identical across
tests and llama.cpp's prompt cache answers all but the first request quickly.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers_llama import REQUIRED, SERVER_CAP, SERVER_PYTHON, KitRunner, llm_server


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[llm_server.LlamaServer]:
    found = llm_server.check(SERVER_PYTHON)
    if not found.get("ok"):
        message = f"llama.cpp server packages missing ({found.get('error')}); run `make e2e`"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with llm_server.LlamaServer(max_tokens=SERVER_CAP, temperature=0.0, log_path=log,
                                python=SERVER_PYTHON) as server:
        yield server


@pytest.fixture(scope="session")
def kit_run(llama: llm_server.LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> KitRunner:
    return KitRunner(llama, tmp_path_factory.mktemp("home"))
