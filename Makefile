VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.mmrag-installed
OFFLINE := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1

.PHONY: setup demo test perf clean

$(PY):
	python3 -m venv $(VENV)

# torch first: pip takes these builds from local disk (open_clip needs torchvision;
# torchvision 0.28 does not import beside the CPU-only torch 2.13).
$(STAMP): $(PY) pyproject.toml
	$(PIP) install --quiet torch==2.14.1 torchvision==0.29.1
	$(PIP) install --quiet -e '.[cpu,llamaindex,notebooks,dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(OFFLINE) $(VENV)/bin/mmrag demo

test: setup
	$(OFFLINE) $(PY) -m pytest -q -p no:cacheprovider

perf: setup
	$(OFFLINE) $(PY) perf/run_all.py

clean:
	rm -rf $(VENV)
