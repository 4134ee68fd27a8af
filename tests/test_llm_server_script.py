"""scripts/llm_server.py without a server: what it says when the packages are missing, and which
interpreter it picks. (The real server is exercised by `make e2e`, tests/e2e.) The project venv
never has xllamacpp, so `sys.executable` is a real interpreter without the packages."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import llm_server  # noqa: E402


def test_check_names_the_missing_package_and_the_fix():
    found = llm_server.check(sys.executable)
    assert found["ok"] is False
    assert found["error"] == (f"xllamacpp is not installed in {sys.executable}: "
                              "`pip install xllamacpp` (or run `make e2e`)")


def test_start_without_the_packages_fails_with_that_line_and_leaves_nothing_running(tmp_path):
    server = llm_server.LlamaServer(python=sys.executable, log_path=tmp_path / "server.log")
    with pytest.raises(llm_server.ServerError, match=r"^xllamacpp is not installed in "):
        server.start()
    assert not server.running() and server.pid is None


def test_start_with_an_interpreter_that_does_not_exist(tmp_path):
    missing = tmp_path / "no-such-python"
    server = llm_server.LlamaServer(python=str(missing), log_path=tmp_path / "server.log")
    with pytest.raises(llm_server.ServerError, match="cannot run .*no-such-python.*make e2e"):
        server.start()


def test_server_python_prefers_the_environment_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("KIT_LLM_PYTHON", str(tmp_path / "python"))
    assert llm_server.server_python() == str(tmp_path / "python")
    monkeypatch.delenv("KIT_LLM_PYTHON")
    expected = llm_server.LLM_VENV / "bin" / "python"
    assert llm_server.server_python() == (str(expected) if expected.exists() else sys.executable)


def test_settings_are_explicit_and_urls_follow_the_address():
    server = llm_server.LlamaServer(threads=1, ctx=2048, max_tokens=32, port=0)
    assert server.settings == {"threads": 1, "ctx": 2048, "max_tokens": 32, "temperature": 0.0,
                               "seed": 42, "port": 0}
    server.url = "http://127.0.0.1:8080"  # what start() sets from the child's report
    assert server.base_url == "http://127.0.0.1:8080/v1" and server.model == "smollm2"
    assert server.stop() is None  # never started: nothing to stop
