# Cleanline: `make test` and `make run` do all the set-up on a fresh Debian machine.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
FIXTURES ?= ../shared/fixtures/hudi-rs-tables
DEMO_LAKE ?= var/demo-lake

.PHONY: setup test check mutation run bench demo-lake clean screenshots

setup: $(STAMP)

# One progress line per step; what apt and pip print goes to var/log/setup.log (scripts/setup.sh).
$(STAMP): pyproject.toml scripts/ensure-system.sh scripts/setup.sh
	@PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/setup.sh

# Tests use Redis database 15 so that a running `make run` (its own database, 1 to 12, derived from
# the checkout's path: scripts/redis-db.sh) never sees their tasks.
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
# The suite runs on one process per core, at most 4 (pytest-xdist; TEST_PROCESSES=0 runs it on one).
# The other processes take Redis databases 14, 12, 11 (console/parallel_tests.py).
TEST_PROCESSES ?= auto

test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	REDIS_URL=$(TEST_REDIS_URL) bash scripts/ensure-redis.sh
	bash scripts/ensure-postgres.sh
	bash scripts/ensure-zookeeper.sh
	bash scripts/ensure-node.sh
	REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest --durations=25 --numprocesses=$(TEST_PROCESSES) --maxprocesses=4 --dist=loadfile $(PYTEST_ARGS)

# The mutation check of rules outside `make mutation`'s modules: each listed rule broken by a
# one-line mutation must fail its own test file (scripts/mutations.py; the tests run in a copy of the tree).
check: setup
	REDIS_URL=$(TEST_REDIS_URL) bash scripts/ensure-redis.sh
	REDIS_URL=$(TEST_REDIS_URL) $(PY) scripts/mutations.py

# Mutation testing with mutmut of the modules that decide what is deleted, archived, rolled back or
# repaired, each against its own test files (scripts/mutation.py; about an hour, not part of `test`):
# every mutant is killed or listed in tests/mutation_equivalents.txt with why it is equivalent.
mutation: setup
	REDIS_URL=$(TEST_REDIS_URL) bash scripts/ensure-redis.sh
	REDIS_URL=$(TEST_REDIS_URL) $(PY) scripts/mutation.py

# Refresh the README's screenshots and every page at 1280 and 390 px, light and dark (tests write them
# to var/screenshots otherwise; the newcomer journey writes its own, newcomer-*.png, only here).
screenshots: setup
	REDIS_URL=$(TEST_REDIS_URL) bash scripts/ensure-redis.sh
	CLEANLINE_SCREENSHOTS=$(CURDIR)/docs/screenshots REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest tests/console/browser/test_browser.py tests/console/browser/test_journey.py \
		tests/console/browser/test_browser_look.py tests/console/browser/test_browser_flows.py tests/console/browser/test_newcomer_journey.py

# The whole demo lake in the foreground: the fixture tables, then the Spark tables (no Spark
# session when they are there already).
demo-lake: setup
	$(PY) scripts/demo_lake.py $(FIXTURES) $(DEMO_LAKE)/fixtures
	$(VENV)/bin/cleanline demo $(DEMO_LAKE)

# Serves the console at once; run.sh starts Redis, unpacks the fixture tables and builds the Spark
# tables in the background, one progress line per step (their output in var/log/). HOST and PORT
# (default 127.0.0.1:8000) choose where it listens. One command, exec'd: Ctrl-C ends with run.sh's
# own "stopped" line, not make's.
run: setup
	@DEMO_LAKE=$(DEMO_LAKE) FIXTURES=$(FIXTURES) exec bash scripts/run.sh

bench: setup
	$(PY) bench/fsview.py
	$(PY) bench/clean.py
	$(PY) bench/console.py
	$(PY) bench/spark.py
	$(PY) bench/s3.py
	$(PY) bench/s3_scale.py
	$(PY) bench/cli.py
	$(PY) bench/scale.py
	$(PY) bench/startup.py
	$(PY) bench/archive.py
	$(PY) bench/doctor.py

clean:
	rm -rf var .pytest_cache
