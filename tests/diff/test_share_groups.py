"""Share groups (KIP-932) on the wire, the same raw requests to both brokers and the answers
compared field by field: ShareGroupHeartbeat v1 (join, heartbeat, unknown member, fenced
epoch, leave, invalid requests, a consumer group's id), ShareGroupDescribe v1 (a share group
with a member, an unknown group, a consumer group) and ShareFetch v1 / ShareAcknowledge v1
error codes (acknowledging offsets not acquired or already acknowledged, overlapping batches,
a bad acknowledge type, an unknown share session, a wrong session epoch).

The requests are encoded by share_proto.py (kafka-python 3.0 has no share-group schemas).
Versions: Skiff advertises ShareFetch/ShareAcknowledge v1 only, Kafka 4.4 v1-2, so v1 is what
is sent. Values that differ by nature are normalised before the comparison: member ids the
test chose map to "<member>", topic ids to the topic's name, a heartbeat assignment to
topic-name/partitions. Both brokers must advertise ShareGroupHeartbeat (API 76).

The encodings and the normalisation were checked with two reference brokers (no difference):
    bash tests/kafka/start.sh 19092 /tmp/k1 && bash tests/kafka/start.sh 19093 /tmp/k2
    DIFF_ATTACH='{"kafka": ["127.0.0.1:19092", "/tmp/k1/logs"], "skiff": ["127.0.0.1:19093", "/tmp/k2/logs"]}' \
        tests/python/.venv/bin/python -m pytest -q tests/diff/test_share_groups.py
SHARE_DIFF_DUMP=1 with -s prints Kafka's answers.
"""

import json
import os
import time
import uuid

import pytest
from kafka.protocol.admin.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.admin.groups import ListGroupsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest

import share_proto as sp
from diffutil import Collector
from raw import RawClient, to_plain
from test_errors import batch, create, produce

ACCEPT, RELEASE, REJECT = 1, 2, 3
SIDES = ("kafka", "skiff")


@pytest.fixture(autouse=True)
def share_groups_served(brokers):
    for side in SIDES:
        with RawClient(brokers[side].bootstrap) as c:
            keys = {k.api_key for k in c.send(ApiVersionsRequest, 3, client_software_name="skiff-diff",
                                              client_software_version="1").api_keys}
        assert 76 in keys, f"{side} does not advertise ShareGroupHeartbeat (API 76)"


