#!/usr/bin/env bash
# `make setup` (before `make test` and `make run`): the operating-system packages, the virtual
# environment and Cleanline's packages, one progress line per step; what the installers print
# (apt, pip) goes to var/log/setup.log, whose end is shown when a step fails.
# PYTHON: the interpreter the venv is made from (python3.11); VENV: the venv (.venv).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
VENV="${VENV:-.venv}"
# shellcheck source=scripts/steps.sh
source scripts/steps.sh
steps_log var/log/setup.log

make_venv() {
  if [ -x "$VENV/bin/python" ]; then
    STEP_NOTE="$VENV already there"
  else
    "$PYTHON" -m venv "$VENV" || return  # (set -e is off in a step's function)
  fi
}

step "operating-system packages (Python 3.11, Java 17, Redis, Chromium)" env PYTHON="$PYTHON" bash scripts/ensure-system.sh
step "virtual environment ($VENV)" make_venv
step "pip itself, up to date" "$VENV/bin/python" -m pip install --upgrade pip
step "Cleanline and its packages (pip install -e .[test]; log: var/log/setup.log)" \
  "$VENV/bin/python" -m pip install -e ".[test]"
touch "$VENV/.installed"
