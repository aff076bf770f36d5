"""A real pschedd on a private socket and state dir, for the Python client's tests.

The binary is $PSCHEDD (CTest passes the one just built; the Debian package test passes
the installed one). Reference models come from $PSCHED_SHARED_DIR/models/reference.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time

import psched

SHARED = os.environ.get("PSCHED_SHARED_DIR", "")
REFERENCE = os.path.join(SHARED, "models", "reference")
SOURCE = os.environ.get("PSCHED_SOURCE_DIR", "")


def reference(stem: str, suffix: str) -> str:
    """Path of ../shared/models/reference/<stem><suffix> (".onnx", ".input.npy", ...)."""
    return os.path.join(REFERENCE, stem + suffix)


class Daemon:
    """Starts pschedd with `config` (TOML text) in a fresh directory; stop() ends it."""

    def __init__(self, config: str = "") -> None:
        self.dir = tempfile.mkdtemp(prefix="psched_py_")
        self.socket = os.path.join(self.dir, "run", "pschedd.sock")
        self.state = os.path.join(self.dir, "state")
        self.config = os.path.join(self.dir, "pschedd.toml")
        with open(self.config, "w") as f:
            f.write(config)
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        binary = os.environ["PSCHEDD"]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("NOTIFY_SOCKET", "LISTEN_", "WATCHDOG_"))}
        with open(os.path.join(self.dir, "pschedd.log"), "ab") as log:
            self.process = subprocess.Popen(
                # A background calibration would change plans under the tests' feet.
                [binary, "--config", self.config, "--socket", self.socket,
                 "--state-dir", self.state, "--log-level", "debug", "--no-auto-calibrate"],
                stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"pschedd exited with {self.process.returncode}:\n{self.log()}")
            # A fresh channel per try: a failed channel waits out gRPC's reconnect backoff.
            with psched.Client(self.socket, timeout=2) as client:
                try:
                    client.status()
                    return
                except psched.UnavailableError:
                    time.sleep(0.05)
        raise RuntimeError(f"pschedd did not answer on {self.socket}:\n{self.log()}")

    def stop(self) -> int:
        """SIGTERM and wait; the exit status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=60)
        self.process = None
        return code

    def client(self, **kwargs: float) -> psched.Client:
        return psched.Client(self.socket, **kwargs)

    def log(self) -> str:
        with open(os.path.join(self.dir, "pschedd.log"), errors="replace") as f:
            return f.read()

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
