#!/usr/bin/env bash
# `make run`: the console served by gunicorn on HOST:PORT (default 127.0.0.1:8000, DEBUG off unless
# DEBUG=1, static files by WhiteNoise), a Celery worker and beat, on the demo lake. The fixture
# tables are unpacked and registered first (seconds) and the web server starts at once; the Spark
# demo tables are built in the background (`manage.py demo_lake`, progress in var/log/demo-lake.log)
# and each shows in the catalog when written. Logs of the web server, worker and beat are in
# var/log/. The URL and the admin login are printed last, once the console answers. Ctrl-C stops
# everything.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
LAKE="${DEMO_LAKE:-var/demo-lake}"
FIXTURES="${FIXTURES:-../shared/fixtures/hudi-rs-tables}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
LOGS=var/log
export HOST PORT DJANGO_SETTINGS_MODULE=console.settings
export CLEANLINE_ALLOWED_ROOTS="${CLEANLINE_ALLOWED_ROOTS:-$PWD/$LAKE}"
# the background build of the demo lake keeps its progress here; the dashboard and catalog show it
export CLEANLINE_DEMO_STATUS="${CLEANLINE_DEMO_STATUS:-$PWD/var/demo-lake-status.json}"
mkdir -p "$LOGS"
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

$PY scripts/demo_lake.py "$FIXTURES" "$LAKE/fixtures"
$PY manage.py migrate --noinput -v 0
$PY manage.py collectstatic --noinput -v 0
$PY manage.py bootstrap "$LAKE" > "$LOGS/bootstrap.log"
login="$(grep '^login:' "$LOGS/bootstrap.log")"  # printed last, once the console answers
grep -v -e '^login:' -e '^synced ' -e '^queued a sync ' "$LOGS/bootstrap.log" || true
echo "registered and synced $(grep -c '^synced ' "$LOGS/bootstrap.log" || true) tables, queued a re-sync of" \
  "$(grep -c '^queued a sync ' "$LOGS/bootstrap.log" || true) ($LOGS/bootstrap.log)"

pids=()
builder=""
stop() {
  trap - INT TERM EXIT
  kill "${pids[@]}" $builder 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT
$PY -m celery -A console worker --loglevel INFO --concurrency 2 > "$LOGS/worker.log" 2>&1 & pids+=($!)
$PY -m celery -A console beat --loglevel INFO --schedule var/celerybeat-schedule > "$LOGS/beat.log" 2>&1 & pids+=($!)
# Several gunicorn workers: their request latencies are summed through this folder (console/metrics.py).
# The default folder is emptied at each start (a folder given in the environment is left as it is).
if [ -z "${PROMETHEUS_MULTIPROC_DIR:-}" ]; then
  rm -rf var/prometheus && mkdir -p var/prometheus
fi
PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-$PWD/var/prometheus}" $PY -m gunicorn 'django.core.wsgi:get_wsgi_application()' --bind "$HOST:$PORT" \
  --workers "${WEB_CONCURRENCY:-2}" --access-logfile "$LOGS/web-access.log" > "$LOGS/web.log" 2>&1 & pids+=($!)

# The Spark demo tables, only when some are missing (checked without starting Spark). When the
# build ends, the URL and the login are printed again, so that they stay the last lines.
rm -f "$CLEANLINE_DEMO_STATUS"  # an earlier start's, perhaps stopped mid-build; a new build writes its own
missing="$($PY -c 'import sys; from timeline.engine import demo_tables_to_build as m; print(*m(sys.argv[1]))' "$LAKE")"
case "$HOST" in 0.0.0.0|::|"[::]") shown=127.0.0.1 ;; *) shown="$HOST" ;; esac
url="http://$shown:$PORT/"
if [ -n "$missing" ]; then
  echo "demo lake: building the Spark tables ($missing) in the background; progress: tail -f $LOGS/demo-lake.log"
  (
    trap 'kill $child 2>/dev/null; exit 143' TERM
    $PY manage.py demo_lake "$LAKE" --log "$LOGS/demo-lake.log" --status "$CLEANLINE_DEMO_STATUS" \
      2>> "$LOGS/demo-lake.log" & child=$!
    if wait $child; then
      echo "demo lake: every Spark table is built and in the catalog ($LOGS/demo-lake.log)"
    else
      echo "demo lake: the Spark build failed; see $LOGS/demo-lake.log" >&2
    fi
    echo "Cleanline console: $url"
    echo "$login"
  ) &
  builder=$!
fi

answered=""
for _ in $(seq 1 600); do
  if $PY -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "${url}login/" 2>/dev/null; then
    answered=1
    break
  fi
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || break 2
  done
  sleep 0.1
done
if [ -z "$answered" ]; then
  echo "cleanline: the console did not answer at $url; see $LOGS/web.log, worker.log, beat.log" >&2
  exit 1
fi
echo "Cleanline console ready: $url (Ctrl-C stops it; logs in $LOGS/)"
echo "$login"
wait -n "${pids[@]}"
echo "cleanline: a process stopped; see $LOGS/web.log, worker.log, beat.log" >&2
