# The two commands of the README: `make run` and `make test`. Both build .venv themselves.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/agentrun: pyproject.toml client/pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' -e './client[webhooks,mcp]'
	touch $(BIN)/agentrun

.PHONY: install run test lint bench
install: $(BIN)/agentrun

run: install
	$(BIN)/agentrun serve

lint: install
	$(BIN)/ruff check app tests bench client examples
	$(BIN)/ruff format --check app tests bench client examples
	$(BIN)/mypy --strict app
	$(BIN)/mypy --strict client/agentrun_client
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest

bench: install
	$(BIN)/python bench/core.py
