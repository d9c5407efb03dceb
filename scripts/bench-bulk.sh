#!/usr/bin/env bash
# Time a bulk retry of N failed tasks against the admission of N tasks
# through POST /v1/tasks/batch, on one `docket serve` and a fresh
# PostgreSQL database (BENCHMARKS.md, "Bulk actions").
#
#   scripts/bench-bulk.sh [N] [SERVER_URL]
#
# N defaults to 100000; SERVER_URL names the PostgreSQL server (default
# postgres://postgres@127.0.0.1:5432). A CHECKPOINT runs before each timed
# step. The script creates a database on it
# and drops it at the end; it needs psql, curl and python3. Environment:
# DOCKET (the binary, default ./docket), CLIENTS (concurrent batch clients,
# default 4), KEEP_DB (keep the database), SKIP_RETRY (stop after step 2),
# PROBE_CLIENTS (concurrent single-submit clients of step 5, default 4; 0
# skips steps 4 and 5), PROBE_BASE_S (the probe's run alone, default 20).
#
# 1. A server with no workers admits N demo.fail tasks (max_attempts 1) in
#    batches of 1,000 from CLIENTS clients: the admission time.
# 2. The server restarts with workers, which run every task once: all fail.
# 3. The server restarts with no workers again, and one bulk retry of
#    state=failed, workflow=demo.fail queues them all again, alone on the
#    server as the admission was: the job's time from its created_at to its
#    finished_at (the server's clock), against the admission's (ratio).
# 4. The server restarts with workers, which run every task again: all
#    fail again.
# 5. The server restarts with no workers, and PROBE_CLIENTS clients send
#    single submits (POST /v1/tasks, demo.echo, one at a time each), first
#    PROBE_BASE_S seconds alone, then beside a second bulk retry of all N,
#    for as long as it runs: the p50 and p99 of their latency, alone and
#    beside it, and the bulk retry's time beside them (a bulk job yields
#    to submissions: docs/failures.md).
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

# checkpoint: a CHECKPOINT before a timed step, so that one forced by the
# WAL the step before wrote (100,000 tasks write several hundred MB) does
# not fall inside it (best effort: it needs a superuser or pg_checkpoint).
checkpoint() { psql -qAt "$url" -c CHECKPOINT >/dev/null 2>&1 || true; }

start serve1.log --online-workers -1
checkpoint
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

# fail_all LOG: a server with workers runs every task; all fail.
fail_all() {
  start "$1"
  for _ in $(seq 3600); do
    failed=$(psql -qAt "$url" -c "SELECT count(*) FROM task_results WHERE state = 'failed'")
    [ "$failed" -ge "$n" ] && break
    sleep 1
  done
  [ "$failed" -ge "$n" ] || { echo "only $failed of $n tasks failed within an hour" >&2; exit 1; }
  stop
}
# bulk_retry: one bulk retry of every failed demo.fail task; prints the
# job's JSON.
bulk_retry() { "$docket" bulk retry --url "$base" --key "$key" --state failed --workflow demo.fail --wait 1h --json; }
# job_seconds JSON: the job's finished_at - created_at.
job_seconds() {
  python3 -c 'import datetime, json, sys
job = json.loads(sys.argv[1])
parse = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
assert job["state"] == "done" and job["done"] == int(sys.argv[2]), job
seconds = (parse(job["finished_at"]) - parse(job["created_at"])).total_seconds()
print("%.2f" % seconds)' "$1" "$n"
}

fail_all serve2.log
[ -n "${SKIP_RETRY:-}" ] && exit 0
start serve3.log --online-workers -1
checkpoint
alone_job=$(bulk_retry)
alone_s=$(job_seconds "$alone_job")
stop
echo "tasks=$n batch_clients=$clients admit_s=$admit_s bulk_retry_alone_s=$alone_s ratio=$(python3 -c "print(f'{$alone_s / $admit_s:.2f}')")"

probe_clients=${PROBE_CLIENTS:-4}
[ "$probe_clients" -gt 0 ] || exit 0
fail_all serve4.log
start serve5.log --online-workers -1
# probe PREFIX SECONDS|STOPFILE: single submits from probe_clients clients
# until the time is up or the file exists; prints "n p50_ms p99_ms".
probe() {
  python3 - "$base" "$key" "$probe_clients" "$1" "$2" <<'PY'
import json, os, sys, threading, time, urllib.request
base, key, clients, prefix, until = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
deadline = time.monotonic() + float(until) if until.replace(".", "", 1).isdigit() else None
done = (lambda: time.monotonic() >= deadline) if deadline else (lambda: os.path.exists(until))
lat, lock = [], threading.Lock()
def work(c):
    i = 0
    while not done():
        i += 1
        req = urllib.request.Request(base + "/v1/tasks", data=b'{"workflow":"demo.echo","input":{}}', method="POST", headers={
            "Authorization": "Bearer " + key, "Content-Type": "application/json", "Idempotency-Key": f"{prefix}-{c}-{i}"})
        t = time.monotonic()
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status == 201, r.status
            r.read()
        with lock:
            lat.append((time.monotonic() - t) * 1000)
ts = [threading.Thread(target=work, args=(c,)) for c in range(clients)]
for t in ts: t.start()
for t in ts: t.join()
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")
print(f"{len(lat)} {q(0.50):.1f} {q(0.99):.1f}")
PY
}
checkpoint
probe_base=$(probe alone "${PROBE_BASE_S:-20}")
probe beside "$work/bulk.done" >"$work/probe_bulk" &
probe_pid=$!
beside_job=$(bulk_retry)
touch "$work/bulk.done"
wait "$probe_pid"
probe_bulk=$(cat "$work/probe_bulk")
echo "single submits ($probe_clients clients): alone n p50_ms p99_ms = $probe_base; beside the bulk retry = $probe_bulk"
python3 - "$probe_base" "$probe_bulk" "$(job_seconds "$beside_job")" <<'PY'
import sys
alone, beside, job_s = sys.argv[1].split(), sys.argv[2].split(), sys.argv[3]
print(f"p99 beside/alone={float(beside[2]) / float(alone[2]):.2f} p50 beside/alone={float(beside[1]) / float(alone[1]):.2f} "
      f"bulk_retry_beside_s={job_s}")
PY
