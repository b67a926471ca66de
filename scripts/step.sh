#!/usr/bin/env bash
# One step of `make` that may take minutes: say what it does first, a line every
# $MIRRORSPEC_PROGRESS_EVERY seconds (default 30) while it runs, and how long it took.
#
#   scripts/step.sh "what it does (how long it may take)" command [args…]
#
# The command's own output passes through; its exit code is the step's.
set -uo pipefail

label="$1"
shift
every="${MIRRORSPEC_PROGRESS_EVERY:-30}"
echo "==> $label"
start=$SECONDS
"$@" &
child=$!
trap 'kill "$child" 2>/dev/null' INT TERM
while kill -0 "$child" 2>/dev/null; do
  # wait for the command, at most $every seconds (a background sleep we can wait on)
  sleep "$every" &
  ticker=$!
  wait -n "$child" "$ticker" 2>/dev/null
  if kill -0 "$child" 2>/dev/null; then
    echo "    … still running ($(( SECONDS - start ))s): $label"
  fi
  kill "$ticker" 2>/dev/null
  wait "$ticker" 2>/dev/null
done
wait "$child"
code=$?
if [ "$code" -eq 0 ]; then
  echo "    done in $(( SECONDS - start ))s"
else
  echo "    failed (exit $code) after $(( SECONDS - start ))s: $label" >&2
fi
exit "$code"
