#!/usr/bin/env bash
# Installs Apache ZooKeeper from Debian's `zookeeper` package when it is missing: the server's
# jars only, no system service (`zookeeperd` would start one on port 2181). The tests start their
# own server on 127.0.0.1 on a free port (tests/locks/helpers.py); Java 17 comes from ensure-system.sh.
# Debian/Ubuntu, as root. Idempotent: does nothing when the jars are there.
set -euo pipefail

if ls /usr/share/java/zookeeper*.jar >/dev/null 2>&1 || [ -n "${CLEANLINE_ZOOKEEPER_HOME:-}" ]; then
  exit 0
fi
echo "cleanline: installing the zookeeper package (the tests start a ZooKeeper server of their own)"
if [ "$(id -u)" != "0" ]; then
  echo "cleanline: need root to install zookeeper; install it (apt-get install zookeeper) or set" \
       "CLEANLINE_ZOOKEEPER_HOME to an Apache ZooKeeper release, and re-run" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends zookeeper
