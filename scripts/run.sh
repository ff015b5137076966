#!/usr/bin/env bash
# `make run`: the console served by gunicorn on HOST:PORT (default 127.0.0.1:8000, DEBUG off unless
# DEBUG=1, static files by WhiteNoise), a Celery worker and beat, on the demo lake. One progress
# line per set-up step (Redis, the fixture tables, migrations, static files, the admin accounts
# and tables, the web server, worker and beat); what each step prints goes to var/log/run.log.
# Once the console answers, "ready" is said once, with the URL and the admin logins. The Spark
# demo tables are then built in the background (`manage.py demo_lake`, its log
# var/log/demo-lake.log), a line for each as it reaches the catalog. Logs of the web server,
# worker and beat are in var/log/. Ctrl-C stops everything and says so ("stopped").
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
LAKE="${DEMO_LAKE:-var/demo-lake}"
FIXTURES="${FIXTURES:-../shared/fixtures/hudi-rs-tables}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
LOGS=var/log
export HOST PORT DJANGO_SETTINGS_MODULE=console.settings
# this checkout's own Redis database unless REDIS_URL names one (scripts/redis-db.sh)
# shellcheck source=scripts/redis-db.sh
source scripts/redis-db.sh
REDIS_URL="${REDIS_URL:-$(checkout_redis_url "$PWD")}"
export REDIS_URL
export CLEANLINE_ALLOWED_ROOTS="${CLEANLINE_ALLOWED_ROOTS:-$PWD/$LAKE}"
# the background build of the demo lake keeps its progress here; the dashboard and catalog show it
export CLEANLINE_DEMO_STATUS="${CLEANLINE_DEMO_STATUS:-$PWD/var/demo-lake-status.json}"
mkdir -p "$LOGS"
# shellcheck source=scripts/steps.sh
source scripts/steps.sh
steps_log "$LOGS/run.log"
# DEBUG is off unless asked for (DEBUG=1), so every process needs a SECRET_KEY: one random key is
# made on the first run and kept in var/secret-key (readable by this user only, never tracked).
if [ -z "${SECRET_KEY:-}" ]; then
  if [ ! -s var/secret-key ]; then
    (umask 077 && $PY -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret-key.tmp)
    mv var/secret-key.tmp var/secret-key
  fi
  chmod 600 var/secret-key
  SECRET_KEY="$(cat var/secret-key)"
  export SECRET_KEY
fi
# Celery warns when its worker runs as root: a worker runs whatever task a broker message names, so
# anyone who can write to Redis could make a root process delete lake files. Pickle is not accepted
# (JSON only), and `make run` is a demo on this machine with Redis on 127.0.0.1, often run as root
# in a container: the warning is silenced here only. A real deployment runs the worker as a
# service user (or with --uid), and there the warning still shows.
if [ "$(id -u)" = "0" ]; then
  export PYTHONWARNINGS="ignore:You're running the worker with superuser privileges${PYTHONWARNINGS:+,$PYTHONWARNINGS}"
fi

pids=()
names=()
builder=""
stop() {  # $1: interrupted (Ctrl-C, TERM) or exited (this script ends)
  trap - INT TERM EXIT
  if [ "$1" = interrupted ]; then
    printf '\ncleanline: stopping%s ... ' "${pids[*]:+ the web server, worker and beat}${builder:+ and the demo lake build}"
  fi
  kill "${pids[@]}" $builder 2>/dev/null || true
  wait 2>/dev/null || true
  if [ "$1" = interrupted ]; then
    echo "stopped."
    exit 0
  fi
}
trap 'stop interrupted' INT TERM
trap 'stop exited' EXIT

