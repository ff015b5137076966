#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 for the console's PostgreSQL tests:
# installs and starts Debian's package when none answers (as root), with a password for the
# postgres role so that TCP logins work.
set -euo pipefail
if command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p 5432; then
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  echo "cleanline: no PostgreSQL on 127.0.0.1:5432 and not root to install one" >&2
  exit 1
fi
if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  echo "cleanline: installing PostgreSQL"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql
fi
version=$(ls /etc/postgresql | sort -V | tail -1)
pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.2; done
su postgres -c "psql -q -c \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null
