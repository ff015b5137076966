# shellcheck shell=bash
# `make run`'s Redis database (scripts/run.sh): one per checkout, so that two checkouts on one
# machine never share Celery's tasks. Unless REDIS_URL is given, it is redis://127.0.0.1:6379/N
# with N from 1 to 10 derived from the checkout's path (cksum of its absolute path, modulo 10,
# plus 1): the same checkout always gets the same database. Database 0 is Redis's default (other
# programs), 13 is the make-run test's console, and 15, 14, 12 and 11 the tests' processes
# (console/parallel_tests.py).
checkout_redis_url() {  # $1: the checkout's absolute path
  local sum
  sum="$(printf '%s' "$1" | cksum | cut -d' ' -f1)"
  echo "redis://127.0.0.1:6379/$(( sum % 10 + 1 ))"
}
