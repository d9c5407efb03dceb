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
# node's --online-workers; unset: the default, 32 per CPU).
#
# One node with its pools off admits TASKS `demo.echo` tasks through
# POST /v1/tasks/batch and stops. Then NODES processes start at once and the
# clock runs from their start until every task has succeeded (a count of
# task_results every 50 ms), so process start-up is inside the figure.
set -euo pipefail

nodes=${1:?usage: $0 NODES [SERVER_URL]}
server=${2:-postgres://postgres@127.0.0.1:5432}
docket=${DOCKET:-./docket}
tasks=${TASKS:-100000}
db=docket_procs_$$
work=$(mktemp -d)
url="$server/$db?sslmode=disable"
common=(--db "$url" --online-capacity $((tasks * 2)) --default-tenant-limit 0)

psql -qAt "$server/postgres" -c "CREATE DATABASE $db"
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  psql -qAt "$server/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$docket" serve "${common[@]}" --listen 127.0.0.1:18100 --online-workers -1 --offline-workers -1 >"$work/load.log" 2>&1 &
loader=$!
for _ in $(seq 100); do
  grep -q 'export DOCKET_API_KEY=' "$work/load.log" && curl -sf http://127.0.0.1:18100/healthz >/dev/null && break
  sleep 0.1
done
key=$(grep -o 'export DOCKET_API_KEY=[^ ]*' "$work/load.log" | head -n1 | cut -d= -f2)
python3 - "$key" "$tasks" <<'PY'
import json, sys, urllib.request
key, n = sys.argv[1], int(sys.argv[2])
for b in range(0, n, 1000):
    items = [{"idempotency_key": f"k{i}", "workflow": "demo.echo", "input": {"i": i}} for i in range(b, min(n, b + 1000))]
    req = urllib.request.Request("http://127.0.0.1:18100/v1/tasks/batch", data=json.dumps({"tasks": items}).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    refused = [r for r in json.load(urllib.request.urlopen(req))["results"] if r["status"] != 201]
    if refused:
        sys.exit(f"admission refused: {refused[0]}")
PY
kill "$loader" && wait "$loader" || true

count() { psql -qAt "$url" -c "SELECT count(*) FROM task_results WHERE state = 'succeeded'"; }
start=$(date +%s.%N)
for i in $(seq "$nodes"); do
  "$docket" serve "${common[@]}" --listen "127.0.0.1:$((18100 + i))" ${WORKERS:+--online-workers "$WORKERS"} >"$work/node$i.log" 2>&1 &
done
until [ "$(count)" -ge "$tasks" ]; do sleep 0.05; done
end=$(date +%s.%N)
python3 -c "import sys; s = float(sys.argv[2]) - float(sys.argv[1]); print(f'nodes=$nodes workers=${WORKERS:-default} tasks=$tasks seconds={s:.2f} tasks_per_second={$tasks / s:.0f}')" "$start" "$end"
