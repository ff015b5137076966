#!/usr/bin/env bash
# `make run`: the console on 127.0.0.1:8000 with a Celery worker and beat, on the demo lake.
# Ctrl-C stops all three.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
LAKE="${DEMO_LAKE:-var/demo-lake}"
export CLEANLINE_ALLOWED_ROOTS="${CLEANLINE_ALLOWED_ROOTS:-$PWD/$LAKE}"
mkdir -p var
# DEBUG is on for runserver only: the other commands need a SECRET_KEY of their own. One random key
# is made on the first run and kept in var/secret-key (readable by this user only, never tracked).
if [ -z "${SECRET_KEY:-}" ]; then
  if [ ! -s var/secret-key ]; then
    (umask 077 && $PY -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret-key.tmp)
    mv var/secret-key.tmp var/secret-key
  fi
  chmod 600 var/secret-key
  SECRET_KEY="$(cat var/secret-key)"
  export SECRET_KEY
fi
$PY manage.py migrate --noinput -v 0
$PY manage.py bootstrap "$LAKE"

pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop INT TERM EXIT
$PY -m celery -A console worker --loglevel INFO --concurrency 2 & pids+=($!)
$PY -m celery -A console beat --loglevel INFO --schedule var/celerybeat-schedule & pids+=($!)
echo "Cleanline console: http://127.0.0.1:8000/ (Ctrl-C stops web, worker and beat)"
DEBUG="${DEBUG:-1}" $PY manage.py runserver 127.0.0.1:8000 --noreload & pids+=($!)
wait -n "${pids[@]}"
