#!/usr/bin/env bash
# Fire a schedule every second on N real `docket serve` processes sharing
# one PostgreSQL database, and measure what it made: one task per fire time
# (none twice, none missing) and the fire-to-admit lag (a task's created_at
# minus its run_at, which is its fire time).
#
#   scripts/bench-schedules.sh NODES [SERVER_URL]
#
# SERVER_URL names the PostgreSQL server (default
# postgres://postgres@127.0.0.1:5432); the script creates a fresh database on
# it, drops it at the end, and needs psql, curl and python3. Environment:
# DOCKET (the binary, default ./docket), SECONDS_RUN (fire times, default
# 180), INTERVAL (each node's --schedule-interval, default: serve's).
#
# The first node prints the demo admin key; then the other nodes start, the
# schedule is created through the admin API, and the script pauses it after
# SECONDS_RUN fire times. Every wait is bounded.
set -euo pipefail
export PGCONNECT_TIMEOUT=${PGCONNECT_TIMEOUT:-10}

nodes=${1:?usage: $0 NODES [SERVER_URL]}
server=${2:-postgres://postgres@127.0.0.1:5432}
docket=${DOCKET:-./docket}
fires=${SECONDS_RUN:-180}
db=docket_sched_$$
work=$(mktemp -d)
url="$server/$db?sslmode=disable"
common=(--db "$url" --listen 127.0.0.1:0 --offline-workers -1 ${INTERVAL:+--schedule-interval "$INTERVAL"})

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

# launch I: runs node I in the background.
launch() {
  "$docket" serve "${common[@]}" >"$work/node$1.log" 2>&1 &
  pids+=($!)
}

# base I: prints node I's base URL once it answers.
base() {
  local pid=${pids[$(($1 - 1))]} url=""
  for _ in $(seq 300); do # 30 s
    url=$(sed -nE 's/^Docket listening on (http:\/\/[^ ]+).*/\1/p' "$work/node$1.log")
    if [ -n "$url" ] && curl -sf --max-time 2 "$url/healthz" >/dev/null; then
      echo "$url"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "node $1 did not start within 30 s:" >&2
  cat "$work/node$1.log" >&2
  return 1
}

launch 1
bases=("$(base 1)")
key=$(grep -o 'export DOCKET_API_KEY=[^ ]*' "$work/node1.log" | head -n1 | cut -d= -f2)
for i in $(seq 2 "$nodes"); do
  launch "$i"
  bases+=("$(base "$i")")
done

api() { # METHOD PATH [BODY]
  curl -sf --max-time 10 -X "$1" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    ${3:+--data "$3"} "${bases[0]}$2"
}
first=$(api PUT /v1/admin/schedules/bench \
  '{"tenant":"demo","workflow":"demo.echo","input":{"bench":true},"cron":"* * * * * *","overlap":"allow","missed":"skip"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["next_fire_times"][0])')
# Pause half a second after the last fire time wanted.
python3 - "$first" "$fires" <<'PY'
import datetime, sys, time
first = datetime.datetime.fromisoformat(sys.argv[1].replace("Z", "+00:00"))
until = first + datetime.timedelta(seconds=int(sys.argv[2]) - 1, milliseconds=500)
time.sleep(max(0, (until - datetime.datetime.now(datetime.timezone.utc)).total_seconds()))
PY
api POST /v1/admin/schedules/bench/pause >/dev/null
sleep 2 # a fire in flight at the pause lands
[ -n "${LAGS:-}" ] && psql -qAt "$url" -c "SELECT run_at, round(1000 * extract(epoch FROM created_at - run_at)) FROM tasks WHERE author = 'schedule:bench' ORDER BY run_at" >"$LAGS"

for i in $(seq "$nodes"); do
  kill -0 "${pids[$((i - 1))]}" 2>/dev/null || { echo "node $i exited during the run:" >&2; tail -n 20 "$work/node$i.log" >&2; exit 1; }
done
admitted=()
for b in "${bases[@]}"; do
  admitted+=("$(curl -sf --max-time 5 "$b/metrics" | sed -nE 's/^docket_schedule_fires_total\{outcome="admitted"\} ([0-9.e+]+)$/\1/p' | head -n1)")
done
psql -qAt "$url" -F ' ' -c "
  WITH s AS (SELECT run_at, count(*) AS n, min(created_at) AS created FROM tasks
             WHERE author = 'schedule:bench' AND run_at <= '$first'::timestamptz + interval '$((fires - 1)) seconds'
             GROUP BY run_at)
  SELECT count(*), coalesce(sum(n), 0), count(*) FILTER (WHERE n > 1),
         round(1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM created - run_at)))::int,
         round(1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM created - run_at)))::int,
         round(1000 * max(extract(epoch FROM created - run_at)))::int
  FROM s" | {
  read -r times tasks twice p50 p99 maxms
  echo "nodes=$nodes fire_times_wanted=$fires fire_times_with_a_task=$times tasks=$tasks fired_twice=$twice lag_p50_ms=$p50 lag_p99_ms=$p99 lag_max_ms=$maxms admitted_per_node=${admitted[*]}"
}