def topic_id(c, topic):
    M = MetadataRequest
    r = c.send(M, 12, topics=[M.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False,
               include_topic_authorized_operations=False)
    return r.topics[0].topic_id


def set_group_config(c, group, key, value):
    IAC = IncrementalAlterConfigsRequest
    R = IAC.AlterConfigsResource
    r = to_plain(c.send(IAC, 1, validate_only=False, resources=[R(
        resource_type=32, resource_name=group, configs=[R.AlterableConfig(name=key, config_operation=0, value=value)])]))
    assert r["responses"][0]["error_code"] == 0, r
    # Kafka applies group configs through its metadata log: wait until DescribeConfigs shows it.
    D = DescribeConfigsRequest
    deadline = time.monotonic() + 15
    while True:
        d = to_plain(c.send(D, 4, resources=[D.DescribeConfigsResource(
            resource_type=32, resource_name=group, configuration_keys=[key])],
            include_synonyms=False, include_documentation=False))
        got = {e["name"]: e["value"] for e in d["results"][0]["configs"]}
        if got.get(key) == value:
            return
        assert time.monotonic() < deadline, f"group config {key}={value} not visible: {d}"
        time.sleep(0.1)


def dump(test, out):
    """SHARE_DIFF_DUMP=1 (with pytest -s) prints both sides' normalised answers."""
    if os.environ.get("SHARE_DIFF_DUMP"):
        print(f"\n==== {test}\n" + json.dumps(out, indent=1, default=str, sort_keys=True))


class Norm:
    """Replaces the test's own member ids and the topic ids by stable names."""

    def __init__(self, members=(), topics=None, epochs=None):
        """`epochs`: {member epoch: label}; member epochs depend on how many times the
        coordinator bumped the group (timing), so fields named member_epoch and "(N)" in error
        messages are replaced by these labels."""
        self.members = {m: f"<member{i}>" for i, m in enumerate(members)}
        self.topics = {str(k): v for k, v in (topics or {}).items()}
        self.epochs = dict(epochs or {})

    def __call__(self, v, key=None):
        if isinstance(v, dict):
            return {k: self(x, k) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [self(x) for x in v]
        if key == "member_epoch" and v in self.epochs:
            return self.epochs[v]
        if isinstance(v, uuid.UUID):
            return self.topics.get(str(v), "<other-topic-id>")
        if isinstance(v, str):
            for m, label in self.members.items():
                v = v.replace(m, label)
            for e, label in self.epochs.items():
                v = v.replace(f"({e})", f"({label})")
        return v


def hb_view(h):
    """A heartbeat answer without the assignment's order (partitions sorted)."""
    h = dict(h)
    if h.get("assignment"):
        h["assignment"] = sorted(([t["topic_id"], sorted(t["partitions"])] for t in h["assignment"]["topic_partitions"]),
                                 key=str)
    return h


def join_until_assigned(c, group, member, topics, timeout=20.0):
    """Joins (epoch 0; again while the coordinator is not ready) and heartbeats until the answer
    carries a non-empty assignment; returns (every answer, the member epoch reached, the
    assignment)."""
    deadline = time.monotonic() + timeout
    while True:
        first = sp.heartbeat(c, group, member, 0, topics)
        if first["error_code"] not in (14, 15, 16) or time.monotonic() > deadline:
            break
        # Kafka creates __consumer_offsets (and so a coordinator) on the first FindCoordinator.
        c.send(FindCoordinatorRequest, 4, key_type=0, coordinator_keys=[group])
        time.sleep(0.3)
    assert first["error_code"] == 0, f"join: {first}"
    answers = [first]
    epoch = first["member_epoch"]
    a = first["assignment"]
    while not (a and a["topic_partitions"]) and time.monotonic() < deadline:
        time.sleep(0.3)
        h = sp.heartbeat(c, group, member, epoch)
        assert h["error_code"] == 0, f"heartbeat: {h}"
        answers.append(h)
        epoch = h["member_epoch"]
        a = h["assignment"] if h["assignment"] is not None else a
    assert a and a["topic_partitions"], f"no assignment within {timeout}s: {answers[-3:]}"
    return answers, epoch, a


def test_heartbeat(brokers, name):
    col = Collector()
    topic, group = f"{name}-t", f"{name}-g"
    out = {}
    for side in SIDES:
        m1, m2 = str(uuid.uuid4()), str(uuid.uuid4())
        with RawClient(brokers[side].bootstrap) as c:
            create(c, topic, partitions=2)
            tid = topic_id(c, topic)
            norm = Norm([m1, m2], {tid: topic})
            res = {}
            answers, epoch, assignment = join_until_assigned(c, group, m1, [topic])
            res["join"] = hb_view(answers[0]) | {"assignment": "<varies>",
                                                 "member_epoch": answers[0]["member_epoch"] > 0}
            res["join-epoch-positive"] = epoch > 0
            res["assignment"] = sorted(([t["topic_id"], sorted(t["partitions"])]
                                        for t in assignment["topic_partitions"]), key=str)
            # A steady heartbeat: same epoch, no new assignment.
            res["steady"] = hb_view(sp.heartbeat(c, group, m1, epoch))
            res["steady-epoch-same"] = res["steady"]["member_epoch"] == epoch
            res["steady"]["member_epoch"] = "<epoch>"
            res["unknown-member"] = sp.heartbeat(c, group, m2, 5)
            res["fenced-epoch"] = sp.heartbeat(c, group, m1, epoch + 5)
            res["fenced-epoch-lower"] = sp.heartbeat(c, group, m1, max(epoch - 1, 1)) if epoch > 1 else "n/a"
            res["unknown-group"] = sp.heartbeat(c, f"{group}-nope", m2, 3)
            # Invalid requests.
            res["empty-group-id"] = sp.heartbeat(c, "", m2, 0, [topic])
            res["empty-member-id"] = sp.heartbeat(c, group, "", 0, [topic])
            res["join-without-topics"] = sp.heartbeat(c, group, m2, 0, None)
            res["join-empty-topics"] = hb_view(sp.heartbeat(c, group, m2, 0, []))
            if res["join-empty-topics"]["error_code"] == 0:
                res["join-empty-topics-leave"] = sp.heartbeat(c, group, m2, -1)
            res["empty-rack"] = sp.heartbeat(c, group, str(uuid.uuid4()), 0, [topic], rack_id="")
            res["epoch-minus-2"] = sp.heartbeat(c, group, m1, -2)
            res["epoch-minus-5"] = sp.heartbeat(c, group, m1, -5)
            res["unknown-topic"] = hb_view(sp.heartbeat(c, f"{group}-u", str(uuid.uuid4()), 0, [f"{topic}-nope"]))
            res["unknown-topic"]["member_id"] = res["unknown-topic"]["member_id"] is not None
            res["unknown-topic"]["member_epoch"] = res["unknown-topic"]["member_epoch"] > 0
            for k in ("empty-rack",):
                if res[k]["member_id"] not in (None, ""):
                    res[k]["member_id"] = "<generated>"
            # Leave, then heartbeat again as the departed member.
            res["leave"] = sp.heartbeat(c, group, m1, -1)
            res["after-leave"] = sp.heartbeat(c, group, m1, epoch)
            norm.epochs = {epoch: "<epoch>", epoch + 5: "<epoch+5>", epoch - 1: "<epoch-1>"}
            out[side] = norm(res)
    dump(__name__, out["kafka"])
    for case in out["kafka"]:
        col.check(f"share_group_heartbeat/{case}", {"case": case, "version": 1},
                  out["kafka"][case], out["skiff"].get(case, "<absent>"))
    col.done()


def test_heartbeat_consumer_group_id(brokers, name):
    """A share member joining with the id of a live consumer group (KIP-848, via raw
    ConsumerGroupHeartbeat is not needed: a classic group is made by a committed offset)."""
    from kafka.protocol.consumer.group import OffsetCommitRequest

    col = Collector()
    topic, group = f"{name}-t", f"{name}-g"
    out = {}
    for side in SIDES:
        with RawClient(brokers[side].bootstrap) as c:
            create(c, topic)
            O = OffsetCommitRequest
            r = to_plain(c.send(O, 2, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                retention_time_ms=-1, topics=[O.OffsetCommitRequestTopic(name=topic, partitions=[
                                    O.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                                        partition_index=0, committed_offset=0, committed_metadata="")])]))
            assert r["topics"][0]["partitions"][0]["error_code"] == 0, r
            m = str(uuid.uuid4())
            res = {"heartbeat": sp.heartbeat(c, group, m, 0, [topic]),
                   "describe": sp.describe(c, [group])}
            out[side] = Norm([m])(res)
    dump(__name__, out["kafka"])
    for case in out["kafka"]:
        col.check(f"share_group_heartbeat/consumer-group-id/{case}", {"group": group, "kind": "classic, offsets only"},
                  out["kafka"][case], out["skiff"][case])
    col.done()


def test_describe(brokers, name):
    col = Collector()
    topic, group = f"{name}-t", f"{name}-g"
    out = {}
    for side in SIDES:
        m = str(uuid.uuid4())
        with RawClient(brokers[side].bootstrap, client_id="diff-share") as c:
            create(c, topic, partitions=2)
            tid = topic_id(c, topic)
            _, epoch, _ = join_until_assigned(c, group, m, [topic])
            d = sp.describe(c, [group, f"{group}-nope", ""], include_authorized_operations=False)
            d_ops = sp.describe(c, [group], include_authorized_operations=True)
            lg = to_plain(c.send(ListGroupsRequest, 5, states_filter=[], types_filter=["share"]))
            listed = [g for g in lg["groups"] if g["group_id"] == group]
            sp.heartbeat(c, group, m, -1)
            after = sp.describe(c, [group])
            norm = Norm([m], {tid: topic})
            # Kafka does not answer in request order: compare the groups sorted by id.
            d["groups"].sort(key=lambda g: g["group_id"])
            res = {"described": d, "authorized_operations": d_ops["groups"][0]["authorized_operations"],
                   "listed": listed, "after_leave": after, "member_epoch_matches": None}
            g0 = next(g for g in d["groups"] if g["group_id"] == group)
            if g0["members"]:
                res["member_epoch_matches"] = g0["members"][0]["member_epoch"] == epoch
                for mem in g0["members"]:
                    mem["assignment"]["topic_partitions"] = sorted(
                        ([t["topic_id"], t["topic_name"], sorted(t["partitions"])]
                         for t in mem["assignment"]["topic_partitions"]), key=str)
            out[side] = norm(res)
    dump(__name__, out["kafka"])
    for case in out["kafka"]:
        col.check(f"share_group_describe/{case}", {"groups": [group, f"{group}-nope", ""], "version": 1},
                  out["kafka"][case], out["skiff"][case])
    col.done()


def fetch_view(f, norm):
    """A ShareFetch answer with the record bytes reduced to their presence."""
    f = norm(f)
    for t in f.get("responses") or []:
        for p in t["partitions"]:
            p["records"] = None if p["records"] is None else ("<records>" if p["records"] else b"")
    return f


def fetch_until_acquired(c, group, member, tid, norm, timeout=20.0):
    """Opens a share session (epoch 0) and fetches (epochs 1, 2, ...) until records are acquired;
    returns (first answer with records, next session epoch)."""
    epoch = 0
    deadline = time.monotonic() + timeout
    while True:
        f = sp.fetch(c, group, member, epoch, {tid: {0: []}})
        assert f["error_code"] == 0, f
        epoch += 1
        parts = f["responses"][0]["partitions"] if f["responses"] else []
        if parts and parts[0]["acquired_records"]:
            return fetch_view(f, norm), epoch
        assert time.monotonic() < deadline, f"no records acquired within {timeout}s: {f}"


def test_fetch_and_acknowledge_errors(brokers, name):
    col = Collector()
    topic, group = f"{name}-t", f"{name}-g"
    out = {}
    for side in SIDES:
        m = str(uuid.uuid4())
        stranger = str(uuid.uuid4())
        with RawClient(brokers[side].bootstrap) as c:
            create(c, topic)
            tid = topic_id(c, topic)
            norm = Norm([m, stranger], {tid: topic})
            set_group_config(c, group, "share.auto.offset.reset", "earliest")
            assert produce(c, topic, 0, records=batch(10))[0]["partition_responses"][0]["error_code"] == 0
            join_until_assigned(c, group, m, [topic])
            res = {}
            res["fetch-first"], epoch = fetch_until_acquired(c, group, m, tid, norm)

            def ack(batches, e=None, member=m, topics=None):
                nonlocal epoch
                e = epoch if e is None else e
                r = norm(sp.acknowledge(c, group, member, e, topics if topics is not None else {tid: {0: batches}}))
                if r["error_code"] == 0 and e == epoch:
                    epoch += 1
                return r

            res["ack-accept-0-1"] = ack([(0, 1, [ACCEPT])])
            res["ack-again-0"] = ack([(0, 0, [ACCEPT])])
            res["ack-not-acquired-20-22"] = ack([(20, 22, [ACCEPT])])
            res["ack-overlap"] = ack([(2, 3, [ACCEPT]), (3, 4, [ACCEPT])])
            res["ack-descending"] = ack([(5, 4, [ACCEPT])])
            res["ack-bad-type-9"] = ack([(2, 2, [9])])
            res["ack-gap-type-0"] = ack([(2, 2, [0])])
            res["ack-types-count-mismatch"] = ack([(2, 4, [ACCEPT, REJECT])])
            res["ack-per-offset-types"] = ack([(2, 4, [ACCEPT, RELEASE, REJECT])])
            res["ack-unknown-partition"] = ack(None, topics={tid: {7: [(0, 0, [ACCEPT])]}})
            res["ack-unknown-topic-id"] = ack(None, topics={uuid.uuid4(): {0: [(0, 0, [ACCEPT])]}})
            res["ack-wrong-epoch"] = ack([(5, 5, [ACCEPT])], e=epoch + 7)
            res["ack-epoch-0"] = ack([(5, 5, [ACCEPT])], e=0)
            res["ack-no-session"] = ack([(5, 5, [ACCEPT])], member=stranger, e=1)
            # Release 5..9 in a ShareFetch: the records released (3 by the per-offset types, 5..9
            # here) come back with delivery count 2, in this answer or the next ones.
            f = sp.fetch(c, group, m, epoch, {tid: {0: [(5, 9, [RELEASE])]}})
            if f["error_code"] == 0:
                epoch += 1
            redelivered = []

            def collect(f):
                for t in f.get("responses") or []:
                    for p in t["partitions"]:
                        for a in p["acquired_records"] or []:
                            redelivered.extend((o, a["delivery_count"]) for o in range(a["first_offset"], a["last_offset"] + 1))
            collect(f)
            view = fetch_view(f, norm)
            for t in view.get("responses") or []:
                for p in t["partitions"]:
                    p["acquired_records"] = "<collected>"
                    p["records"] = "<collected>"
            res["fetch-release-5-9"] = view
            deadline = time.monotonic() + 10
            while len(redelivered) < 6 and time.monotonic() < deadline:
                f = sp.fetch(c, group, m, epoch, {tid: {0: []}})
                assert f["error_code"] == 0, f
                epoch += 1
                collect(f)
            res["redelivered"] = sorted(redelivered)
            f = sp.fetch(c, group, m, epoch + 3, {tid: {0: []}})
            res["fetch-wrong-epoch"] = fetch_view(f, norm)
            f = sp.fetch(c, group, stranger, 4, {tid: {0: []}})
            res["fetch-unknown-session"] = fetch_view(f, norm)
            f = sp.fetch(c, group, m, 0, {tid: {0: [(0, 0, [ACCEPT])]}})
            res["fetch-epoch-0-with-acks"] = fetch_view(f, norm)
            f = sp.fetch(c, "", m, 1, {tid: {0: []}})
            res["fetch-empty-group"] = fetch_view(f, norm)
            f = sp.fetch(c, group, "", 1, {tid: {0: []}})
            res["fetch-empty-member"] = fetch_view(f, norm)
            f = sp.fetch(c, group, m, -1, {})
            res["fetch-close-session"] = fetch_view(f, norm)
            f = sp.fetch(c, group, m, 3, {tid: {0: []}})
            res["fetch-after-close"] = fetch_view(f, norm)
            sp.heartbeat(c, group, m, -1)
            out[side] = res
    dump(__name__, out["kafka"])
    for case in out["kafka"]:
        col.check(f"share_fetch_ack/{case}", {"case": case, "versions": "ShareFetch v1, ShareAcknowledge v1"},
                  out["kafka"][case], out["skiff"][case])
    col.done()
