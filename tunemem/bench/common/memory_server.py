"""A benchmark's memory: a MemoryService in a temporary directory behind a real HTTP server
on a free port, which the agent reaches over HTTP like any other client."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any


class LiveService:
    """A MemoryService in a temporary directory behind a real HTTP server on a free port."""

    def __init__(self, settings_overrides: dict[str, Any], embedder: Any = None) -> None:
        import uvicorn

        from tunemem.memory_service.core.settings import Settings
        from tunemem.memory_service.http.app import create_app
        from tunemem.memory_service.service import MemoryService

        self._dir = tempfile.TemporaryDirectory(prefix="tunemem-bench-")
        self.service = MemoryService(
            Settings(data_dir=Path(self._dir.name), **settings_overrides), embedder=embedder
        )
        config = uvicorn.Config(create_app(self.service), port=0, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the benchmark's memory server did not start")
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self.service.close()
        self._dir.cleanup()
