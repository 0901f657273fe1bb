#!/bin/sh
# stage.sh NAME COMMAND...: runs COMMAND and then says how long it took, so
# that a `make test` log shows where its time budget (35 minutes on 2 cores)
# goes. The exit status is COMMAND's.
name=$1
shift
start=$(date +%s)
status=0
"$@" || status=$?
echo "== make test: stage $name: $(($(date +%s) - start)) s (exit $status)"
exit $status
