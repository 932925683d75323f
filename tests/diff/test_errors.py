"""Error codes and messages for invalid requests and bad configs, sent as raw frames (so no
client library validates or rewords them) to both brokers and compared field by field."""

import time

from kafka.protocol.admin.configs import AlterConfigsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.admin.topics import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.consumer.group import HeartbeatRequest, OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from diffutil import Collector
from raw import RawClient, to_plain

CT = CreateTopicsRequest


def both(brokers, fn):
    """fn(RawClient) on each broker: {'kafka': .., 'skiff': ..}."""
    out = {}
    for side in ("kafka", "skiff"):
        with RawClient(brokers[side].bootstrap) as c:
            out[side] = fn(c)
    return out


def wait_topic(c, name, timeout=15.0):
    """Kafka answers CreateTopics before its broker's metadata cache has the topic (KRaft
    propagates it asynchronously); wait until Metadata shows every partition with a leader so
    the next request sees the topic on both brokers."""
    M = MetadataRequest
    deadline = time.monotonic() + timeout
    while True:
        r = c.send(M, 9, topics=[M.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False,
                   include_topic_authorized_operations=False)
        t = r.topics[0]
        if t.error_code == 0 and t.partitions and all(p.leader_id >= 0 for p in t.partitions):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} not in Metadata {timeout}s after CreateTopics (error {t.error_code})")
        time.sleep(0.05)


def create(c, name, partitions=1, rf=1, configs=(), validate_only=False, version=7):
    r = c.send(CT, version, timeout_ms=15000, validate_only=validate_only, topics=[
        CT.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf, assignments=[],
                          configs=[CT.CreatableTopic.CreatableTopicConfig(name=k, value=v) for k, v in configs])])
    t = to_plain(r)["topics"][0]
    t.pop("topic_id", None)
    if t["error_code"] == 0 and not validate_only:
        wait_topic(c, name)
    if t["error_code"] == 0:
        # The echoed configs (v5+) are compared in test_describe_configs; here only the outcome.
        t["configs"] = len(t["configs"]) > 0
    return t


def create_cases(n):
    """(case id, kwargs for create()) — each invalid in one way."""
    return [
        ("name-space-bang", dict(name="bad name!")),
        ("name-empty", dict(name="")),
        ("name-dot", dict(name=".")),
        ("name-dotdot", dict(name="..")),
        ("name-slash", dict(name="a/b")),
        ("name-too-long", dict(name="x" * 250)),
        ("name-exists-internal", dict(name="__consumer_offsets")),
        ("rf-2", dict(name=f"{n}-rf2", rf=2)),
        ("rf-0", dict(name=f"{n}-rf0", rf=0)),
        ("rf-minus-2", dict(name=f"{n}-rfm2", rf=-2)),
        ("partitions-0", dict(name=f"{n}-p0", partitions=0)),
        ("partitions-minus-2", dict(name=f"{n}-pm2", partitions=-2)),
        ("partitions-default", dict(name=f"{n}-pdef", partitions=-1, rf=-1)),
        ("config-unknown", dict(name=f"{n}-cu", configs=[("no.such.config", "1")])),
        ("config-cleanup-policy-bogus", dict(name=f"{n}-c1", configs=[("cleanup.policy", "bogus")])),
        ("config-retention-ms-abc", dict(name=f"{n}-c2", configs=[("retention.ms", "abc")])),
        ("config-retention-ms-minus-5", dict(name=f"{n}-c3", configs=[("retention.ms", "-5")])),
        ("config-segment-bytes-tiny", dict(name=f"{n}-c4", configs=[("segment.bytes", "10")])),
        ("config-compression-bogus", dict(name=f"{n}-c5", configs=[("compression.type", "bogus")])),
        ("config-min-insync-0", dict(name=f"{n}-c6", configs=[("min.insync.replicas", "0")])),
        ("config-min-insync-2", dict(name=f"{n}-c6b", configs=[("min.insync.replicas", "2")])),
        ("config-max-message-bytes-neg", dict(name=f"{n}-c7", configs=[("max.message.bytes", "-1")])),
        ("config-dirty-ratio-2", dict(name=f"{n}-c8", configs=[("min.cleanable.dirty.ratio", "2")])),
        ("config-timestamp-type-bogus", dict(name=f"{n}-c9", configs=[("message.timestamp.type", "Bogus")])),
        ("config-null-value", dict(name=f"{n}-c10", configs=[("retention.ms", None)])),
        ("validate-only-ok", dict(name=f"{n}-vo", validate_only=True, configs=[("retention.ms", "1000")])),
    ]


