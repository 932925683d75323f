"""Log compaction seen through confluent-kafka (librdkafka 2.16): a consumer reading a
compacted topic from offset 0 gets every key's latest value at its original offset,
tombstones leave after delete.retention.ms and a second cleaning pass, and a keyless record
is refused with INVALID_RECORD. A subset of docs/compaction.md §6 (scenarios 1, 10, 21-22); the
full set is tests/rdkafka/tests/compaction.rs.

The broker runs the §6 test profile (fast cleaner back-off); Skiff rolls idle segments on the
wall clock (segment.ms=100), and roll() also appends a "~roll" record as Kafka's helper does.
Every wait polls with a deadline.
"""

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BROKER_SETTINGS = {
    "log.cleaner.backoff.ms": "100",
    "log.retention.check.interval.ms": "500",
    "log.cleaner.threads": "2",
    "log.cleaner.enable": "true",
}

DEFAULT_TOPIC = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
    "file.delete.delay.ms": "0",
    "segment.bytes": "1048576",
}

TIMEOUT_S = 15
ROLL_KEY = b"~roll"


def create_topic(broker, name, **overrides):
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    cfg = {**DEFAULT_TOPIC, **overrides}
    fs = a.create_topics([NewTopic(name, num_partitions=1, replication_factor=1, config=cfg)])
    fs[name].result(timeout=TIMEOUT_S)


def produce(broker, topic, records):
    """records: list of (key, value). Returns [(offset or None, error or None)]."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0})
    out = [None] * len(records)

    def report(i):
        def cb(err, msg):
            out[i] = (None if err else msg.offset(), err)
        return cb

    for i, (k, v) in enumerate(records):
        p.produce(topic, key=k, value=v, partition=0, on_delivery=report(i))
        p.flush(TIMEOUT_S)  # one record per request keeps the order and the batches simple
    assert all(r is not None for r in out), f"missing delivery reports: {out}"
    return out


def put(broker, topic, records):
    res = produce(broker, topic, records)
    errs = [e for _, e in res if e is not None]
    assert not errs, f"delivery errors: {errs}"
    return [o for o, _ in res]


def roll(broker, topic):
    time.sleep(0.15)  # segment.ms + 50 ms
    return put(broker, topic, [(ROLL_KEY, b"r")])[0]


def read_all(broker, topic):
    """Every record from offset 0 up to the high watermark: [(offset, key, value)]."""
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "py-compaction",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT_S)
        out = []
        if high <= low:
            return out
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            assert time.monotonic() < deadline, f"did not reach HW {high}: {out}"
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                raise KafkaException(m.error())
            out.append((m.offset(), m.key(), m.value()))
            if m.offset() >= high - 1:
                return out
    finally:
        c.close()


def await_records(broker, topic, pred, what, timeout=TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while True:
        recs = read_all(broker, topic)
        if pred(recs):
            return recs
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}; last read {recs}"
        time.sleep(0.1)


def of_key(recs, key):
    return [r for r in recs if r[1] == key]


def test_keyless_record_rejected(broker, topic):
    """§6.1: a keyless record on a compact topic fails with INVALID_RECORD; nothing appended."""
    create_topic(broker, topic)
    [(offset, err)] = produce(broker, topic, [(None, b"v")])
    assert offset is None
    assert err is not None and err.code() == KafkaError.INVALID_RECORD, err
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "py-compaction"})
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT_S) == (0, 0)
    finally:
        c.close()
    # A keyed record still goes in at offset 0.
    assert put(broker, topic, [(b"k", b"v")]) == [0]


def test_latest_value_per_key_after_cleaning(broker, topic):
    """§6.10: ten keys written ten times each; after cleaning one record per key, the last
    value, at its original offset, in offset order."""
    create_topic(broker, topic)
    records = [(f"k{i}".encode(), f"{i}:{j}".encode()) for j in range(10) for i in range(10)]
    offsets = put(broker, topic, records)
    assert offsets == list(range(100))
    assert roll(broker, topic) == 100
    recs = await_records(broker, topic, lambda r: len(r) == 11, "one record per key")
    assert recs == [(90 + i, f"k{i}".encode(), f"{i}:9".encode()) for i in range(10)] + [
        (100, ROLL_KEY, b"r")
    ]
    # The log end did not move: the next record gets offset 101.
    assert put(broker, topic, [(b"fresh", b"1")]) == [101]


def test_tombstone_kept_then_removed(broker, topic):
    """§6.21-22: the first pass keeps the tombstone (value None) at its offset and drops the
    older value; after delete.retention.ms (1 s) a later pass removes it."""
    create_topic(broker, topic)
    assert put(broker, topic, [(b"k", b"v1"), (b"k", None)]) == [0, 1]
    roll(broker, topic)
    recs = await_records(broker, topic, lambda r: len(of_key(r, b"k")) == 1, "v1 gone")
    assert of_key(recs, b"k") == [(1, b"k", None)], recs
    time.sleep(1.5)
    put(broker, topic, [(b"o1", b"1"), (b"o2", b"1")])
    roll(broker, topic)
    recs = await_records(broker, topic, lambda r: not of_key(r, b"k"), "tombstone gone")
    assert of_key(recs, b"o1") and of_key(recs, b"o2"), recs
