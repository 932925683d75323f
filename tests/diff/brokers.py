"""Start Skiff and the reference Apache Kafka (tests/kafka) side by side for the differential
suite, on free loopback ports with temp data dirs, with the same relevant settings.

Skiff's binary: $E2E_SKIFF_BIN, else ${CARGO_TARGET_DIR:-<repo>/target}/debug/skiff.
Kafka: tests/kafka/start.sh PORT DIR k=v..., stopped with tests/kafka/stop.sh DIR.
"""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Settings both brokers get. Kafka's start.sh already sets num.partitions=1,
# offsets.topic.replication.factor=1 and group.initial.rebalance.delay.ms=0; they are repeated
# here so the two sides are configured from one list.
COMMON = {
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
    "log.cleaner.backoff.ms": "100",
    "offsets.topic.num.partitions": "50",
    # What tests/kafka/start.sh writes for a one-node cluster; Skiff gets them too so both
    # report them as STATIC_BROKER_CONFIG.
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}


def skiff_bin() -> Path:
    if os.environ.get("E2E_SKIFF_BIN"):
        return Path(os.environ["E2E_SKIFF_BIN"])
    target = os.environ.get("CARGO_TARGET_DIR") or str(REPO / "target")
    return Path(target) / "debug" / "skiff"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, n=60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError as e:
        return f"<cannot read {path}: {e}>"


def sasl_settings(port: int, sasl_port: int, extra: dict) -> dict:
    """Listeners and settings for a broker that also has a SASL_PLAINTEXT listener on
    `sasl_port` (the PLAINTEXT one stays on `port`), with `extra` on top."""
    both = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    out = {"listeners": both, "advertised.listeners": both}
    out.update(extra)
    return out


class Skiff:
    name = "skiff"

    def __init__(self, root: Path, extra=None, sasl=False):
        """`extra`: settings on top of COMMON; `sasl`: also a SASL_PLAINTEXT listener on
        `self.sasl_port` (its mechanisms and users come with `extra`)."""
        self.root = root
        self.port = free_port()
        self.sasl_port = free_port() if sasl else None
        self.data = root / "data"
        self.log = root / "broker.log"
        self.proc = None
        self.extra = dict(extra or {})
        if sasl:
            self.extra = sasl_settings(self.port, self.sasl_port, self.extra)

    @property
    def sasl_bootstrap(self):
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def start(self, timeout=15.0):
        binary = skiff_bin()
        if not binary.is_file():
            raise RuntimeError(f"skiff binary not found at {binary} (cargo build -p skiff or set E2E_SKIFF_BIN)")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKIFF_")}
        env.update(RUST_LOG=env.get("RUST_LOG", "info"), NO_COLOR="1")
        args = [str(binary), "--set", f"listeners=PLAINTEXT://{self.bootstrap}",
                "--set", f"advertised.listeners=PLAINTEXT://{self.bootstrap}",
                "--set", f"log.dirs={self.data}", "--set", "node.id=1"]
        for k, v in {**COMMON, **self.extra}.items():
            args += ["--set", f"{k}={v}"]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"skiff exited during start:\n{tail(self.log)}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"skiff not listening within {timeout}s:\n{tail(self.log)}")
                time.sleep(0.05)

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def log_tail(self):
        return tail(self.log)


class Kafka:
    name = "kafka"

    def __init__(self, root: Path, extra=None, sasl=False):
        """As Skiff's: `extra` settings and an optional SASL_PLAINTEXT listener (start.sh adds it
        beside its PLAINTEXT one, from KAFKA_EXTRA_LISTENERS)."""
        self.root = root
        self.port = free_port()
        self.sasl_port = free_port() if sasl else None
        self.dir = root / "kafka"
        self.data = self.dir / "logs"
        self.extra = dict(extra or {})

    @property
    def sasl_bootstrap(self):
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        args = ["bash", str(REPO / "tests/kafka/start.sh"), str(self.port), str(self.dir)]
        args += [f"{k}={v}" for k, v in {**COMMON, **self.extra}.items()]
        env = dict(os.environ)
        if self.sasl_port:
            env["KAFKA_EXTRA_LISTENERS"] = f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
        r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, env=env)
        if r.returncode != 0:
            self.stop()
            raise RuntimeError(f"reference Kafka did not start (exit {r.returncode}):\n{r.stderr[-4000:]}")

    def stop(self):
        subprocess.run(["bash", str(REPO / "tests/kafka/stop.sh"), str(self.dir)],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)

    def log_tail(self):
        return tail(self.dir / "kafka.out")


def warm_up(bootstrap, timeout=60.0):
    """Wait until the group coordinator answers (Kafka and Skiff both create __consumer_offsets
    on the first FindCoordinator), so group cases see a loaded coordinator on both sides and
    no test can create __consumer_offsets as an ordinary topic."""
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

    from raw import RawClient

    deadline = time.monotonic() + timeout
    with RawClient(bootstrap) as c:
        while True:
            r = c.send(FindCoordinatorRequest, 4, key_type=0, coordinator_keys=["skiff-diff-warm-up"])
            if r.coordinators[0].error_code == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{bootstrap}: no group coordinator within {timeout}s "
                                   f"(error {r.coordinators[0].error_code})")
            time.sleep(0.2)
