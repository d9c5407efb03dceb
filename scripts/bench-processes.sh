#!/usr/bin/env bash
# Drain a preloaded backlog with N real `docket serve` processes on one
# PostgreSQL database, as several nodes run in production (`docket bench
# --nodes` runs its nodes inside one process instead).
#
#   scripts/bench-processes.sh NODES [SERVER_URL]
#
# SERVER_URL names the PostgreSQL server (default
# postgres://postgres@127.0.0.1:5432); the script creates a fresh database on
# it, drops it at the end, and needs psql, curl and python3. Environment:
# DOCKET (the binary, default ./docket), TASKS (default 100000), WORKERS (each
# node's --online-workers; unset: the default, 32 per CPU), TIMEOUT (seconds
# the drain may take before the script gives up, default 600).
#
# One node with its pools off admits TASKS `demo.echo` tasks through
# POST /v1/tasks/batch and stops. Then NODES processes start at once and the
# clock runs from their start until every task has succeeded (a count of
# task_results every 50 ms), so process start-up is inside the figure.
#
# Every node listens on a port the system picks (--listen 127.0.0.1:0); the
# loader's is read from the line `docket serve` prints. Every wait is
# bounded: a node that does not start, stop or drain in time fails the run.
set -euo pipefail
export PGCONNECT_TIMEOUT=${PGCONNECT_TIMEOUT:-10}

nodes=${1:?usage: $0 NODES [SERVER_URL]}
server=${2:-postgres://postgres@127.0.0.1:5432}
docket=${DOCKET:-./docket}
tasks=${TASKS:-100000}
timeout=${TIMEOUT:-600}
db=docket_procs_$$
work=$(mktemp -d)
url="$server/$db?sslmode=disable"
common=(--db "$url" --online-capacity $((tasks * 2)) --default-tenant-limit -1 --listen 127.0.0.1:0)

# stop PID: SIGTERM, then SIGKILL if the process has not exited within 30 s.
stop() {
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 300); do
    kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  echo "process $1 did not stop within 30 s: killed" >&2
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

pids=()
cleanup() {
  for pid in "${pids[@]}"; do stop "$pid"; done
  psql -qAt "$server/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

psql -qAt "$server/postgres" -c "CREATE DATABASE $db"

"$docket" serve "${common[@]}" --online-workers -1 --offline-workers -1 >"$work/load.log" 2>&1 &
loader=$!
pids+=("$loader")
base=""
for _ in $(seq 300); do # 30 s
  base=$(sed -nE 's/^Docket listening on (http:\/\/[^ ]+).*/\1/p' "$work/load.log")
  if [ -n "$base" ] && curl -sf --max-time 2 "$base/healthz" >/dev/null; then
    break
  fi
  base=""
  kill -0 "$loader" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$base" ]; then
  echo "the loader did not start within 30 s:" >&2
  cat "$work/load.log" >&2
  exit 1
fi
key=$(grep -o 'export DOCKET_API_KEY=[^ ]*' "$work/load.log" | head -n1 | cut -d= -f2)
python3 - "$base" "$key" "$tasks" <<'PY'
import json, sys, urllib.request
base, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for b in range(0, n, 1000):
    items = [{"idempotency_key": f"k{i}", "workflow": "demo.echo", "input": {"i": i}} for i in range(b, min(n, b + 1000))]
    req = urllib.request.Request(base + "/v1/tasks/batch", data=json.dumps({"tasks": items}).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    refused = [r for r in json.load(urllib.request.urlopen(req, timeout=60))["results"] if r["status"] != 201]
    if refused:
        sys.exit(f"admission refused: {refused[0]}")
PY
stop "$loader"

count() { psql -qAt "$url" -c "SELECT count(*) FROM task_results WHERE state = 'succeeded'"; }
start=$(date +%s.%N)
deadline=$(($(date +%s) + timeout))
for i in $(seq "$nodes"); do
  "$docket" serve "${common[@]}" ${WORKERS:+--online-workers "$WORKERS"} >"$work/node$i.log" 2>&1 &
  pids+=($!)
done
until [ "$(count)" -ge "$tasks" ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "the backlog did not drain within ${timeout} s ($(count) of $tasks succeeded)" >&2
    exit 1
  fi
  for i in $(seq "$nodes"); do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      echo "node $i exited during the drain:" >&2
      tail -n 20 "$work/node$i.log" >&2
      exit 1
    fi
  done
  sleep 0.05
done
end=$(date +%s.%N)
python3 -c "import sys; s = float(sys.argv[2]) - float(sys.argv[1]); print(f'nodes=$nodes workers=${WORKERS:-default} tasks=$tasks seconds={s:.2f} tasks_per_second={$tasks / s:.0f}')" "$start" "$end"
