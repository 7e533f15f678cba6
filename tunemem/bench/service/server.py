"""The server side of `tunemem bench service`: `tunemem serve` as its own process on a
case's store, configured through TUNEMEM_* only, and its memory read from /proc."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tunemem.bench.common import paths

REPO_ROOT = paths.REPO_ROOT


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _environment(settings: dict[str, Any]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNEMEM_")}
    env.update({f"TUNEMEM_{k.upper()}": str(v) for k, v in settings.items() if v is not None})
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    return env


class ServerProcess:
    """`python -m tunemem serve` on the case's store, in its own process."""

    def __init__(self, settings: dict[str, Any], workers: int, log: Path):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "tunemem", "serve"]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--workers", str(workers)]
        self._log = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            command,
            env=_environment(settings),
            cwd=REPO_ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready(log)

    def _wait_ready(self, log: Path, timeout: float = 180.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {log.read_text()[-1500:]}")
            try:
                if httpx.get(f"{self.url}/metrics", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the server did not answer within {timeout:.0f} s")

    def memory_mb(self) -> dict[str, float]:
        """Peak and current RSS (MB) of the server process and of its workers, summed."""
        pids = [self.process.pid, *_children(self.process.pid)]
        peak = now = 0.0
        largest = 0.0
        for pid in pids:
            status = _proc_status(pid)
            peak += status.get("VmHWM", 0.0)
            now += status.get("VmRSS", 0.0)
            largest = max(largest, status.get("VmHWM", 0.0))
        return {
            "processes": len(pids),
            "peak_rss_mb": round(peak, 1),
            "largest_process_peak_rss_mb": round(largest, 1),
            "rss_mb": round(now, 1),
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(p) for p in task.read_text().split()]
    return found + [grand for child in found for grand in _children(child)]


def _proc_status(pid: int) -> dict[str, float]:
    values: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                values[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return values
