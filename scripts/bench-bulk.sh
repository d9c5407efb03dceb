#!/usr/bin/env bash
# Time a bulk retry of N failed tasks against the admission of N tasks
# through POST /v1/tasks/batch, on one `docket serve` and a fresh
# PostgreSQL database (BENCHMARKS.md, "Bulk actions").
#
#   scripts/bench-bulk.sh [N] [SERVER_URL]
#
# N defaults to 100000; SERVER_URL names the PostgreSQL server (default
# postgres://postgres@127.0.0.1:5432). The script creates a database on it
# and drops it at the end; it needs psql, curl and python3. Environment:
# DOCKET (the binary, default ./docket), CLIENTS (concurrent batch clients,
# default 4), KEEP_DB (keep the database), SKIP_RETRY (stop after step 2).
#
# 1. A server with no workers admits N demo.fail tasks (max_attempts 1) in
#    batches of 1,000 from CLIENTS clients: the admission time.
# 2. The server restarts with workers, which run every task once: all fail.
# 3. The server restarts with no workers again, and one bulk retry of
#    state=failed, workflow=demo.fail queues them all again: the job's time
#    from its created_at to its finished_at (the server's clock) and the
#    wall time until the CLI saw it done.
set -euo pipefail
export PGCONNECT_TIMEOUT=${PGCONNECT_TIMEOUT:-10}

n=${1:-100000}
server=${2:-postgres://postgres@127.0.0.1:5432}
docket=${DOCKET:-./docket}
clients=${CLIENTS:-4}
db=docket_bulk_$$
work=$(mktemp -d)
url="$server/$db?sslmode=disable"
common=(--db "$url" --listen 127.0.0.1:0 --online-capacity $((2 * n)) --default-tenant-limit -1 --offline-workers -1)

pid=""
stop() {
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; pid=""; return 0; }
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}
cleanup() {
  stop
  [ -n "${KEEP_DB:-}" ] && echo "kept database $db" >&2 || psql -qAt "$server/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
psql -qAt "$server/postgres" -c "CREATE DATABASE $db"

# start LOG [FLAGS…]: runs a server and sets base to its URL.
start() {
  local log=$1
  shift
  "$docket" serve "${common[@]}" "$@" >"$work/$log" 2>&1 &
  pid=$!
  base=""
  for _ in $(seq 300); do
    base=$(sed -nE 's/^Docket listening on (http:\/\/[^ ]+).*/\1/p' "$work/$log")
    if [ -n "$base" ] && curl -sf --max-time 2 "$base/healthz" >/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "the server did not start:" >&2
  cat "$work/$log" >&2
  exit 1
}

start serve1.log --online-workers -1
key=$(grep -o 'export DOCKET_API_KEY=[^ ]*' "$work/serve1.log" | head -n1 | cut -d= -f2)
admit_s=$(python3 - "$base" "$key" "$n" "$clients" <<'PY'
import json, sys, threading, time, urllib.request
base, key, n, clients = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
batches = [list(range(i, min(i + 1000, n))) for i in range(0, n, 1000)]
lock = threading.Lock()
def work():
    while True:
        with lock:
            if not batches:
                return
            b = batches.pop()
        body = json.dumps({"tasks": [{"idempotency_key": f"bulk-{i}", "workflow": "demo.fail",
            "input": {"code": "upstream_down"}, "max_attempts": 1} for i in b]}).encode()
        req = urllib.request.Request(base + "/v1/tasks/batch", data=body, method="POST", headers={
            "Authorization": "Bearer " + key, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            out = json.load(r)
            assert all(x["status"] == 201 for x in out["results"]), out["results"][0]
start = time.monotonic()
ts = [threading.Thread(target=work) for _ in range(clients)]
for t in ts: t.start()
for t in ts: t.join()
print(f"{time.monotonic() - start:.2f}")
PY
)
stop

start serve2.log
for _ in $(seq 3600); do
  failed=$(psql -qAt "$url" -c "SELECT count(*) FROM task_results WHERE state = 'failed'")
  [ "$failed" -ge "$n" ] && break
  sleep 1
done
[ "$failed" -ge "$n" ] || { echo "only $failed of $n tasks failed within an hour" >&2; exit 1; }
stop

[ -n "${SKIP_RETRY:-}" ] && exit 0
start serve3.log --online-workers -1
t0=$(date +%s.%N)
job=$("$docket" bulk retry --url "$base" --key "$key" --state failed --workflow demo.fail --wait 1h --json)
t1=$(date +%s.%N)
python3 - "$job" "$admit_s" "$t0" "$t1" "$n" "$clients" <<'PY'
import datetime, json, sys
job, admit = json.loads(sys.argv[1]), float(sys.argv[2])
t0, t1, n, clients = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
parse = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
job_s = (parse(job["finished_at"]) - parse(job["created_at"])).total_seconds() if job["finished_at"] else float("nan")
print(f"tasks={n} batch_clients={clients} admit_s={admit:.2f} bulk_retry_job_s={job_s:.2f} bulk_retry_wall_s={t1 - t0:.2f} "
      f"ratio={job_s / admit:.2f} state={job['state']} matched={job['matched']} done={job['done']} skipped={job['skipped']} failed={job['failed']}")
PY
