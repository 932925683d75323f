"""ListOffsets through the Python clients: earliest/latest watermarks and offsets for a
timestamp (the first record at or after it; none after the last), confluent-kafka and
kafka-python against the same records with explicit, increasing timestamps."""

import time

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from test_confluent import create_topic

TIMEOUT_S = 30
COUNT = 10
STEP_MS = 1000


def produce_timed(broker, topic):
    """COUNT records at base, base+1 s, ...; returns base (ms)."""
    base = int(time.time() * 1000) - 60_000
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(COUNT):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0, timestamp=base + i * STEP_MS)
    assert p.flush(TIMEOUT_S) == 0
    return base


def test_confluent_offsets_for_times_and_watermarks(broker, topic):
    create_topic(broker, topic)
    base = produce_timed(broker, topic)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "py-offsets", "enable.auto.commit": False})
    try:
        assert c.get_watermark_offsets(CkTopicPartition(topic, 0), timeout=TIMEOUT_S) == (0, COUNT)
        queries = [
            (base - 5_000, 0),  # before the first record: the first one
            (base, 0),  # exactly the first timestamp
            (base + 2 * STEP_MS + 500, 3),  # between records 2 and 3: the next one
            (base + (COUNT - 1) * STEP_MS, COUNT - 1),  # the last record
            (base + COUNT * STEP_MS, -1),  # after the last: none (OFFSET_END)
        ]
        for ts, want in queries:
            got = c.offsets_for_times([CkTopicPartition(topic, 0, ts)], timeout=TIMEOUT_S)
            assert got[0].error is None, got[0].error
            assert got[0].offset == want, f"timestamp {ts - base:+} ms: offset {got[0].offset}, want {want}"
    finally:
        c.close()


def test_kafka_python_offsets_for_times_and_watermarks(broker, topic):
    create_topic(broker, topic)
    base = produce_timed(broker, topic)
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tp = KpTopicPartition(topic, 0)
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: COUNT}
        got = c.offsets_for_times({tp: base + 2 * STEP_MS + 500})
        assert got[tp] is not None
        assert (got[tp].offset, got[tp].timestamp) == (3, base + 3 * STEP_MS)
        assert c.offsets_for_times({tp: base + COUNT * STEP_MS})[tp] is None
    finally:
        c.close()
