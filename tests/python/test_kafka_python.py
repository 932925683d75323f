"""kafka-python 3.0.12 (pure Python) against the real skiff binary, with api_version
auto-detection (no api_version passed): produce/consume, compression codecs, admin.

Most producers here set enable_idempotence=False (they predate idempotence in skiff);
test_default_idempotent_producer uses kafka-python's default, idempotent producer
(InitProducerId, sequence numbers). Consumers use assign() without a group_id.
"""

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

TIMEOUT_S = 30


def producer(broker, **conf):
    conf = {"linger_ms": 5, "request_timeout_ms": 15000, **conf}
    return KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        enable_idempotence=False,  # predates idempotence in skiff; see the test below
        **conf,
    )


def consume(broker, topic, partition, n):
    c = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    try:
        tp = TopicPartition(topic, partition)
        c.assign([tp])
        c.seek_to_beginning(tp)
        out = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(out) < n:
            assert time.monotonic() < deadline, f"read {len(out)} of {n} records in {TIMEOUT_S}s"
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out
    finally:
        c.close()


def test_api_version_autodetect(broker):
    p = producer(broker)
    try:
        detected = p.config["api_version"]
        # KIP-896: Kafka 4 brokers require clients of 2.1+; skiff advertises 4.x ranges.
        assert detected is not None and tuple(detected) >= (2, 1), detected
    finally:
        p.close()


def test_produce_consume(broker, topic):
    p = producer(broker, acks="all")
    futs = [
        p.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0,
               headers=[("i", str(i).encode())])
        for i in range(500)
    ]
    p.flush(timeout=TIMEOUT_S)
    offsets = [f.get(timeout=TIMEOUT_S).offset for f in futs]
    p.close()
    assert offsets == list(range(500))  # auto-created on first produce
    msgs = consume(broker, topic, 0, 500)
    assert [m.offset for m in msgs] == list(range(500))
    assert [m.key for m in msgs] == [f"k{i}".encode() for i in range(500)]
    assert [m.value for m in msgs] == [f"v{i}".encode() for i in range(500)]
    assert msgs[7].headers == [("i", b"7")]


def test_default_idempotent_producer(broker, topic):
    # No enable_idempotence argument: kafka-python 3 turns idempotence on by default.
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5, request_timeout_ms=15000)
    try:
        assert p.config["enable_idempotence"]
        futs = [p.send(topic, key=b"k", value=f"i{i}".encode(), partition=0) for i in range(1000)]
        p.flush(timeout=TIMEOUT_S)
        assert [f.get(timeout=TIMEOUT_S).offset for f in futs] == list(range(1000))
    finally:
        p.close()
    msgs = consume(broker, topic, 0, 1000)
    assert [m.value for m in msgs] == [f"i{i}".encode() for i in range(1000)]
    assert all(m.offset == i for i, m in enumerate(msgs))


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression(broker, topic, codec):
    p = producer(broker, compression_type=codec, linger_ms=20)
    values = [f"{codec} {i} ".encode() * 20 for i in range(200)]
    futs = [p.send(topic, value=v, partition=0) for v in values]
    p.flush(timeout=TIMEOUT_S)
    assert [f.get(timeout=TIMEOUT_S).offset for f in futs] == list(range(200))
    p.close()
    assert [m.value for m in consume(broker, topic, 0, 200)] == values


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_acks(broker, topic, acks):
    p = producer(broker, acks=acks)
    futs = [p.send(topic, value=f"a{i}".encode(), partition=0) for i in range(100)]
    p.flush(timeout=TIMEOUT_S)
    for f in futs:
        f.get(timeout=TIMEOUT_S)
    p.close()
    msgs = consume(broker, topic, 0, 100)
    assert [m.value for m in msgs] == [f"a{i}".encode() for i in range(100)]


def test_admin(broker, topic):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15000)
    try:
        a.create_topics(
            [NewTopic(topic, num_partitions=2, replication_factor=1,
                      topic_configs={"retention.ms": "7200000"})]
        )
        assert topic in a.list_topics()
        desc = [t for t in a.describe_topics([topic]) if t["name"] == topic]
        assert len(desc) == 1, desc
        assert desc[0]["error_code"] == 0, desc
        assert sorted(p["partition_index"] for p in desc[0]["partitions"]) == [0, 1]

        res = ConfigResource(ConfigResourceType.TOPIC, topic)
        cfg = a.describe_configs([res], config_filter="all")["topic"][topic]
        assert cfg["retention.ms"]["value"] == "7200000"
        assert cfg["retention.bytes"]["value"] == "-1"

        cluster = a.describe_cluster()
        assert [b["broker_id"] for b in cluster["brokers"]] == [1], cluster
        assert cluster["cluster_id"], cluster

        a.delete_topics([topic])
        deadline = time.monotonic() + TIMEOUT_S
        while topic in a.list_topics():
            assert time.monotonic() < deadline, "topic still listed after delete"
            time.sleep(0.1)
    finally:
        a.close()


def test_interop_kafka_python_to_confluent(broker, topic):
    from test_confluent import consume as confluent_consume

    p = producer(broker, compression_type="lz4")
    futs = [p.send(topic, key=b"x", value=f"interop {i}".encode(), partition=0) for i in range(50)]
    p.flush(timeout=TIMEOUT_S)
    for f in futs:
        f.get(timeout=TIMEOUT_S)
    p.close()
    msgs = confluent_consume(broker, topic, 0, 0, 50)
    assert [m.value() for m in msgs] == [f"interop {i}".encode() for i in range(50)]
