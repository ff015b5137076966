#!/usr/bin/env bash
# Installs the operating-system packages Cleanline needs when they are missing:
# Python 3.11 with venv, Java 17 (PySpark 4), Redis (Celery broker), Chromium (browser
# tests), the OpenLDAP and SASL headers and a compiler that python-ldap (LDAP sign-in) builds
# with, and OpenLDAP's slapd (the LDAP sign-in tests). Debian/Ubuntu, as root.
set -euo pipefail

need=()
python_bin="${PYTHON:-python3.11}"
command -v "$python_bin" >/dev/null 2>&1 || need+=(python3.11 python3.11-venv)
if ! java -version 2>&1 | grep -Eq 'version "(1[7-9]|2[0-9])'; then
  need+=(openjdk-17-jre-headless)
fi
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v chromium >/dev/null 2>&1 || need+=(chromium)  # browser tests (Playwright drives it)
# python-ldap (cleanline[ldap]) is built from source against these
command -v gcc >/dev/null 2>&1 || need+=(gcc)
for package in libldap2-dev libsasl2-dev; do
  dpkg -s "$package" >/dev/null 2>&1 || need+=("$package")
done
"$python_bin" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' \
  2>/dev/null || need+=("${python_bin}-dev")
# the LDAP sign-in tests start their own slapd on 127.0.0.1 (tests/console/helpers.py)
[ -x /usr/sbin/slapd ] || need+=(slapd ldap-utils)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "cleanline: installing OS packages: ${need[*]}"
if [ "$(id -u)" != "0" ]; then
  echo "cleanline: need root to install ${need[*]}; install them and re-run" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}"
