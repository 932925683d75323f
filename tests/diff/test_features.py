"""Features: what `kafka-features describe` (Kafka's own FeatureCommand, which reads the
supported and finalized features from ApiVersions) prints for each broker, compared feature by
feature. Skiff lists only the features it serves; the ones it leaves out, and the levels where
it serves less than Kafka 4.4, are in KNOWN_DIFFERENCES.md with their reason."""

import re
import subprocess

from brokers import REPO
from diffutil import Collector

LINE = re.compile(r"^Feature: (\S+)\s+(.*)$")
FIELD = re.compile(r"(\w+): (\S+)")


def describe(bootstrap):
    """{feature: {SupportedMinVersion, SupportedMaxVersion, FinalizedVersionLevel, Epoch}}."""
    r = subprocess.run(
        ["bash", str(REPO / "tests/kafka/tool.sh"), "org.apache.kafka.tools.FeatureCommand",
         "--bootstrap-server", bootstrap, "describe"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"kafka-features describe against {bootstrap} failed:\n{r.stderr[-2000:]}"
    out = {}
    for line in r.stdout.splitlines():
        m = LINE.match(line.strip())
        if m:
            out[m.group(1)] = dict(FIELD.findall(m.group(2)))
    assert out, f"no feature lines from {bootstrap}:\n{r.stdout}"
    return out


def test_kafka_features_describe(brokers):
    kafka = describe(brokers["kafka"].bootstrap)
    skiff = describe(brokers["skiff"].bootstrap)
    # The epoch is Kafka's metadata log offset where the levels were last changed; Skiff has
    # no metadata log and reports a fixed epoch. Compared: that each side reports one.
    for side in (kafka, skiff):
        for f in side.values():
            assert int(f.pop("Epoch")) >= 0
    c = Collector()
    c.check("features", "kafka-features describe", kafka, skiff)
    c.done()
