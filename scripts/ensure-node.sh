#!/usr/bin/env bash
# Node.js for the OIDC sign-in tests: installs Debian's nodejs and npm when no `node` is found (as
# root), then the test provider's packages from its lockfile (tests/console/oidc_provider, npm ci)
# when they are missing or older than the lockfile.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != "0" ]; then
    echo "cleanline: need root to install ${need[*]}; install them and re-run" >&2
    exit 1
  fi
  echo "cleanline: installing OS packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
provider=tests/console/oidc_provider
stamp="$provider/node_modules/.package-lock.json"
if [ ! -f "$stamp" ] || [ "$provider/package-lock.json" -nt "$stamp" ]; then
  echo "cleanline: installing the test OIDC provider's packages (npm ci)"
  npm ci --prefix "$provider" --no-audit --no-fund --loglevel=error
fi
