# The two commands of the README: `make run` and `make test`. Both build .venv themselves.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/agentrun: pyproject.toml client/pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' -e './client[webhooks,mcp]'
	touch $(BIN)/agentrun

# `docker compose` (Compose v2) where it exists, else `docker-compose` (v1); either reads
# docker-compose.yml. `make up WORKERS=3 AGENTRUN_API_KEYS=change-me`, `make down`.
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
WORKERS ?= 1

# The AG-UI client's tests (@ag-ui/client in Node): installed from the committed lock,
# again whenever the lock is newer than what is installed.
NODE_TESTS := tests/protocols/agui/node

$(NODE_TESTS)/node_modules/.package-lock.json: $(NODE_TESTS)/package-lock.json $(NODE_TESTS)/package.json
	npm ci --prefix $(NODE_TESTS) --no-audit --no-fund --loglevel=error

# The TypeScript client (clients/typescript, docs/client-typescript.md): its build tools
# from the committed lock (again whenever the lock is newer), then dist/, which its tests
# import (tsc --strict checks the sources on the way).
TS_CLIENT := clients/typescript

$(TS_CLIENT)/node_modules/.package-lock.json: $(TS_CLIENT)/package-lock.json $(TS_CLIENT)/package.json
	npm ci --prefix $(TS_CLIENT) --no-audit --no-fund --loglevel=error

$(TS_CLIENT)/dist/index.js: $(TS_CLIENT)/node_modules/.package-lock.json $(TS_CLIENT)/tsconfig.json \
		$(TS_CLIENT)/scripts/build.mjs $(wildcard $(TS_CLIENT)/src/*.ts $(TS_CLIENT)/src/generated/*.ts)
	npm run --prefix $(TS_CLIENT) --silent build

.PHONY: install run test lint bench up down sync-client ts-client node-deps
install: $(BIN)/agentrun

node-deps: $(NODE_TESTS)/node_modules/.package-lock.json $(TS_CLIENT)/dist/index.js

run: install
	$(BIN)/agentrun serve

lint: install
	$(BIN)/ruff check app tests bench client clients examples
	$(BIN)/ruff format --check app tests bench client clients examples
	$(BIN)/mypy --strict app
	$(BIN)/mypy --strict client/agentrun_client
	$(BIN)/lint-imports

# One pytest process per core (pytest-xdist): each makes its own databases.
test: lint node-deps
	$(BIN)/pytest -n auto --dist worksteal

# The sync client, generated from the async one (tests/client/test_generated.py checks it).
sync-client: install
	$(BIN)/python client/scripts/generate_sync.py

# The TypeScript client's types, generated from the OpenAPI document
# (tests/clients_typescript/test_generated.py checks them).
ts-client: install $(TS_CLIENT)/node_modules/.package-lock.json
	AGENTRUN_PYTHON=$(abspath $(BIN)/python) npm run --prefix $(TS_CLIENT) --silent generate

bench: install
	$(BIN)/python bench/core.py

up:
	$(COMPOSE) up -d --build --scale worker=$(WORKERS)

down:
	$(COMPOSE) down
