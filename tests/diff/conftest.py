"""Differential suite: the same scenario against Skiff and the reference Apache Kafka 4.x,
observable outputs normalised and compared. Both brokers start once per session
(brokers.py); every test uses its own topic/group names, identical on both sides.

Run: tests/python/.venv/bin/python -m pytest tests/diff   (needs java for the reference Kafka;
tests/kafka/install.sh downloads it on first use). Known, intended differences are listed
in KNOWN_DIFFERENCES.md with their reason; every other difference fails the test that found
it and is named in the failure message (request, Kafka's answer, Skiff's answer).
"""

import itertools
import os
import re
import tempfile
from pathlib import Path

import pytest

from brokers import Kafka, Skiff, warm_up

HERE = Path(__file__).resolve().parent


class Attached:
    """A broker someone else runs (DIFF_ATTACH, for developing the suite)."""

    def __init__(self, name, bootstrap, data):
        self.name, self.bootstrap, self.data = name, bootstrap, Path(data)

    def log_tail(self):
        return ""


@pytest.fixture(scope="session")
def brokers():
    """{'kafka': Kafka, 'skiff': Skiff}, both running for the whole session. While developing
    the suite, DIFF_ATTACH='{"kafka": ["h:p", "logdir"], "skiff": ["h:p", "logdir"]}' uses
    two brokers that are already running instead."""
    if os.environ.get("DIFF_ATTACH"):
        import json
        att = json.loads(os.environ["DIFF_ATTACH"])
        yield {k: Attached(k, *v) for k, v in att.items()}
        return
    with tempfile.TemporaryDirectory(prefix="skiff-diff-") as d:
        root = Path(d)
        (root / "skiff").mkdir()
        s = Skiff(root / "skiff")
        k = Kafka(root)
        try:
            s.start()
            k.start()
            for b in (s, k):
                warm_up(b.bootstrap)
            yield {"kafka": k, "skiff": s}
        finally:
            s.stop()
            k.stop()


_counter = itertools.count()


@pytest.fixture
def name(request):
    """A topic/group name unique to this test, the same on both brokers."""
    base = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)
    return f"diff-{base}-{os.getpid()}-{next(_counter)}"


def _known():
    """Patterns from KNOWN_DIFFERENCES.md: lines `- \\`case:path-glob\\` reason`."""
    text = (HERE / "KNOWN_DIFFERENCES.md").read_text()
    return re.findall(r"^- `([^`]+)`", text, flags=re.M)


KNOWN = _known()