step "Redis at $REDIS_URL" bash scripts/ensure-redis.sh
unpack() {
  $PY scripts/demo_lake.py "$FIXTURES" "$LAKE/fixtures" || return  # (set -e is off in a step's function)
  STEP_NOTE="$(find "$LAKE/fixtures" -mindepth 1 -maxdepth 1 -not -name '.*' | wc -l) tables"
}
step "the demo lake's fixture tables in $LAKE/fixtures" unpack
step "the database, migrated" $PY manage.py migrate --noinput
step "static files, collected" $PY manage.py collectstatic --noinput
register() {
  $PY manage.py bootstrap "$LAKE" > "$LOGS/bootstrap.log" || return
  STEP_NOTE="$(grep -c '^synced ' "$LOGS/bootstrap.log" || true) registered and synced, $(grep -c '^queued a sync ' \
    "$LOGS/bootstrap.log" || true) re-syncs queued; $LOGS/bootstrap.log"
}
step "the admin accounts and the lake's tables" register

case "$HOST" in 0.0.0.0|::|"[::]") shown=127.0.0.1 ;; *) shown="$HOST" ;; esac
url="http://$shown:$PORT/"
serve() {
  $PY -m celery -A console worker --loglevel INFO --concurrency 2 > "$LOGS/worker.log" 2>&1 & pids+=($!); names+=(worker)
  $PY -m celery -A console beat --loglevel INFO --schedule var/celerybeat-schedule > "$LOGS/beat.log" 2>&1 & pids+=($!)
  names+=(beat)
  # Several gunicorn workers: their request latencies are summed through this folder (console/metrics.py).
  # The default folder is emptied at each start (a folder given in the environment is left as it is).
  if [ -z "${PROMETHEUS_MULTIPROC_DIR:-}" ]; then
    rm -rf var/prometheus && mkdir -p var/prometheus
  fi
  PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-$PWD/var/prometheus}" $PY -m gunicorn \
    'django.core.wsgi:get_wsgi_application()' --bind "$HOST:$PORT" --workers "${WEB_CONCURRENCY:-2}" \
    --access-logfile "$LOGS/web-access.log" > "$LOGS/web.log" 2>&1 & pids+=($!); names+=(web)
  for _ in $(seq 1 600); do
    if $PY -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "${url}login/" 2>/dev/null
    then
      return 0
    fi
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "a process stopped; see $LOGS/web.log, worker.log, beat.log"; return 1; }
    done
    sleep 0.1
  done
  echo "the console did not answer at $url; see $LOGS/web.log, worker.log, beat.log"
  return 1
}
step "the web server (gunicorn on $HOST:$PORT), the Celery worker and beat" serve

echo "Cleanline console ready: $url (Ctrl-C stops it; logs in $LOGS/)"
grep '^login:' "$LOGS/bootstrap.log" || true
grep '^two-person approval:' "$LOGS/bootstrap.log" || true

# The Spark demo tables, only when some are missing (checked without starting Spark); a line as
# each reaches the catalog.
rm -f "$CLEANLINE_DEMO_STATUS"  # an earlier start's, perhaps stopped mid-build; a new build writes its own
missing="$($PY -c 'import sys; from timeline.internal.engine import demo_tables_to_build as m; print(*m(sys.argv[1]))' "$LAKE")"
if [ -n "$missing" ]; then
  echo "demo lake: building $(echo "$missing" | wc -w) Spark tables in the background ($missing), each in the" \
    "catalog when written; the dashboard shows the progress, the log: $LOGS/demo-lake.log"
  (
    trap 'kill $child 2>/dev/null; exit 143' TERM
    $PY manage.py demo_lake "$LAKE" --log "$LOGS/demo-lake.log" --status "$CLEANLINE_DEMO_STATUS" \
      2>> "$LOGS/demo-lake.log" & child=$!
    if ! wait $child; then
      echo "demo lake: the Spark build failed; see $LOGS/demo-lake.log" >&2
    fi
  ) &
  builder=$!
fi

# shellcheck source=scripts/supervise.sh
source scripts/supervise.sh
if supervise; then  # stopped by someone (`kill PID`): the rest too, and say so
  stop exited
  echo "stopped."
  exit 0
fi
exit 1
