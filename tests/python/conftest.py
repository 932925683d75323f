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

    def command(self, binary: Path) -> list:
        """The broker's command line (a subclass may start it from a config file instead)."""
        args = [
            str(binary),
            "--set", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "--set", f"log.dirs={self.data_dir}",
            "--set", "node.id=1",
        ]
        for k, v in self.extra.items():
            args += ["--set", f"{k}={v}"]
        return args

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
        args = self.command(binary)
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


# ---------- client-matrix results (issue 6) ----------
# When MATRIX_RESULTS names a file, one TSV line per (client, scenario) this run touched is
# appended at the end of the session: `<client>\t<scenario>\t<PASS|FAIL|SKIP>\t<note>`.
# A scenario is PASS only when every test mapped to it passed; tests not in the map are not
# reported. Keys are (module file, test function name without parameters).
MATRIX_MAP = {
    ("test_confluent.py", "test_produce_consume_keys_headers"): [("confluent-kafka", "produce_consume")],
    ("test_confluent.py", "test_acks"): [("confluent-kafka", "produce_consume")],
    ("test_confluent.py", "test_compression"): [("confluent-kafka", "compression")],
    ("test_confluent.py", "test_admin_create_describe_topics"): [("confluent-kafka", "admin")],
    ("test_confluent.py", "test_describe_cluster"): [("confluent-kafka", "admin")],
    ("test_confluent.py", "test_auto_create_on_produce"): [("confluent-kafka", "special")],
    ("test_kafka_python.py", "test_produce_consume"): [("kafka-python", "produce_consume")],
    ("test_kafka_python.py", "test_acks"): [("kafka-python", "produce_consume")],
    ("test_kafka_python.py", "test_interop_kafka_python_to_confluent"): [("kafka-python", "produce_consume")],
    ("test_kafka_python.py", "test_compression"): [("kafka-python", "compression")],
    ("test_kafka_python.py", "test_admin"): [("kafka-python", "admin")],
    ("test_kafka_python.py", "test_api_version_autodetect"): [("kafka-python", "special")],
    ("test_kafka_python.py", "test_default_idempotent_producer"): [("kafka-python", "special")],
    ("test_groups.py", "test_kafka_python_group_shares_partitions_and_rebalances"): [("kafka-python", "groups")],
    ("test_groups.py", "test_kafka_python_admin_group_apis"): [("kafka-python", "groups")],
    ("test_groups.py", "test_confluent_group_resumes_after_restart"): [("confluent-kafka", "groups")],
    ("test_groups.py", "test_confluent_cooperative_sticky_pair"): [("confluent-kafka", "groups")],
    ("test_groups.py", "test_confluent_admin_lists_describes_and_deletes_groups"): [("confluent-kafka", "groups")],
    ("test_compaction.py", "test_keyless_record_rejected"): [("confluent-kafka", "compaction")],
    ("test_compaction.py", "test_latest_value_per_key_after_cleaning"): [("confluent-kafka", "compaction")],
    ("test_compaction.py", "test_tombstone_kept_then_removed"): [("confluent-kafka", "compaction")],
    ("test_transactions.py", "test_kafka_python_abort_then_commit"): [("kafka-python", "transactions")],
    ("test_transactions.py", "test_kafka_python_consume_transform_produce"): [("kafka-python", "transactions")],
    ("test_transactions.py", "test_confluent_kafka_commit_and_abort"): [("confluent-kafka", "transactions")],
    ("test_offsets.py", "test_confluent_offsets_for_times_and_watermarks"): [("confluent-kafka", "offsets_for_times")],
    ("test_offsets.py", "test_kafka_python_offsets_for_times_and_watermarks"): [("kafka-python", "offsets_for_times")],
}
# What "special" means for each client here (the TSV note).
MATRIX_SPECIAL = {
    "confluent-kafka": "auto topic creation on produce",
    "kafka-python": "ApiVersions auto-detection; idempotent producer by default",
}
_matrix_outcomes = {}  # nodeid -> (passed|failed|skipped, short error)


def pytest_runtest_logreport(report):
    """Keep the worst outcome of each test's setup/call/teardown for the matrix lines."""
    if not os.environ.get("MATRIX_RESULTS"):
        return
    prev = _matrix_outcomes.get(report.nodeid, ("passed", ""))
    if report.failed:
        msg = str(report.longrepr.reprcrash.message) if hasattr(report.longrepr, "reprcrash") else str(report.longrepr)
        _matrix_outcomes[report.nodeid] = ("failed", msg.splitlines()[0][:160] if msg else "")
    elif report.skipped and prev[0] == "passed" and report.when in ("setup", "call"):
        _matrix_outcomes[report.nodeid] = ("skipped", "")
    elif report.nodeid not in _matrix_outcomes:
        _matrix_outcomes[report.nodeid] = prev


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("MATRIX_RESULTS")
    if not path or not _matrix_outcomes:
        return
    groups = {}  # (client, scenario) -> [(test id, outcome, error)]
    for nodeid, (outcome, err) in _matrix_outcomes.items():
        file = nodeid.split("::")[0].rsplit("/", 1)[-1]
        func = nodeid.split("::")[-1].split("[")[0]
        for key in MATRIX_MAP.get((file, func), []):
            groups.setdefault(key, []).append((nodeid.split("::")[-1], outcome, err))
    lines = []
    for (client, scenario), results in sorted(groups.items()):
        failed = [r for r in results if r[1] == "failed"]
        passed = [r for r in results if r[1] == "passed"]
        if failed:
            status = "FAIL"
            note = "; ".join(f"{t}: {e}" for t, _, e in failed)
        elif passed:
            status = "PASS"
            if scenario == "compression":
                codecs = sorted({t.split("[", 1)[1].rstrip("]") for t, _, _ in passed if "[" in t})
                note = "codecs: " + " ".join(codecs)
            elif scenario == "special":
                note = MATRIX_SPECIAL.get(client, "")
            else:
                note = ", ".join(sorted({t.split("[")[0] for t, _, _ in passed}))
        else:
            status, note = "SKIP", "all tests skipped"
        note = note.replace("\t", " ").replace("\n", " ")[:300]
        lines.append(f"{client}\t{scenario}\t{status}\t{note}\n")
    with open(path, "a") as f:
        f.writelines(lines)