def test_create_topics_errors(brokers, name):
    col = Collector()
    for case, kw in create_cases(name):
        got = both(brokers, lambda c: create(c, **kw))
        col.check(f"create_topics/{case}", kw, got["kafka"], got["skiff"])
    # Creating a topic twice; then a request naming one topic twice.
    got = both(brokers, lambda c: (create(c, f"{name}-dup"), create(c, f"{name}-dup"))[1])
    col.check("create_topics/exists", {"name": f"{name}-dup", "twice": True}, got["kafka"], got["skiff"])

    def twice(c):
        t = CT.CreatableTopic(name=f"{name}-twice", num_partitions=1, replication_factor=1, assignments=[], configs=[])
        r = to_plain(c.send(CT, 7, timeout_ms=15000, validate_only=False, topics=[t, t]))
        for x in r["topics"]:
            x.pop("topic_id", None)
            x["configs"] = len(x["configs"]) > 0
        return r["topics"]
    got = both(brokers, twice)
    col.check("create_topics/same-name-twice-in-request", {"name": f"{name}-twice", "twice_in_one_request": True},
              got["kafka"], got["skiff"])
    col.done()


def test_create_partitions_errors(brokers, name):
    col = Collector()
    both(brokers, lambda c: create(c, name, partitions=2))
    CP = CreatePartitionsRequest
    for case, topic, count in [("fewer", name, 1), ("same", name, 2), ("unknown-topic", f"{name}-nope", 3),
                               ("more-ok", name, 3)]:
        req = dict(topics=[CP.CreatePartitionsTopic(name=topic, count=count, assignments=None)],
                   timeout_ms=15000, validate_only=False)
        got = both(brokers, lambda c: to_plain(c.send(CP, 3, **req))["results"])
        col.check(f"create_partitions/{case}", {"topic": topic, "count": count}, got["kafka"], got["skiff"])
    col.done()


def test_delete_topics_errors(brokers, name):
    col = Collector()
    # (Deleting __consumer_offsets succeeds on both and breaks every later group case, so the
    # suite does not try it.)
    for case, names in [("unknown", [f"{name}-nope"])]:
        got = both(brokers, lambda c: [
            {k: v for k, v in r.items() if k != "topic_id"}
            for r in to_plain(c.send(DeleteTopicsRequest, 5, topic_names=names, timeout_ms=15000))["responses"]])
        col.check(f"delete_topics/{case}", {"topic_names": names}, got["kafka"], got["skiff"])
    col.done()


def alter_cases(name):
    """(case, resource type, resource name, [(key, value)]) for AlterConfigs v2."""
    return [
        ("topic-retention-abc", 2, name, [("retention.ms", "abc")]),
        ("topic-cleanup-bogus", 2, name, [("cleanup.policy", "bogus")]),
        ("topic-unknown-config", 2, name, [("no.such.config", "1")]),
        ("topic-segment-bytes-tiny", 2, name, [("segment.bytes", "10")]),
        ("topic-unknown-topic", 2, f"{name}-nope", [("retention.ms", "1000")]),
        ("topic-ok", 2, name, [("retention.ms", "1000")]),
        ("broker-read-only", 4, "1", [("log.dirs", "/tmp/elsewhere")]),
        ("broker-unknown-config", 4, "1", [("no.such.config", "1")]),
        ("broker-wrong-id", 4, "7", [("log.cleaner.threads", "2")]),
        ("broker-bad-value", 4, "1", [("log.retention.ms", "abc")]),
    ]


def test_alter_configs_errors(brokers, name):
    col = Collector()
    both(brokers, lambda c: create(c, name))
    AC = AlterConfigsRequest
    for case, rtype, rname, kvs in alter_cases(name):
        req = dict(validate_only=True if case.startswith("broker") else False, resources=[
            AC.AlterConfigsResource(resource_type=rtype, resource_name=rname, configs=[
                AC.AlterConfigsResource.AlterableConfig(name=k, value=v) for k, v in kvs])])
        got = both(brokers, lambda c: to_plain(c.send(AC, 2, **req))["responses"])
        col.check(f"alter_configs/{case}", {"resource_type": rtype, "name": rname, "configs": kvs,
                                            "validate_only": req["validate_only"]}, got["kafka"], got["skiff"])
    IAC = IncrementalAlterConfigsRequest
    R = IAC.AlterConfigsResource
    for case, rtype, rname, op, k, v in [
        ("append-non-list", 2, name, 2, "retention.ms", "5"),
        ("append-list-bogus", 2, name, 2, "cleanup.policy", "bogus"),
        ("subtract-list", 2, name, 3, "cleanup.policy", "delete"),
        ("delete-unknown", 2, name, 1, "no.such.config", None),
        ("set-bad-value", 2, name, 0, "retention.ms", "abc"),
        ("bad-op", 2, name, 9, "retention.ms", "5"),
        ("unknown-topic", 2, f"{name}-nope", 0, "retention.ms", "5"),
    ]:
        req = dict(validate_only=False, resources=[R(resource_type=rtype, resource_name=rname, configs=[
            R.AlterableConfig(name=k, config_operation=op, value=v)])])
        got = both(brokers, lambda c: to_plain(c.send(IAC, 1, **req))["responses"])
        col.check(f"incremental_alter_configs/{case}", {"name": rname, "op": op, "key": k, "value": v},
                  got["kafka"], got["skiff"])
    col.done()


def batch(n=1):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(n):
        b.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v%d" % i, headers=[])
    return bytes(b.build())


