# Sourced by scripts/setup.sh and scripts/run.sh: one progress line per set-up step, what the
# step's commands print (installers, migrations, ...) appended to a log file instead.
#   steps_log FILE         where the steps' output goes (its folder is made)
#   step "what" CMD ARG... prints "cleanline: what ... done (3 s)", or on failure "failed" and
#                          the end of the log, and exits 1. A step may set STEP_NOTE (it runs in
#                          this shell when CMD is a function): it is added to its line. In
#                          such a function `set -e` is off (bash ignores it under `||`): each
#                          command that may fail ends with `|| return`.

STEP_LOG=/dev/null

steps_log() {
  mkdir -p "$(dirname "$1")"
  STEP_LOG="$1"
  : >> "$STEP_LOG"
}

step() {
  local what="$1" began=$SECONDS status=0
  shift
  STEP_NOTE=""
  printf 'cleanline: %s ... ' "$what"
  printf '\n== %s: %s\n' "$(date '+%Y-%m-%d %H:%M:%S')" "$what" >> "$STEP_LOG"
  "$@" >> "$STEP_LOG" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    echo "failed"
    echo "cleanline: $what failed (exit $status); the end of $STEP_LOG:" >&2
    tail -n 25 "$STEP_LOG" >&2
    exit 1
  fi
  echo "done ($((SECONDS - began)) s${STEP_NOTE:+; $STEP_NOTE})"
}
