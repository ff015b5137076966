#!/usr/bin/env bash
# Refreshes the front-end libraries the console serves from its own static folder (no CDN at run
# time): each is taken from the npm registry at the pinned version with `npm pack` and its
# built file and licence copied into console/static/console/vendor/. Run it by hand to upgrade
# (change the version here and in the templates that load it); the files are committed.
set -euo pipefail
cd "$(dirname "$0")/.."
CHART_JS=4.6.1
dest=console/static/console/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "chart.js@$CHART_JS" >/dev/null && tar xzf "chart.js-$CHART_JS.tgz")
cp "$work/package/dist/chart.umd.min.js" "$dest/chart-$CHART_JS.umd.min.js"
cp "$work/package/LICENSE.md" "$dest/chart-LICENSE.md"
echo "vendored chart.js $CHART_JS into $dest"