def produce(c, topic, partition, acks=-1, records=None):
    P = ProduceRequest
    r = c.send(P, 9, transactional_id=None, acks=acks, timeout_ms=10000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[
            P.TopicProduceData.PartitionProduceData(index=partition, records=records or batch())])])
    out = to_plain(r)["responses"]
    for t in out:
        for p in t["partition_responses"]:
            if p["error_code"] == 0:
                p["log_append_time_ms"] = p["log_append_time_ms"] != -1
    return out


def test_produce_errors(brokers, name):
    col = Collector()
    both(brokers, lambda c: create(c, name, partitions=2))
    for case, topic, part in [("unknown-topic", f"{name}-nope", 0), ("unknown-partition", name, 5),
                              ("negative-partition", name, -1), ("ok", name, 1)]:
        got = both(brokers, lambda c: produce(c, topic, part))
        col.check(f"produce/{case}", {"topic": topic, "partition": part, "version": 9}, got["kafka"], got["skiff"])
    got = both(brokers, lambda c: produce(c, name, 0, acks=2))
    col.check("produce/acks-2", {"topic": name, "acks": 2}, got["kafka"], got["skiff"])
    col.done()


def list_offsets(c, topic, partition, ts, version=8, isolation=0):
    L = ListOffsetsRequest
    r = c.send(L, version, replica_id=-1, isolation_level=isolation, topics=[
        L.ListOffsetsTopic(name=topic, partitions=[
            L.ListOffsetsTopic.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1,
                                                    timestamp=ts)])])
    return to_plain(r)["topics"]


def test_list_offsets_errors(brokers, name):
    col = Collector()
    both(brokers, lambda c: create(c, name))
    for case, topic, part, ts in [("unknown-partition", name, 3, -1), ("unknown-topic", f"{name}-nope", 0, -1),
                                  ("bogus-timestamp-spec", name, 0, -9)]:
        got = both(brokers, lambda c: list_offsets(c, topic, part, ts))
        col.check(f"list_offsets/{case}", {"topic": topic, "partition": part, "timestamp": ts},
                  got["kafka"], got["skiff"])
    col.done()


def offset_commit(c, group, topic, generation=-1, member="", partition=0, version=8):
    O = OffsetCommitRequest
    r = c.send(O, version, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
               group_instance_id=None, topics=[O.OffsetCommitRequestTopic(name=topic, partitions=[
                   O.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                       partition_index=partition, committed_offset=1, committed_leader_epoch=-1,
                       committed_metadata="m")])])
    return to_plain(r)["topics"]


def offset_fetch(c, group, topic):
    F = OffsetFetchRequest
    r = c.send(F, 7, group_id=group, require_stable=False, topics=[
        F.OffsetFetchRequestTopic(name=topic, partition_indexes=[0, 1])])
    return to_plain(r)


def test_offset_commit_unknown_groups(brokers, name):
    col = Collector()
    both(brokers, lambda c: create(c, name))
    g = f"{name}-g"
    cases = [
        ("unknown-group-generation-5", dict(group=f"{g}1", topic=name, generation=5, member="m-1")),
        ("unknown-group-member-only", dict(group=f"{g}2", topic=name, generation=-1, member="m-1")),
        ("unknown-topic", dict(group=f"{g}3", topic=f"{name}-nope")),
        ("unknown-partition", dict(group=f"{g}4", topic=name, partition=7)),
        ("simple-commit-ok", dict(group=f"{g}5", topic=name)),
        # Group g5 now exists and is Empty: a generation/member that is not its own.
        ("empty-group-stale-generation", dict(group=f"{g}5", topic=name, generation=3, member="m-x")),
        ("empty-group-unknown-member", dict(group=f"{g}5", topic=name, generation=-1, member="m-x")),
        ("empty-group-id", dict(group="", topic=name)),
    ]
    for case, kw in cases:
        got = both(brokers, lambda c: offset_commit(c, **kw))
        col.check(f"offset_commit/{case}", kw, got["kafka"], got["skiff"])
    got = both(brokers, lambda c: offset_fetch(c, f"{g}5", name))
    col.check("offset_fetch/after-simple-commit", {"group": f"{g}5"}, got["kafka"], got["skiff"])
    got = both(brokers, lambda c: offset_fetch(c, f"{g}-never", name))
    col.check("offset_fetch/unknown-group", {"group": f"{g}-never"}, got["kafka"], got["skiff"])
    got = both(brokers, lambda c: to_plain(c.send(HeartbeatRequest, 4, group_id=f"{g}-never", generation_id=1,
                                                  member_id="m-1", group_instance_id=None)))
    got = {k: {kk: vv for kk, vv in v.items() if kk != "throttle_time_ms"} for k, v in got.items()}
    col.check("heartbeat/unknown-group", {"group": f"{g}-never"}, got["kafka"], got["skiff"])
    got = both(brokers, lambda c: to_plain(c.send(SyncGroupRequest, 5, group_id=f"{g}-never", generation_id=1,
                                                  member_id="m-1", group_instance_id=None, protocol_type="consumer",
                                                  protocol_name="range", assignments=[])))
    col.check("sync_group/unknown-group", {"group": f"{g}-never"}, got["kafka"], got["skiff"])
    col.done()
