"""Start a real ``agent-gym serve-env`` process on loopback for a test (import as ``serve_env``).

``serve_env("AgentR1/HotpotQA-v0")`` is a context manager that yields the server's URL: the
process binds port 0 (a free port) and prints the URL it got, which is read here. The process
is stopped (SIGTERM, then SIGKILL) when the block ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
AGENT_GYM = [sys.executable, "-c", "import sys; from agent_gym.cli import main; sys.exit(main())"]
#: ``keypad_env:AlgosTest/Keypad-v0`` is importable in the server with this on PYTHONPATH.
KEYPAD_PATH = str(TESTS / "algos" / "learner")
KEYPAD_ID = "keypad_env:AlgosTest/Keypad-v0"


@contextlib.contextmanager
def serve_env(
    env_id: str, *args: str, pythonpath: str | None = None, timeout: float = 120.0
) -> Iterator[str]:
    """Run ``agent-gym serve-env ENV_ID --port 0 ARGS...``; yield ``http://127.0.0.1:PORT``."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [*AGENT_GYM, "serve-env", env_id, "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:  # drains the pipe for the whole run, so the server never blocks on it
        for line in proc.stdout:
            lines.append(line)
            if "serving" in line:
                found.set()
        found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        found.wait(timeout)
        match = next(
            (re.search(r"http://\S+:\d+", line) for line in lines if "serving" in line), None
        )
        if match is None:
            raise RuntimeError(f"serve-env {env_id} did not start:\n{''.join(lines)}")
        yield match.group(0)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(timeout=5)
