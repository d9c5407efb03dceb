"""The README's worker example is examples/quickstart.py, verbatim (the
integration tests run that file against a server)."""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
import unittest
from pathlib import Path

from .fake_server import FakeDocket

ROOT = Path(__file__).resolve().parent.parent


class ReadmeTest(unittest.TestCase):
    def test_example_block_is_the_example_file(self) -> None:
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        m = re.search(r"<!-- example: examples/quickstart\.py.*?-->\n```python\n(.*?)```", readme, re.S)
        self.assertIsNotNone(m, "the README has no marked example block")
        example = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
        self.assertEqual(m.group(1), example)
        self.assertLessEqual(len([l for l in example.splitlines() if l.strip()]), 12)
        ast.parse(example)  # and it is Python

    def test_example_uses_only_the_public_api(self) -> None:
        example = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
        self.assertNotRegex(example, r"docket\._")


    def test_example_runs_and_stops_on_sigterm(self) -> None:
        fake = FakeDocket(heartbeat_ms=200, realistic=True).start()
        self.addCleanup(fake.close)
        tid = fake.add_task("py.hello", {"name": "Ada"})
        env = dict(os.environ, DOCKET_URL=fake.url, DOCKET_WORKER_KEY=fake.key)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        proc = subprocess.Popen([sys.executable, str(ROOT / "examples" / "quickstart.py")], env=env)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.assertTrue(fake.wait_for(lambda: fake.tasks[tid].state == "succeeded", 10))
        self.assertEqual(fake.tasks[tid].result, {"greeting": "hello, Ada"})
        self.assertEqual([e["body"] for e in fake.tasks[tid].evidence], [{"name": "Ada"}])
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(10), 0, "SIGTERM did not end the example gracefully")


if __name__ == "__main__":
    unittest.main()
