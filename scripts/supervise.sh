# shellcheck shell=bash
# `make run`'s last step (scripts/run.sh): wait for the first of its processes ("${pids[@]}", named
# in "${names[@]}") to end and say why. One that ended by a signal, or exited 0 as gunicorn and
# Celery do when they are asked to stop (`kill PID`), was stopped: "the beat was stopped (SIGTERM);
# stopping the rest ... " and status 0, for run.sh to stop the others and say "stopped." (no
# crash words, no make error). One that exited with an error stopped on its own: its log is
# named and the status is 1.
supervise() {
  local status=0 ended="" name="a process" log="" i how
  wait -n -p ended "${pids[@]}" || status=$?
  for i in "${!pids[@]}"; do
    if [ "${pids[$i]}" = "$ended" ]; then name="the ${names[$i]}"; log="${LOGS:-var/log}/${names[$i]}.log"; fi
  done
  if [ "$status" -eq 0 ] || [ "$status" -gt 128 ]; then
    how="exited when asked to stop"
    if [ "$status" -gt 128 ]; then how="SIG$(kill -l $((status - 128)) 2>/dev/null || echo $((status - 128)))"; fi
    printf 'cleanline: %s was stopped (%s); stopping the rest ... ' "$name" "$how"
    return 0
  fi
  echo "cleanline: $name stopped on its own (exit $status)${log:+; see $log}" >&2
  return 1
}
