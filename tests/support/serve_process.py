"""``powercontext serve`` as a child process for the live HTTP tests: started on port
0, ready once it prints ``serving http://HOST:PORT (role ROLE)``, stopped by SIGTERM
to its own process id (never by name)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from support.cli import cli_argv

#: How long start-up and shutdown may take on a loaded 2-core machine (a wait bound,
#: not an assertion on speed).
STARTUP_WAIT = 120.0


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment without any POWERCONTEXT_* / provider key of the caller, with
    ``POWERCONTEXT_HOME`` = ``home`` and ``extra`` added."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("POWERCONTEXT_") and k not in ("OPENAI_API_KEY",
                                                             "ANTHROPIC_API_KEY")}
    env["POWERCONTEXT_HOME"] = str(home)
    env.update(extra)
    return env


class ServeProcess:
    """A running ``powercontext --db DB serve ARGS`` (``--port 0`` unless given).
    ``url`` is the printed base URL; stderr goes to ``stderr_path``."""

    def __init__(self, db: str | Path, args: list[str], env: dict[str, str],
                 stderr_path: Path) -> None:
        argv = [*cli_argv(), "--db", str(db), "serve", *args]
        if "--port" not in args:
            argv += ["--port", "0"]
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env=env, text=True)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.stdout: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        self.url = self._wait_ready()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _wait_ready(self) -> str:
        while True:
            try:
                line = self._lines.get(timeout=STARTUP_WAIT)
            except queue.Empty:
                self.stop()
                raise RuntimeError(f"serve printed nothing: {self.stderr()}") from None
            if line is None:
                err = self.stderr()
                rc = self.stop()  # exited already: this closes its pipe and the log file
                raise RuntimeError(f"serve exited {rc} before serving: {err}")
            self.stdout.append(line)
            if line.startswith("serving http://"):
                return line.split()[1]

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text("utf-8", "replace")

    def call(self, path: str, body: Any = None, *, token: str | None = None,
             raw: bytes | None = None, method: str | None = None) -> tuple[int, Any]:
        """``(status, JSON body)`` of one request (POST with a JSON body, else GET)."""
        data = raw if raw is not None else (None if body is None else
                                            json.dumps(body).encode("utf-8"))
        req = urllib.request.Request(self.url + path, data=data,
                                     method=method or ("POST" if data is not None else "GET"))
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=STARTUP_WAIT) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send ``sig`` to this process only and wait for it; its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=STARTUP_WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
