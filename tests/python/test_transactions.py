"""Transactions with kafka-python 3.0.12 and confluent-kafka 2.16.1 against the real skiff
binary: aborted data invisible to read_committed consumers and visible to read_uncommitted
ones, committed data visible, and consume-transform-produce with the consumer offsets in the
transaction (committed only with it)."""

import time

from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import Producer as CkProducer
from confluent_kafka import TopicPartition as CkTp
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

TIMEOUT_S = 30


def create(broker, *topics):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        a.create_topics([NewTopic(t, 1, 1) for t in topics])
    finally:
        a.close()


def read(broker, topic, isolation, want):
    """Values of partition 0 from the start: at least `want`, then whatever else arrives
    within a second (which a visibility bug would show)."""
    c = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        isolation_level=isolation,
    )
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        out = []
        deadline = time.monotonic() + TIMEOUT_S
        quiet_until = None
        while time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=200).values():
                out.extend(r.value.decode() for r in recs)
            if len(out) >= want:
                quiet_until = quiet_until or time.monotonic() + 1.0
                if time.monotonic() >= quiet_until:
                    break
        return out
    finally:
        c.close()


def test_kafka_python_abort_then_commit(broker, topic):
    create(broker, topic)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="py-tx-1")
    p.init_transactions()
    p.begin_transaction()
    for i in range(5):
        p.send(topic, value=f"aborted-{i}".encode(), partition=0)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    for i in range(3):
        p.send(topic, value=f"committed-{i}".encode(), partition=0)
    p.commit_transaction()
    p.close()
    committed = [f"committed-{i}" for i in range(3)]
    assert read(broker, topic, "read_committed", 3) == committed
    assert read(broker, topic, "read_uncommitted", 8) == [
        f"aborted-{i}" for i in range(5)
    ] + committed


def test_kafka_python_consume_transform_produce(broker, topic):
    src, dst, group = topic + "-in", topic + "-out", topic + "-g"
    create(broker, src, dst)
    plain = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
    for i in range(6):
        plain.send(src, value=f"in-{i}".encode(), partition=0)
    plain.flush()
    plain.close()
    c = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    tp = TopicPartition(src, 0)
    c.assign([tp])
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < 6 and time.monotonic() < deadline:
        for recs in c.poll(timeout_ms=200).values():
            got.extend(recs)
    assert len(got) == 6
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="py-ctp")
    p.init_transactions()
    p.begin_transaction()
    for r in got:
        p.send(dst, value=b"out-" + r.value, partition=0)
    p.send_offsets_to_transaction({tp: OffsetAndMetadata(6, "", -1)}, group)
    p.commit_transaction()
    p.begin_transaction()
    p.send(dst, value=b"never", partition=0)
    p.send_offsets_to_transaction({tp: OffsetAndMetadata(99, "", -1)}, group)
    p.abort_transaction()
    p.close()
    assert read(broker, dst, "read_committed", 6) == [f"out-in-{i}" for i in range(6)]
    assert c.committed(tp) == 6
    c.close()


def test_confluent_kafka_commit_and_abort(broker, topic):
    create(broker, topic)
    p = CkProducer({"bootstrap.servers": broker.bootstrap, "transactional.id": "ck-tx"})
    p.init_transactions(TIMEOUT_S)
    p.begin_transaction()
    p.produce(topic, value=b"gone", partition=0)
    p.abort_transaction(TIMEOUT_S)
    p.begin_transaction()
    p.produce(topic, value=b"kept", partition=0)
    p.commit_transaction(TIMEOUT_S)
    c = CkConsumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": topic + "-ck",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    c.assign([CkTp(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline and not got:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m.value())
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert got == [b"kept"]
