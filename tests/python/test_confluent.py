"""confluent-kafka (librdkafka 2.16) against the real skiff binary: produce/consume with
keys and headers, every compression codec, admin create/describe topics and configs.

Consumers use assign() with explicit offsets: consumer groups are not implemented yet, so
group.id is set (librdkafka requires one) but nothing is committed.
"""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)

TIMEOUT_S = 30


def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create_topic(broker, name, partitions=1, config=None):
    a = admin(broker)  # keep the client alive until the future resolves
    fs = a.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        request_timeout=15,
    )
    fs[name].result(timeout=TIMEOUT_S)


def produce(broker, topic, records, **conf):
    """records: list of (partition, key, value, headers). Returns delivery offsets."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, **conf})
    offsets = [None] * len(records)
    errors = []

    def report(i):
        def cb(err, msg):
            if err is not None:
                errors.append((i, err))
            else:
                offsets[i] = msg.offset()
        return cb

    for i, (part, key, value, headers) in enumerate(records):
        p.produce(topic, value=value, key=key, partition=part, headers=headers, on_delivery=report(i))
        p.poll(0)
    left = p.flush(TIMEOUT_S)
    assert left == 0, f"{left} messages not delivered within {TIMEOUT_S}s"
    assert not errors, f"delivery errors: {errors[:5]}"
    return offsets


def consume(broker, topic, partition, offset, n, **conf):
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "py-assign-only",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
            **conf,
        }
    )
    try:
        c.assign([TopicPartition(topic, partition, offset)])
        out = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(out) < n:
            assert time.monotonic() < deadline, f"read {len(out)} of {n} records in {TIMEOUT_S}s"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                raise KafkaException(m.error())
            out.append(m)
        return out
    finally:
        c.close()


def test_produce_consume_keys_headers(broker, topic):
    create_topic(broker, topic)
    recs = [(0, f"k{i}".encode(), f"v{i}".encode(), [("i", str(i).encode())]) for i in range(500)]
    offsets = produce(broker, topic, recs, acks="all")
    assert offsets == list(range(500))
    msgs = consume(broker, topic, 0, 0, 500)
    for i, m in enumerate(msgs):
        assert m.offset() == i
        assert m.key() == f"k{i}".encode()
        assert m.value() == f"v{i}".encode()
        assert m.headers() == [("i", str(i).encode())]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compression(broker, topic, codec):
    create_topic(broker, topic)
    recs = [(0, b"k", f"{codec} {i} ".encode() * 20, None) for i in range(200)]
    offsets = produce(broker, topic, recs, **{"compression.type": codec, "linger.ms": 20})
    assert offsets == list(range(200))
    msgs = consume(broker, topic, 0, 0, 200)
    assert [m.value() for m in msgs] == [r[2] for r in recs]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(broker, topic, acks):
    create_topic(broker, topic)
    recs = [(0, None, f"a{i}".encode(), None) for i in range(100)]
    produce(broker, topic, recs, acks=acks)
    msgs = consume(broker, topic, 0, 0, 100)
    assert [m.offset() for m in msgs] == list(range(100))
    assert [m.value() for m in msgs] == [r[2] for r in recs]


def test_auto_create_on_produce(broker, topic):
    offsets = produce(broker, topic, [(0, None, b"hello", None)])
    assert offsets == [0]
    md = admin(broker).list_topics(timeout=15)
    assert topic in md.topics
    assert len(md.topics[topic].partitions) == 1


def test_admin_create_describe_topics(broker, topic):
    a = admin(broker)
    create_topic(broker, topic, partitions=3, config={"retention.ms": "7200000"})
    md = a.list_topics(timeout=15)
    assert topic in md.topics, sorted(md.topics)
    t = md.topics[topic]
    assert t.error is None, t.error
    assert sorted(t.partitions) == [0, 1, 2]
    assert list(md.brokers) == [1]
    assert md.brokers[1].port == broker.port

    # DescribeTopics
    desc = a.describe_topics(TopicCollection([topic]), request_timeout=15)[topic].result(TIMEOUT_S)
    assert desc.name == topic
    assert len(desc.partitions) == 3
    tid = desc.topic_id
    assert (tid.get_most_significant_bits(), tid.get_least_significant_bits()) != (0, 0), "topic id must be set"

    # DescribeConfigs: the override and a default
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    cfg = a.describe_configs([res], request_timeout=15)[res].result(TIMEOUT_S)
    assert cfg["retention.ms"].value == "7200000"
    assert ConfigSource(cfg["retention.ms"].source) == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert cfg["cleanup.policy"].value == "delete"
    assert ConfigSource(cfg["cleanup.policy"].source) == ConfigSource.DEFAULT_CONFIG

    # AlterConfigs / IncrementalAlterConfigs: a bad value is INVALID_CONFIG and changes nothing
    bad = ConfigResource(ConfigResource.Type.TOPIC, topic,
                         incremental_configs=[ConfigEntry("retention.ms", "xyz",
                                                          incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as e:
        a.incremental_alter_configs([bad], request_timeout=15)[bad].result(TIMEOUT_S)
    assert e.value.args[0].code() == KafkaError.INVALID_CONFIG, e.value
    good = ConfigResource(ConfigResource.Type.TOPIC, topic,
                          incremental_configs=[ConfigEntry("retention.ms", "3600000",
                                                           incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([good], request_timeout=15)[good].result(TIMEOUT_S)
    cfg = a.describe_configs([res], request_timeout=15)[res].result(TIMEOUT_S)
    assert cfg["retention.ms"].value == "3600000"

    # CreatePartitions, then metadata shows 5
    a.create_partitions([NewPartitions(topic, 5)], request_timeout=15)[topic].result(TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S
    while len(a.list_topics(topic, timeout=15).topics[topic].partitions) != 5:
        assert time.monotonic() < deadline, "partition count never reached 5"
        time.sleep(0.1)

    # DeleteTopics
    a.delete_topics([topic], request_timeout=15)[topic].result(TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S
    while topic in a.list_topics(timeout=15).topics:
        assert time.monotonic() < deadline, "topic still listed after delete"
        time.sleep(0.1)


def test_describe_cluster(broker):
    a = admin(broker)
    d = a.describe_cluster(request_timeout=15).result(TIMEOUT_S)
    assert d.cluster_id, "cluster id must be set"
    assert [n.id for n in d.nodes] == [1]
    assert d.nodes[0].port == broker.port
