"""Consumer groups with kafka-python 3.0.12 and confluent-kafka 2.16.1 against the real
skiff binary: subscribe() members sharing partitions and rebalancing, commits read back
after a broker restart, and the group admin APIs (ListGroups with state filter,
DescribeGroups, OffsetFetch, DeleteGroups)."""

import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, Producer, TopicPartition as CTP
from confluent_kafka.admin import AdminClient, NewTopic as CNewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

TIMEOUT_S = 45
BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": "300"}


def create_topic(broker, name, partitions):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def produce(broker, topic, partitions, per_partition, tag="r"):
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5, enable_idempotence=False)
    try:
        for part in range(partitions):
            for i in range(per_partition):
                p.send(topic, key=f"{tag}-{i}".encode(), value=f"{tag}-{part}-{i}".encode(),
                       partition=part)
        p.flush(timeout=30)
    finally:
        p.close()


def kp_consumer(broker, group, topic, **conf):
    c = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        **conf,
    )
    c.subscribe([topic])
    return c


def poll_into(c, seen, name):
    batch = c.poll(timeout_ms=200)
    for recs in batch.values():
        for r in recs:
            seen.append((r.partition, r.offset, name))
    if batch:
        c.commit()


def assert_once(seen, expected):
    keys = [(p, o) for p, o, _ in seen]
    dups = {k for k in keys if keys.count(k) > 1}
    assert not dups, f"read more than once: {sorted(dups)[:5]}"
    assert len(set(keys)) == expected, f"read {len(set(keys))} of {expected}"


def test_kafka_python_group_shares_partitions_and_rebalances(broker):
    topic = f"kp-group-{uuid.uuid4().hex[:8]}"
    group = f"kp-{uuid.uuid4().hex[:8]}"
    create_topic(broker, topic, 4)
    produce(broker, topic, 4, 25, "a")
    seen = []
    c1 = kp_consumer(broker, group, topic)
    c2 = kp_consumer(broker, group, topic)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while len(seen) < 100 or not (c1.assignment() and c2.assignment()):
            assert time.monotonic() < deadline, f"read {len(seen)} of 100"
            poll_into(c1, seen, "c1")
            poll_into(c2, seen, "c2")
        assert len(c1.assignment()) + len(c2.assignment()) == 4
        # c2 leaves (LeaveGroup); c1 takes over every partition.
        c2.close()
        produce(broker, topic, 4, 25, "b")
        deadline = time.monotonic() + TIMEOUT_S
        while len(seen) < 200:
            assert time.monotonic() < deadline, f"read {len(seen)} of 200 after c2 left"
            poll_into(c1, seen, "c1")
        assert len(c1.assignment()) == 4
        assert_once(seen, 200)
    finally:
        c1.close()
    # The group's commits, read back by a fresh consumer of the group.
    check = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                          enable_auto_commit=False)
    try:
        for p in range(4):
            assert check.committed(TopicPartition(topic, p)) == 50
    finally:
        check.close()


def group_ids(listed):
    return {g["group_id"] if isinstance(g, dict) else g[0] for g in listed}


def test_kafka_python_admin_group_apis(broker):
    topic = f"kp-admin-{uuid.uuid4().hex[:8]}"
    group = f"kp-admin-{uuid.uuid4().hex[:8]}"
    create_topic(broker, topic, 2)
    produce(broker, topic, 2, 5)
    c = kp_consumer(broker, group, topic)
    seen = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(seen) < 10:
        assert time.monotonic() < deadline
        poll_into(c, seen, "c")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert group in group_ids(admin.list_groups())
        assert group in group_ids(admin.list_groups(states_filter=["Stable"]))
        assert group not in group_ids(admin.list_groups(states_filter=["Empty"]))
        desc = admin.describe_groups([group])[group]
        assert desc["group_state"] == "Stable", desc
        assert desc["protocol_type"] == "consumer", desc
        assert len(desc["members"]) == 1, desc
        offsets = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 5, 1: 5}
        # OffsetDelete while the member still consumes the topic is refused.
        res = admin.delete_group_offsets(group, [TopicPartition(topic, 0)])
        assert res[TopicPartition(topic, 0)].__name__ == "GroupSubscribedToTopicError", res
        c.close()
        desc = admin.describe_groups([group])[group]
        assert desc["group_state"] == "Empty", desc
        res = admin.delete_group_offsets(group, [TopicPartition(topic, 0)])
        assert res[TopicPartition(topic, 0)].__name__ == "NoError", res
        offsets = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {1: 5}
        assert admin.delete_groups([group]) == {group: "OK"}
        assert group not in group_ids(admin.list_groups())
        assert admin.list_group_offsets({group: None})[group] == {}
    finally:
        admin.close()


