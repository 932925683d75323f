"""Share groups (KIP-932) through confluent-kafka's ShareConsumer (confluent-kafka 2.16,
librdkafka 2.16): two consumers of one share group process every record once (implicit
acknowledgement), and in explicit mode RELEASE redelivers a record with a higher delivery
count while REJECT archives it.

The tests run against Skiff (the module's `broker`); E2E_BOOTSTRAP=host:port runs them against a
broker that is already running instead, e.g. the reference Kafka from tests/kafka/start.sh:

    bash tests/kafka/start.sh 19092 /tmp/k && E2E_BOOTSTRAP=127.0.0.1:19092 \\
        tests/python/.venv/bin/python -m pytest -q tests/python/test_share_consumer.py
"""

import os
import socket
import struct
import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                   ResourceType)


def api_keys(bootstrap):
    """API keys the broker advertises (ApiVersions v0 on a plain socket)."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as s:
        cid = b"share-probe"
        body = struct.pack(">hhih", 18, 0, 1, len(cid)) + cid
        s.sendall(struct.pack(">i", len(body)) + body)

        def exact(n):
            buf = b""
            while len(buf) < n:
                chunk = s.recv(n - len(buf))
                if not chunk:
                    raise ConnectionError("broker closed the connection")
                buf += chunk
            return buf
        (size,) = struct.unpack(">i", exact(4))
        data = exact(size)
    _corr, err, n = struct.unpack_from(">ihi", data, 0)
    assert err == 0, f"ApiVersions error {err}"
    return {struct.unpack_from(">h", data, 10 + 6 * i)[0] for i in range(n)}


@pytest.fixture(scope="module")
def bootstrap(request):
    b = os.environ.get("E2E_BOOTSTRAP") or request.getfixturevalue("broker").bootstrap
    assert 76 in api_keys(b), f"{b} does not advertise ShareGroupHeartbeat (API 76)"
    return b


def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap, topic, partitions):
    a = admin(bootstrap)  # kept alive until the futures resolve
    for f in a.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def group_config(bootstrap, group, key, value):
    """A share-group config (GROUP config resource), waited for until DescribeConfigs shows it
    (Kafka applies it through its metadata log)."""
    a = admin(bootstrap)
    res = ConfigResource(ResourceType.GROUP, group,
                         incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    for f in a.incremental_alter_configs([res]).values():
        f.result(30)
    deadline = time.monotonic() + 30
    while True:
        got = a.describe_configs([ConfigResource(ResourceType.GROUP, group)])
        entries = list(got.values())[0].result(30)
        if key in entries and entries[key].value == value:
            return
        assert time.monotonic() < deadline, f"{key}={value} not visible on group {group}"
        time.sleep(0.2)


def produce(bootstrap, topic, values, partitions=1):
    p = Producer({"bootstrap.servers": bootstrap})
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), key=v.encode(), partition=i % partitions)
    assert p.flush(30) == 0


def share_consumer(bootstrap, group, **extra):
    conf = {"bootstrap.servers": bootstrap, "group.id": group}
    conf.update(extra)
    return ShareConsumer(conf)


def poll_values(c, want, timeout=60.0, explicit_ack=None):
    """Polls until `want` messages came; returns [(value, delivery_count)]. With explicit_ack
    (value -> AcknowledgeType), each message is acknowledged right away."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < want and time.monotonic() < deadline:
        for m in c.poll(0.5) or []:
            if m.error():
                continue
            out.append((m.value().decode(), m.delivery_count()))
            if explicit_ack is not None:
                c.acknowledge(m, explicit_ack(m.value().decode()))
    assert len(out) >= want, f"got {len(out)} of {want}: {out}"
    return out


def test_two_share_consumers_process_every_record_once(bootstrap, topic):
    group = f"{topic}-g"
    create_topic(bootstrap, topic, 2)
    group_config(bootstrap, group, "share.auto.offset.reset", "earliest")
    values = [f"v{i}" for i in range(100)]
    produce(bootstrap, topic, values, partitions=2)
    a, b = share_consumer(bootstrap, group), share_consumer(bootstrap, group)
    try:
        a.subscribe([topic])
        b.subscribe([topic])
        seen = {}
        deadline = time.monotonic() + 90
        while len(seen) < len(values) and time.monotonic() < deadline:
            for c in (a, b):
                for m in c.poll(0.2) or []:
                    if not m.error():
                        v = m.value().decode()
                        seen[v] = seen.get(v, 0) + 1
        assert sorted(seen) == sorted(values)
        # Implicit mode: the next polls accept the last batches; nothing comes a second time.
        end = time.monotonic() + 3
        while time.monotonic() < end:
            for c in (a, b):
                for m in c.poll(0.2) or []:
                    if not m.error():
                        v = m.value().decode()
                        seen[v] = seen.get(v, 0) + 1
        a.commit_sync(30)
        b.commit_sync(30)
        assert {v: n for v, n in seen.items() if n != 1} == {}
    finally:
        a.close()
        b.close()


def test_explicit_release_redelivers_and_reject_archives(bootstrap, topic):
    group = f"{topic}-g"
    create_topic(bootstrap, topic, 1)
    group_config(bootstrap, group, "share.auto.offset.reset", "earliest")
    produce(bootstrap, topic, ["keep", "again", "bad"])
    c = share_consumer(bootstrap, group, **{"share.acknowledgement.mode": "explicit"})
    try:
        c.subscribe([topic])
        acks = {"keep": AcknowledgeType.ACCEPT, "again": AcknowledgeType.RELEASE, "bad": AcknowledgeType.REJECT}
        first = poll_values(c, 3, explicit_ack=lambda v: acks[v])
        assert first == [("keep", 1), ("again", 1), ("bad", 1)]
        c.commit_sync(30)
        second = poll_values(c, 1, timeout=30, explicit_ack=lambda v: AcknowledgeType.ACCEPT)
        assert second == [("again", 2)], "only the released record comes back, delivery count 2"
        c.commit_sync(30)
        rest = []
        end = time.monotonic() + 3
        while time.monotonic() < end:
            for m in c.poll(0.5) or []:
                if not m.error():
                    rest.append(m.value().decode())
                    c.acknowledge(m)
        assert rest == [], "the rejected (or accepted) records were delivered again"
    finally:
        c.close()
