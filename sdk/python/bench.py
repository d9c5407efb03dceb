#!/usr/bin/env python3
"""Burn-down benchmark of the Python worker.

Registers a remote no-op workflow, makes a worker key, submits N tasks with
POST /v1/tasks/batch (1,000 per call), then runs a Worker with S slots until
every task is finished, and prints one JSON line:

    {"tasks": N, "slots": S, "seconds": …, "tasks_per_second": …, …}

The clock starts when the worker starts and stops when the server has
acknowledged the last outcome.

    python3 sdk/python/bench.py --url http://127.0.0.1:8080 --admin-key $KEY -n 20000 --slots 64

Runs from a checkout (no install needed) or with the package installed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docket  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=os.environ.get("DOCKET_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--admin-key", default=os.environ.get("DOCKET_ADMIN_KEY"))
    ap.add_argument("-n", type=int, default=10_000, help="tasks to burn down")
    ap.add_argument("--slots", type=int, default=64, help="worker slots")
    ap.add_argument(
        "--workflow",
        default=None,
        help="remote workflow to register and run (default: py.bench.<run>, new each run, so that "
        "tasks left by an earlier run are not counted)",
    )
    ap.add_argument("--tenant", default="demo", help="the admin key's tenant (the worker key serves it)")
    args = ap.parse_args()
    if not args.admin_key:
        ap.error("--admin-key (or DOCKET_ADMIN_KEY) is required")

    run = "".join(random.choices(string.ascii_lowercase, k=10))
    args.workflow = args.workflow or f"py.bench.{run}"
    admin = docket.Client(args.url, args.admin_key)
    admin.request("PUT", f"/v1/admin/workflows/{args.workflow}", {"pool": "online", "max_attempts": 3})
    made = admin.request(
        "POST",
        "/v1/admin/keys",
        {"tenant": args.tenant, "principal": "py-bench", "role": "worker"},
    )
    worker_key = made["key"]
    restore_limit = raise_tenant_limit(admin, args.tenant, args.n)
    try:
        return burn_down(args, admin, worker_key, run)
    finally:
        if restore_limit is not None:
            admin.request("PATCH", f"/v1/admin/tenants/{args.tenant}", {"max_in_flight": restore_limit})
        admin.close()


def raise_tenant_limit(admin: docket.Client, tenant: str, n: int) -> int | None:
    """Makes room for n more in-flight tasks of the tenant; returns the
    limit to restore, or None when it was already large enough."""
    tenants = admin.request("GET", "/v1/admin/tenants").get("tenants", [])
    mine = next((t for t in tenants if t.get("id") == tenant), None)
    if mine is None or not mine.get("max_in_flight"):
        return None  # unknown tenant (created with the default) or no limit
    need = int(mine.get("in_flight", 0)) + n
    if mine["max_in_flight"] >= need:
        return None
    admin.request("PATCH", f"/v1/admin/tenants/{tenant}", {"max_in_flight": need})
    return int(mine["max_in_flight"])


def drain(args: argparse.Namespace, worker_key: str, n: int) -> tuple[docket.Worker, bool]:
    """Runs a worker until n outcomes are acknowledged (or it fails, or a
    generous timeout passes); returns it, stopped, and whether all were."""
    done = threading.Event()
    worker = docket.Worker(args.url, worker_key, slots=args.slots, wait_ms=1000, shutdown_grace=5)
    worker.handle(args.workflow, lambda task: None)

    def watch() -> None:
        # The worker's own counters: every outcome acknowledged by the server.
        while not done.is_set():
            s = worker.stats
            if s["finished_ok"] + s["finish_conflict"] + s["finish_lease_lost"] >= n:
                done.set()
                return
            if worker.join(0):  # the worker ended on its own (claims refused)
                done.set()
                return
            done.wait(0.005)

    worker.start()
    threading.Thread(target=watch, daemon=True).start()
    finished = done.wait(max(60.0, n / 100)) and worker.error is None
    worker.stop()
    worker.join()
    return worker, finished


def burn_down(args: argparse.Namespace, admin: docket.Client, worker_key: str, run: str) -> int:
    t0 = time.monotonic()
    ids: list[str] = []
    for start in range(0, args.n, 1000):
        batch = [
            {"workflow": args.workflow, "input": {"i": i}, "idempotency_key": f"bench-{run}-{i}"}
            for i in range(start, min(start + 1000, args.n))
        ]
        while True:
            try:
                results = admin.submit_batch(batch)
                break
            except docket.DocketError as err:
                if err.status not in (429, 503):
                    raise
                time.sleep(err.retry_after or 0.5)
        ids.extend(r.task.id for r in results if r.task)
        refused = [r for r in results if r.status not in (200, 201)]
        if refused:
            codes = sorted({r.error.code if r.error else str(r.status) for r in refused})
            hint = ""
            if "queue_full" in codes:
                hint = "; start the server with a larger --online-capacity"
            print(f"bench: {len(refused)} tasks refused ({', '.join(codes)}){hint}", file=sys.stderr)
            print(f"bench: draining the {len(ids)} tasks admitted", file=sys.stderr)
            drain(args, worker_key, len(ids))
            return 1
    submit_seconds = time.monotonic() - t0

    t1 = time.monotonic()
    worker, finished = drain(args, worker_key, args.n)
    seconds = time.monotonic() - t1
    stats = worker.stats
    if worker.error is not None:
        print(f"bench: the worker stopped: {worker.error}", file=sys.stderr)
        return 1
    if not finished:
        print(f"bench: timed out, stats {stats}", file=sys.stderr)
        return 1
    # Spot-check on the server that the tasks are terminal.
    for tid in (ids[0], ids[len(ids) // 2], ids[-1]):
        state = admin.get(tid).state
        if state not in docket.TERMINAL_STATES:
            print(f"bench: task {tid} is {state}", file=sys.stderr)
            return 1
    print(
        json.dumps(
            {
                "tasks": args.n,
                "slots": args.slots,
                "seconds": round(seconds, 3),
                "tasks_per_second": round(args.n / seconds, 1),
                "submit_seconds": round(submit_seconds, 3),
                "finish_calls": stats["finish_calls"],
                "heartbeat_calls": stats["heartbeat_calls"],
                "finished_ok": stats["finished_ok"],
            }
        )
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except docket.DocketError as err:
        print(f"bench: {err}", file=sys.stderr)
        sys.exit(1)