def ck_consumer(broker, group, **conf):
    return Consumer({
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 300,
        "fetch.wait.max.ms": 100,
        **conf,
    })


def ck_poll(c, seen, name):
    m = c.poll(0.1)
    if m is None or m.error():
        return
    seen.append((m.partition(), m.offset(), name))
    c.commit(message=m, asynchronous=False)


def test_confluent_group_resumes_after_restart(broker):
    topic = f"ck-restart-{uuid.uuid4().hex[:8]}"
    group = f"ck-{uuid.uuid4().hex[:8]}"
    create_topic(broker, topic, 3)
    produce(broker, topic, 3, 10, "a")
    seen = []
    c = ck_consumer(broker, group)
    c.subscribe([topic])
    deadline = time.monotonic() + TIMEOUT_S
    while len(seen) < 30:
        assert time.monotonic() < deadline, f"read {len(seen)} of 30"
        ck_poll(c, seen, "first")
    c.close()
    broker.restart()
    produce(broker, topic, 3, 10, "b")
    c = ck_consumer(broker, group)
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while len(seen) < 60:
            assert time.monotonic() < deadline, f"read {len(seen)} of 60 after restart"
            ck_poll(c, seen, "second")
        committed = c.committed([CTP(topic, p) for p in range(3)], timeout=10)
        assert [tp.offset for tp in committed] == [20, 20, 20]
    finally:
        c.close()
    assert_once(seen, 60)


def test_confluent_cooperative_sticky_pair(broker):
    topic = f"ck-coop-{uuid.uuid4().hex[:8]}"
    group = f"ck-coop-{uuid.uuid4().hex[:8]}"
    create_topic(broker, topic, 4)
    conf = {"partition.assignment.strategy": "cooperative-sticky"}
    c1, c2 = ck_consumer(broker, group, **conf), ck_consumer(broker, group, **conf)
    c1.subscribe([topic])
    c2.subscribe([topic])
    seen = []
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not (c1.assignment() and c2.assignment()):
            assert time.monotonic() < deadline, "both cooperative members get partitions"
            ck_poll(c1, seen, "c1")
            ck_poll(c2, seen, "c2")
        assert len(c1.assignment()) + len(c2.assignment()) == 4
        produce(broker, topic, 4, 10)
        deadline = time.monotonic() + TIMEOUT_S
        while len(seen) < 40:
            assert time.monotonic() < deadline, f"read {len(seen)} of 40"
            ck_poll(c1, seen, "c1")
            ck_poll(c2, seen, "c2")
        assert {n for _, _, n in seen} == {"c1", "c2"}
        assert_once(seen, 40)
    finally:
        c1.close()
        c2.close()


def test_confluent_admin_lists_describes_and_deletes_groups(broker):
    topic = f"ck-admin-{uuid.uuid4().hex[:8]}"
    group = f"ck-admin-{uuid.uuid4().hex[:8]}"
    create_topic(broker, topic, 1)
    c = ck_consumer(broker, group)
    c.commit(offsets=[CTP(topic, 0, 7)], asynchronous=False)
    c.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    empty = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(timeout=15)
    assert group in {g.group_id for g in empty.valid}
    stable = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(timeout=15)
    assert group not in {g.group_id for g in stable.valid}
    desc = admin.describe_consumer_groups([group])[group].result(timeout=15)
    assert desc.state == ConsumerGroupState.EMPTY
    from confluent_kafka import ConsumerGroupTopicPartitions
    offs = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)])[group].result(timeout=15)
    assert [(tp.partition, tp.offset) for tp in offs.topic_partitions] == [(0, 7)]
    admin.delete_consumer_groups([group])[group].result(timeout=15)
    left = admin.list_consumer_groups().result(timeout=15)
    assert group not in {g.group_id for g in left.valid}
