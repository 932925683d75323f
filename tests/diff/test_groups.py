"""Consumer group states and describe output compared, through confluent-kafka (librdkafka
2.16): a classic-protocol group and a KIP-848 consumer-protocol group, while a member is
active and after it left; list output with states/types; a group that does not exist; and raw
DescribeGroups / ListGroups answers."""

import time

from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.protocol.admin.groups import DescribeGroupsRequest, ListGroupsRequest

from diffutil import Collector
from test_errors import both, create
from raw import RawClient, to_plain


def produce(bootstrap, topic, n=10):
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, key=f"k{i}", value=f"v{i}", partition=i % 2)
    assert p.flush(30) == 0


def join(bootstrap, group, topic, protocol, want=10, timeout=40.0):
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "client.id": "diff-client"}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"group.protocol": "classic", "partition.assignment.strategy": "range"})
    c = Consumer(conf)
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + timeout
    while got < want and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    assert got == want, f"{protocol} consumer read {got}/{want} records"
    c.commit(asynchronous=False)
    return c


def describe(bootstrap, group):
    a = AdminClient({"bootstrap.servers": bootstrap})
    try:
        d = a.describe_consumer_groups([group], request_timeout=15)[group].result()
    except Exception as e:  # the error for a missing group is part of the comparison
        return {"error": str(e)}
    members = sorted(
        ({"client_id": m.client_id, "has_member_id": bool(m.member_id), "host_is_set": bool(m.host),
          "group_instance_id": m.group_instance_id,
          "assignment": sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions),
          "target_assignment": None if m.target_assignment is None else sorted(
              (tp.topic, tp.partition) for tp in m.target_assignment.topic_partitions)}
         for m in d.members), key=str)
    return {"group_id": d.group_id, "simple": d.is_simple_consumer_group, "state": str(d.state),
            "type": str(d.type), "assignor": d.partition_assignor, "members": members,
            "coordinator_id": d.coordinator.id}


def listed(bootstrap, group):
    a = AdminClient({"bootstrap.servers": bootstrap})
    r = a.list_consumer_groups(request_timeout=15).result()
    mine = [g for g in r.valid if g.group_id == group]
    return [{"state": str(g.state), "type": str(g.type), "simple": g.is_simple_consumer_group} for g in mine]


def committed(bootstrap, group, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return sorted((tp.partition, tp.offset) for tp in
                      c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=15))
    finally:
        c.close()


def run_group(brokers, name, protocol, col):
    topic, group = f"{name}-t", f"{name}-g"
    out = {}
    for side in ("kafka", "skiff"):
        b = brokers[side].bootstrap

        with RawClient(b) as rc:
            assert create(rc, topic, partitions=2)["error_code"] == 0
        produce(b, topic)
        c = join(b, group, topic, protocol)
        try:
            active = describe(b, group)
            active_list = listed(b, group)
        finally:
            c.close()
        time.sleep(0.5)
        out[side] = {"active": active, "active_list": active_list, "after_leave": describe(b, group),
                     "after_leave_list": listed(b, group), "committed": committed(b, group, topic)}
    col.check(f"groups/{protocol}", {"protocol": protocol, "topic_partitions": 2, "members": 1},
              out["kafka"], out["skiff"])


def test_classic_group(brokers, name):
    col = Collector()
    run_group(brokers, name, "classic", col)
    col.done()


def test_consumer_protocol_group(brokers, name):
    col = Collector()
    run_group(brokers, name, "consumer", col)
    col.done()


def test_unknown_group(brokers, name):
    col = Collector()
    g = f"{name}-never"
    got = {s: describe(brokers[s].bootstrap, g) for s in ("kafka", "skiff")}
    col.check("groups/describe-unknown", {"group": g, "client": "confluent-kafka describe_consumer_groups"},
              got["kafka"], got["skiff"])
    got = both(brokers, lambda c: to_plain(c.send(DescribeGroupsRequest, 5, groups=[g],
                                                  include_authorized_operations=False))["groups"])
    col.check("describe_groups/unknown", {"group": g, "version": 5}, got["kafka"], got["skiff"])
    got = both(brokers, lambda c: to_plain(c.send(ListGroupsRequest, 5, states_filter=["Bogus"], types_filter=[]))
               ["error_code"])
    col.check("list_groups/bogus-state-filter", {"states_filter": ["Bogus"]}, got["kafka"], got["skiff"])
    col.done()


def test_offset_fetch_checks_consumer_group_members(brokers, name):
    """OffsetFetch v9 names the fetching member (KIP-848): a consumer group answers an unknown
    member and a wrong epoch with a group error; an admin fetch (no member) and a classic group
    are not checked."""
    from kafka.protocol.consumer.group import OffsetFetchRequest

    col = Collector()
    topic, group, classic = f"{name}-t", f"{name}-g", f"{name}-classic"
    out = {}
    for side in ("kafka", "skiff"):
        b = brokers[side].bootstrap
        with RawClient(b) as rc:
            assert create(rc, topic, partitions=2)["error_code"] == 0
        produce(b, topic)
        c = join(b, group, topic, "consumer")
        k = join(b, classic, topic, "classic")
        try:
            member = c.memberid()

            def fetch(g, member_id, epoch):
                with RawClient(b) as rc:
                    r = rc.send(OffsetFetchRequest, 9, require_stable=False, groups=[
                        OffsetFetchRequest.OffsetFetchRequestGroup(
                            group_id=g, member_id=member_id, member_epoch=epoch, topics=None)])
                    return to_plain(r)["groups"][0]["error_code"]

            out[side] = {
                "unknown member": fetch(group, "no-such-member", 1),
                "wrong epoch": fetch(group, member, 99999),
                "admin": fetch(group, None, -1),
                "classic group, unknown member": fetch(classic, "no-such-member", 1),
            }
        finally:
            c.close()
            k.close()
    col.check("offset_fetch/member-checks", {"version": 9, "group": group}, out["kafka"], out["skiff"])
    col.done()
    assert out["skiff"]["unknown member"] == 25 and out["skiff"]["wrong epoch"] == 113, out
