"""Fixtures for the Python end-to-end suite: start the real `skiff` binary on a free loopback
port with a temporary data directory, like the Rust harness in tests/rdkafka.

The binary comes from E2E_SKIFF_BIN, else $CARGO_TARGET_DIR/debug/skiff, else
<repo>/target/debug/skiff (build it first: `cargo build -p skiff`). SKIFF_* environment
variables are broker config overrides, so none are passed on to the broker.
"""

import itertools
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 10.0


def skiff_bin() -> Path:
    if os.environ.get("E2E_SKIFF_BIN"):
        return Path(os.environ["E2E_SKIFF_BIN"])
    if os.environ.get("CARGO_TARGET_DIR"):
        return Path(os.environ["CARGO_TARGET_DIR"]) / "debug" / "skiff"
    return REPO / "target" / "debug" / "skiff"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """One skiff process; `stop()` sends SIGTERM, `kill9()` SIGKILL, `restart()` reuses
    the same port and data dir."""

    def __init__(self, root: Path, extra=None):
        self.root = root
        self.data_dir = root / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = root / "broker.log"
        self.port = free_port()
        self.extra = dict(extra or {})
        self.proc = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log_tail(self, n=60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError as e:
            return f"<cannot read broker log: {e}>"

    def start(self):
        binary = skiff_bin()
        if not binary.is_file():
            raise RuntimeError(
                f"skiff binary not found at {binary} "
                "(build it with `cargo build -p skiff` or set E2E_SKIFF_BIN)"
            )
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKIFF_")}
        env.setdefault("RUST_LOG", "info")
        env["NO_COLOR"] = "1"
        args = [
            str(binary),
            "--set", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "--set", f"log.dirs={self.data_dir}",
            "--set", "node.id=1",
        ]
        for k, v in self.extra.items():
            args += ["--set", f"{k}={v}"]
        log = open(self.log_path, "ab")
        log.write(f"===== pytest harness: starting {binary} =====\n".encode())
        log.flush()
        self.proc = subprocess.Popen(
            args, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                raise RuntimeError(
                    f"broker exited during start (code {code}); its output:\n{self.log_tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.kill9()
                raise RuntimeError(
                    f"broker did not accept TCP on {self.bootstrap} within "
                    f"{START_TIMEOUT_S}s; its output:\n{self.log_tail()}"
                )
            time.sleep(0.025)

    def stop(self, timeout=10.0) -> int:
        if self.proc is None:
            raise RuntimeError("broker is not running")
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"broker ignored SIGTERM for {timeout}s:\n{self.log_tail()}")
        finally:
            self.proc = None
        return code

    def kill9(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self):
        if self.proc is not None:
            self.stop()
        self.start()


@pytest.fixture(scope="module")
def broker(request):
    """A broker shared by the tests of one module; each test uses its own topics. A module
    may define `BROKER_SETTINGS = {"key": "value"}`: extra `--set` broker properties."""
    extra = getattr(request.module, "BROKER_SETTINGS", None)
    with tempfile.TemporaryDirectory(prefix="skiff-pytest-") as d:
        b = Broker(Path(d), extra)
        b.start()
        try:
            yield b
        finally:
            b.kill9()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, append the broker's last log lines to the report."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and "broker" in item.fixturenames:
        b = item.funcargs.get("broker")
        if b is not None:
            rep.sections.append(("skiff broker log (tail)", b.log_tail(80)))


_counter = itertools.count()


@pytest.fixture
def topic(request):
    """A topic name unique to this test run."""
    name = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")
    return f"py-{name}-{os.getpid()}-{next(_counter)}"
