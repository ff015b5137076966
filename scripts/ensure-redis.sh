#!/usr/bin/env bash
# Starts a local Redis when none answers at REDIS_URL (default redis://127.0.0.1:6379/0).
set -euo pipefail

url="${REDIS_URL:-redis://127.0.0.1:6379/0}"
hostport="${url#*://}"; hostport="${hostport#*@}"; hostport="${hostport%%/*}"
host="${hostport%%:*}"; port="${hostport##*:}"
[ "$port" = "$host" ] && port=6379

if redis-cli -h "$host" -p "$port" ping 2>/dev/null | grep -q PONG; then
  exit 0
fi
case "$host" in
  127.0.0.1|localhost) ;;
  *) echo "cleanline: no Redis answers at $url and it is not local; start it there" >&2; exit 1 ;;
esac
echo "cleanline: starting redis-server on $host:$port"
mkdir -p var/redis
redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
  --dir "$PWD/var/redis" --logfile "$PWD/var/redis/redis.log"
for _ in $(seq 1 50); do
  redis-cli -h "$host" -p "$port" ping 2>/dev/null | grep -q PONG && exit 0
  sleep 0.1
done
echo "cleanline: redis-server did not start; see var/redis/redis.log" >&2
exit 1
