"""Streams groups (KIP-1071) on the wire, the same raw requests to both brokers and the answers
compared field by field:

- StreamsGroupHeartbeat: a first join with a topology of two sub-topologies (a user source
  topic; a repartition topic written by one and read by the other; a changelog per
  sub-topology), the MISSING_INTERNAL_TOPICS status and the internal topics the broker then
  creates (their partition counts), the assignment, steady heartbeats at v1 and v0, an unknown
  member, a fenced epoch above and below (the previous epoch without reported tasks), an
  unknown group, invalid joins (empty group or member id, no topology, no rebalance timeout,
  null or non-empty task lists, empty rack or instance id, a topology on a later heartbeat,
  epoch -3, -2 without an instance id), joins that differ from the group's topology (another
  epoch, an older epoch: STALE_TOPOLOGY, other sub-topologies), a new group's malformed
  topologies (no sources, a changelog with a partition count, a repartition topic nobody
  writes, ...), a shutdown request, leave; a join while the source topic is missing
  (MISSING_SOURCE_TOPICS, NotReady) until it is created; joins with the id of a classic group
  that only has offsets and of a share group; with an initial rebalance delay of 1.5 s, the
  first join (ASSIGNMENT_DELAYED, the empty target at epoch 1), the assignment after the delay,
  and a join into the emptied group (delayed again).
- StreamsGroupDescribe at v0 and v1: a group with one and with two members once the
  assignment settled (topology, members, current and target assignment, epochs, state), an
  unknown group, a consumer group's id, the empty id, authorized operations asked or not, the
  topology description asked for; the group after its members left.
- Kafka's `kafka-streams-groups` tool (--list, --describe, --describe --members --verbose,
  --describe --state --verbose, --describe --offsets) against both brokers, its output
  compared line by line (only the bootstrap address is replaced; the member and
  topic-partition rows, which Kafka's answers give in Java hash order, are compared sorted).

The requests are encoded by streams_proto.py (kafka-python 3.0 has no streams-group schemas).
Member ids, process ids and group/topic names are chosen by the test and are the same on both
sides, so the answers are compared as they are, epochs included. Each group gets the group
config streams.initial.rebalance.delay.ms=0 on both brokers (IncrementalAlterConfigs, waited
for until DescribeConfigs shows it, which also means Kafka's coordinator has seen the topics
created before), so its first assignment is not held back (one test sets 1500 and waits it
out); the assignment interval (1 s, the default on both) is waited out before a heartbeat
that is to carry a new assignment, so what each answer holds does not depend on timing. Two normalisations: the topic lists in a status
detail, which Kafka writes in Java hash-set order, are compared sorted; members and tasks in
describe answers are compared sorted by id. Both brokers must advertise StreamsGroupHeartbeat
(API 88) and StreamsGroupDescribe (API 89).

The encodings were checked against Kafka 4.4's JSON schemas and Skiff's codec (a decoder
fails on bytes left over), and by running this module against two reference brokers (no
difference, so the waits make every compared answer deterministic):
    bash tests/kafka/start.sh 19092 /tmp/k1 && bash tests/kafka/start.sh 19093 /tmp/k2
    DIFF_ATTACH='{"kafka": ["127.0.0.1:19092", "/tmp/k1/logs"], "skiff": ["127.0.0.1:19093", "/tmp/k2/logs"]}' \
        tests/python/.venv/bin/python -m pytest -q tests/diff/test_streams_groups.py
STREAMS_DIFF_DUMP=1 with -s prints Kafka's answers.
"""

import json
import os
import re
import subprocess
import time
import uuid

import pytest
from kafka.protocol.consumer.group import OffsetCommitRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest

import share_proto as sp
import streams_proto as st
from brokers import REPO
from diffutil import Collector
from raw import RawClient, to_plain
from test_errors import create
from test_share_groups import set_group_config

SIDES = ("kafka", "skiff")
# Longer than the default assignment interval (1 s): a heartbeat sent this long after the
# previous target was computed may get a new one.
ASSIGNMENT_WAIT = 1.3


@pytest.fixture(autouse=True)
def streams_groups_served(brokers):
    for side in SIDES:
        with RawClient(brokers[side].bootstrap) as c:
            keys = {k.api_key for k in c.send(ApiVersionsRequest, 3, client_software_name="skiff-diff",
                                              client_software_version="1").api_keys}
        assert {88, 89} <= keys, f"{side} does not advertise StreamsGroupHeartbeat/Describe (APIs 88, 89)"


def dump(test, out):
    """STREAMS_DIFF_DUMP=1 (with pytest -s) prints Kafka's answers."""
    if os.environ.get("STREAMS_DIFF_DUMP"):
        print(f"\n==== {test}\n" + json.dumps(out, indent=1, default=str, sort_keys=True))


def sort_status_lists(v):
    """Kafka lists the missing topics of a status detail in Java hash-set order (it changes with
    the names); the lists are compared sorted."""
    if isinstance(v, dict):
        if set(v) == {"status_code", "status_detail"}:
            return v | {"status_detail": re.sub(r"(?<=: )[^:]+$|(?<=Source topics ).+(?= are missing)",
                                                lambda m: ", ".join(sorted(m.group(0).split(", "))),
                                                v["status_detail"])}
        return {k: sort_status_lists(x) for k, x in v.items()}
    if isinstance(v, list):
        return [sort_status_lists(x) for x in v]
    return v


def compare(col, prefix, request, out):
    out = sort_status_lists(out)
    for case in out["kafka"]:
        col.check(f"{prefix}/{case}", request | {"case": case}, out["kafka"][case], out["skiff"].get(case, "<absent>"))


class App:
    """A streams application's names and topology: sub-topology "0" reads the user topic `src`,
    keeps a store (changelog `<app>-store-changelog`) and writes the repartition topic
    `<app>-rep-repartition`; sub-topology "1" reads that topic and keeps a second store
    (`<app>-agg-changelog`)."""

    def __init__(self, name, src=None, epoch=1):
        self.group = f"{name}-app"
        self.src = src or f"{name}-in"
        self.repartition = f"{self.group}-rep-repartition"
        self.changelogs = [f"{self.group}-store-changelog", f"{self.group}-agg-changelog"]
        self.epoch = epoch

    def topology(self, epoch=None):
        return (self.epoch if epoch is None else epoch, [
            st.subtopology("0", source_topics=[self.src], repartition_sink_topics=[self.repartition],
                           state_changelog_topics=[st.topic_info(self.changelogs[0])]),
            st.subtopology("1", repartition_source_topics=[st.topic_info(self.repartition)],
                           state_changelog_topics=[st.topic_info(self.changelogs[1], configs={
                               "cleanup.policy": "compact"})]),
        ])

    def internal_topics(self):
        return [self.repartition] + self.changelogs


def join_fields(app, process, topology=None, **over):
    """What a Streams client sends on its first heartbeat."""
    f = dict(rebalance_timeout_ms=30000, topology=topology or app.topology(), process_id=process,
             active_tasks=[], standby_tasks=[], warmup_tasks=[], client_tags={})
    f.update(over)
    return f


def join(c, group, member, fields, timeout=20.0):
    """A first heartbeat (epoch 0), sent again while the coordinator is loading."""
    deadline = time.monotonic() + timeout
    while True:
        h = st.heartbeat(c, group, member, 0, **fields)
        if h["error_code"] not in (14, 15, 16) or time.monotonic() > deadline:
            return h
        c.send(FindCoordinatorRequest, 4, key_type=0, coordinator_keys=[group])
        time.sleep(0.3)


def tasks_of(h):
    return [(t["subtopology_id"], sorted(t["partitions"])) for t in h["active_tasks"]]


class Member:
    """One raw member: its id, last epoch and the active tasks it owns (reported back on every
    heartbeat, as a Streams client does once it has taken or revoked them)."""

    def __init__(self, c, group, member_id, process):
        self.c, self.group, self.id, self.process = c, group, member_id, process
        self.epoch = 0
        self.owned = []

    def join(self, app, **over):
        h = join(self.c, self.group, self.id, join_fields(app, self.process, **over))
        self._take(h)
        return h

    def beat(self):
        h = st.heartbeat(self.c, self.group, self.id, self.epoch, active_tasks=self.owned,
                         standby_tasks=[], warmup_tasks=[])
        self._take(h)
        return h

    def _take(self, h):
        if h["error_code"] == 0:
            self.epoch = h["member_epoch"]
            if h["active_tasks"] is not None:
                self.owned = tasks_of(h)


def settle(c, group, members, timeout=30.0):
    """Heartbeats every member (each reporting what it owns) until StreamsGroupDescribe shows a
    Stable group whose members are all at the group epoch and own their target assignment."""
    deadline = time.monotonic() + timeout
    while True:
        time.sleep(ASSIGNMENT_WAIT)
        for m in members:
            h = m.beat()
            assert h["error_code"] == 0, f"heartbeat of {m.id}: {h}"
        g = st.describe(c, [group])["groups"][0]
        done = g["group_state"] == "Stable" and g["group_epoch"] == g["assignment_epoch"] and all(
            x["member_epoch"] == g["group_epoch"] and _sorted_assignment(x["assignment"]) == _sorted_assignment(
                x["target_assignment"]) for x in g["members"]) and len(g["members"]) == len(members)
        if done:
            return g
        assert time.monotonic() < deadline, f"group {group} not settled within {timeout}s: {g}"


def _sorted_assignment(a):
    return {k: sorted((t["subtopology_id"], sorted(t["partitions"])) for t in v) for k, v in a.items()}


def topic_partitions(c, topics):
    """{topic: partition count or error code} from Metadata (no auto-creation)."""
    M = MetadataRequest
    r = c.send(M, 9, topics=[M.MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=False,
               include_topic_authorized_operations=False)
    return {t.name: (len(t.partitions) if t.error_code == 0 else f"error {t.error_code}") for t in r.topics}


def wait_internal_topics(c, app, timeout=15.0):
    """Polls Metadata until the internal topics exist (Kafka creates them asynchronously after
    the heartbeat that asked for them); returns their partition counts."""
    deadline = time.monotonic() + timeout
    while True:
        got = topic_partitions(c, app.internal_topics())
        if all(isinstance(v, int) for v in got.values()) or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def group_view(g):
    """A described group with its lists in a stable order (Kafka answers members and tasks in
    hash order)."""
    g = json.loads(json.dumps(g, default=str))
    for m in g.get("members") or []:
        for k in ("assignment", "target_assignment"):
            m[k] = _sorted_assignment(m[k])
    if g.get("members"):
        g["members"].sort(key=lambda m: m["member_id"])
    return g


def test_heartbeat(brokers, name):
    """One member: first join, the internal topics, the assignment, steady heartbeats and the
    error answers, then leave."""
    col = Collector()
    app = App(name)
    m1, m2 = f"{name}-member-1", f"{name}-member-2"
    out = {}
    for side in SIDES:
        with RawClient(brokers[side].bootstrap, client_id="diff-streams") as c:
            create(c, app.src, partitions=2)
            set_group_config(c, app.group, "streams.initial.rebalance.delay.ms", "0")
            res = {}
            mem = Member(c, app.group, m1, "process-1")
            res["join"] = mem.join(app)
            res["internal-topics"] = wait_internal_topics(c, app)
            time.sleep(ASSIGNMENT_WAIT)
            res["assigned"] = mem.beat()
            res["steady"] = mem.beat()
            res["steady-v0"] = st.heartbeat(c, app.group, m1, mem.epoch, version=0)
            epoch = mem.epoch
            res["unknown-member"] = st.heartbeat(c, app.group, m2, 5)
            res["fenced-epoch"] = st.heartbeat(c, app.group, m1, epoch + 5)
            res["fenced-epoch-lower"] = st.heartbeat(c, app.group, m1, epoch - 1)
            res["unknown-group"] = st.heartbeat(c, f"{app.group}-nope", m2, 3)
            # Joins that are invalid (Kafka validates them before it looks at the group) or
            # that differ from a good one in one field; each by the same second member, which
            # leaves again at once if it got in, so the group keeps one member.
            good = join_fields(app, "process-2")
            bad_copartition = (1, [st.subtopology("0", source_topics=[app.src], copartition_groups=[([3], [], [])])])
            duplicate = (1, [st.subtopology("0", source_topics=[app.src]), st.subtopology("0", source_topics=[app.src])])
            for case, group, member, over in (
                    ("empty-group-id", "", m2, {}),
                    ("empty-member-id", app.group, "", {}),
                    ("join-no-topology", app.group, m2, {"topology": None}),
                    ("join-no-rebalance-timeout", app.group, m2, {"rebalance_timeout_ms": -1}),
                    ("join-no-process-id", app.group, m2, {"process_id": None}),
                    ("join-empty-process-id", app.group, m2, {"process_id": ""}),
                    ("join-null-active-tasks", app.group, m2, {"active_tasks": None}),
                    ("join-null-standby-tasks", app.group, m2, {"standby_tasks": None}),
                    ("join-owning-tasks", app.group, m2, {"active_tasks": [("0", [0])]}),
                    ("join-empty-rack", app.group, m2, {"rack_id": ""}),
                    ("join-empty-instance-id", app.group, m2, {"instance_id": ""}),
                    ("join-no-subtopologies", app.group, m2, {"topology": (1, [])}),
                    ("join-bad-copartition-index", app.group, m2, {"topology": bad_copartition}),
                    ("join-duplicate-subtopology", app.group, m2, {"topology": duplicate}),
                    ("join-other-topology-epoch", app.group, m2, {"topology": app.topology(epoch=2)}),
                    ("join-older-topology-epoch", app.group, m2, {"topology": app.topology(epoch=0)}),
                    ("join-with-task-offsets", app.group, m2, {"task_offsets": [("0", 0, 5)], "task_end_offsets": [("0", 0, 9)]}),
                    ("join-same-topology", app.group, m2, {})):
                res[case] = st.heartbeat(c, group, member, 0, **(good | over))
                if res[case]["error_code"] == 0:
                    res[f"{case}-leave"] = st.heartbeat(c, group, member, -1)
            # Topologies a new group would start with (validated before they are set).
            for case, topo in (("fresh-no-subtopologies", (1, [])),
                               ("fresh-bad-copartition-index", bad_copartition),
                               ("fresh-repartition-source-never-written", (1, [
                                   st.subtopology("0", repartition_source_topics=[st.topic_info(f"{app.group}-x")])])),
                               ("fresh-subtopology-without-sources", (1, [st.subtopology("0")])),
                               ("fresh-negative-topology-epoch", (-1, app.topology()[1])),
                               ("fresh-duplicate-subtopology", duplicate),
                               ("fresh-changelog-with-partitions", (1, [
                                   st.subtopology("0", source_topics=[app.src],
                                                  state_changelog_topics=[st.topic_info(f"{app.group}-c", 4)])]))):
                group = f"{app.group}-{case}"
                set_group_config(c, group, "streams.initial.rebalance.delay.ms", "0")
                res[case] = st.heartbeat(c, group, m2, 0, **(good | {"topology": topo}))
                if res[case]["error_code"] == 0:
                    res[f"{case}-leave"] = st.heartbeat(c, group, m2, -1)
            res["unknown-group-join-null-tasks"] = st.heartbeat(c, f"{app.group}-nope", m2, 0,
                                                                rebalance_timeout_ms=30000, process_id="p")
            res["heartbeat-with-topology"] = st.heartbeat(c, app.group, m1, epoch, topology=app.topology())
            res["epoch-minus-3"] = st.heartbeat(c, app.group, m1, -3)
            res["static-leave-without-instance"] = st.heartbeat(c, app.group, m1, -2)
            time.sleep(ASSIGNMENT_WAIT)
            res["steady-after-joins"] = mem.beat()
            # A member asks every client of the application to shut down.
            res["shutdown"] = st.heartbeat(c, app.group, m1, mem.epoch, shutdown_application=True)
            res["after-shutdown"] = mem.beat()
            # Leave, then heartbeat again as the departed member.
            res["leave"] = st.heartbeat(c, app.group, m1, -1)
            res["after-leave"] = st.heartbeat(c, app.group, m1, epoch)
            res["describe-after-leave"] = group_view(st.describe(c, [app.group])["groups"][0])
            out[side] = res
    dump("heartbeat", out["kafka"])
    compare(col, "streams_group_heartbeat", {"group": app.group}, out)
    col.done()


def test_missing_source_topic(brokers, name):
    """A join before the source topic exists: MISSING_SOURCE_TOPICS and no tasks; once the topic
    is created the internal topics are made and the member is assigned."""
    col = Collector()
    app = App(name)
    out = {}
    for side in SIDES:
        with RawClient(brokers[side].bootstrap, client_id="diff-streams") as c:
            set_group_config(c, app.group, "streams.initial.rebalance.delay.ms", "0")
            res = {}
            mem = Member(c, app.group, f"{name}-member", "process-1")
            res["join"] = mem.join(app)
            res["internal-topics-before"] = topic_partitions(c, app.internal_topics())
            time.sleep(ASSIGNMENT_WAIT)
            res["still-missing"] = mem.beat()
            res["describe-missing"] = group_view(st.describe(c, [app.group])["groups"][0])
            create(c, app.src, partitions=3)
            # Kafka sees the new topic through its metadata image, asynchronously: heartbeat
            # until the status changes (the answers on the way are not compared).
            deadline = time.monotonic() + 15
            while True:
                time.sleep(0.2)
                h = mem.beat()
                if [s["status_code"] for s in h["status"] or []] != [st.MISSING_SOURCE_TOPICS]:
                    break
                assert time.monotonic() < deadline, f"{side}: source topic never seen: {h}"
            res["internal-topics"] = wait_internal_topics(c, app)
            time.sleep(ASSIGNMENT_WAIT)
            res["assigned"] = mem.beat()
            res["assigned-tasks"] = sorted(mem.owned)
            res["describe"] = group_view(st.describe(c, [app.group])["groups"][0])
            mem_epoch = mem.epoch
            res["leave"] = st.heartbeat(c, app.group, mem.id, -1)
            res["epoch-reached"] = mem_epoch
            out[side] = res
    dump("missing-source", out["kafka"])
    compare(col, "streams_group_heartbeat/missing-source", {"group": app.group}, out)
    col.done()


def commit_offset(c, group, topic):
    O = OffsetCommitRequest
    r = to_plain(c.send(O, 2, group_id=group, generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1,
                        topics=[O.OffsetCommitRequestTopic(name=topic, partitions=[
                            O.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                                partition_index=0, committed_offset=0, committed_metadata="")])]))
    assert r["topics"][0]["partitions"][0]["error_code"] == 0, r


def test_consumer_group_id(brokers, name):
    """A streams member joining with the id of a classic group that only has committed offsets,
    and with a share group's id, and StreamsGroupDescribe of those ids."""
    col = Collector()
    app = App(name)
    out = {}
    for side in SIDES:
        with RawClient(brokers[side].bootstrap, client_id="diff-streams") as c:
            create(c, app.src)
            # Also makes Kafka's coordinator see the topic (group configs follow topics in its
            # metadata log).
            set_group_config(c, app.group, "streams.initial.rebalance.delay.ms", "0")
            commit_offset(c, app.group, app.src)
            m = f"{name}-member"
            res = {"heartbeat": join(c, app.group, m, join_fields(app, "process-1")),
                   "describe": st.describe(c, [app.group])}
            # A share group's id (KIP-932, made by a share member's join).
            share_group = f"{name}-share"
            h = sp.heartbeat(c, share_group, str(uuid.uuid4()), 0, [app.src])
            assert h["error_code"] == 0, h
            res["share-group-heartbeat"] = join(c, share_group, m, join_fields(app, "process-1"))
            res["share-group-describe"] = st.describe(c, [share_group])
            out[side] = res
    dump("consumer-group-id", out["kafka"])
    compare(col, "streams_group_heartbeat/consumer-group-id", {"group": app.group, "kind": "classic, offsets only"}, out)
    col.done()


def describe_cases(c, app, other_groups):
    res = {}
    for version in (0, 1):
        d = st.describe(c, [app.group] + other_groups, include_authorized_operations=False, version=version)
        d["groups"] = sorted((group_view(g) for g in d["groups"]), key=lambda g: g["group_id"])
        res[f"v{version}"] = d
    d = st.describe(c, [app.group], include_authorized_operations=True)
    res["authorized_operations"] = d["groups"][0]["authorized_operations"]
    d = st.describe(c, [app.group], include_topology_description=True)
    res["topology_description"] = {k: d["groups"][0][k] for k in ("topology_description", "topology_description_status")}
    return res


def run_tool(bootstrap, *args):
    r = subprocess.run(["bash", str(REPO / "tests/kafka/tool.sh"), "kafka-streams-groups", "--bootstrap-server",
                        bootstrap, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    return {"exit": r.returncode, "stdout": r.stdout.splitlines(),
            "stderr": [line for line in r.stderr.splitlines() if not line.startswith(("WARNING", "SLF4J"))]}


def tool_view(out, bootstrap):
    """Tool output with what depends on the broker's address replaced."""
    def norm(line):
        line = line.replace(bootstrap, "<bootstrap>")
        return re.sub(r"\s+", " ", line).strip()
    return {"exit": out["exit"], "stdout": [norm(x) for x in out["stdout"]], "stderr": [norm(x) for x in out["stderr"]]}


def test_describe_and_tool(brokers, name):
    """A streams group with one member, then two, each once the assignment settled:
    StreamsGroupDescribe at v0 and v1 beside an unknown group, a consumer group's id and the
    empty id; then kafka-streams-groups --list / --describe [--members|--state|--offsets]."""
    col = Collector()
    app = App(name)
    consumer_group = f"{name}-consumers"
    others = [f"{app.group}-nope", consumer_group, ""]
    out = {}
    for side in SIDES:
        b = brokers[side].bootstrap
        with RawClient(b, client_id="diff-streams") as c:
            create(c, app.src, partitions=2)
            commit_offset(c, consumer_group, app.src)
            set_group_config(c, app.group, "streams.initial.rebalance.delay.ms", "0")
            set_group_config(c, app.group, "streams.session.timeout.ms", "60000")
            res = {}
            m1 = Member(c, app.group, f"{name}-member-1", "process-1")
            m1.join(app)
            wait_internal_topics(c, app)
            settle(c, app.group, [m1])
            res["one-member"] = describe_cases(c, app, others)
            m2 = Member(c, app.group, f"{name}-member-2", "process-2")
            res["second-join"] = m2.join(app, user_endpoint=("localhost", 8080), client_tags={"zone": "a"},
                                         rack_id="rack-b")
            settle(c, app.group, [m1, m2])
            res["two-members"] = describe_cases(c, app, others)
            res["tasks"] = {"m1": sorted(m1.owned), "m2": sorted(m2.owned)}
            tool = {}
            for label, args in (("list", ["--list"]),
                                ("describe", ["--describe", "--group", app.group]),
                                ("members", ["--describe", "--group", app.group, "--members", "--verbose"]),
                                ("state", ["--describe", "--group", app.group, "--state", "--verbose"]),
                                ("offsets", ["--describe", "--group", app.group, "--offsets"])):
                o = tool_view(run_tool(b, *args), b)
                if label in ("members", "describe", "offsets"):
                    # One row per member or per topic-partition, in the order of the
                    # broker's answers; Kafka's follow Java hash order (of member ids, of
                    # random topic ids), which changes from run to run even between two
                    # Kafkas: the rows after the header are compared sorted.
                    o["stdout"] = o["stdout"][:1] + sorted(o["stdout"][1:])
                if label == "list":
                    # Other tests' groups live on the same brokers: keep this test's and any
                    # header line (upper case).
                    o["stdout"] = [x for x in o["stdout"] if x.startswith(name) or x == x.upper()]
                tool[label] = o
                # Keep both members alive while the JVM tools run.
                for m in (m1, m2):
                    assert m.beat()["error_code"] == 0
            res["tool"] = tool
            res["leave-1"] = st.heartbeat(c, app.group, m1.id, -1)
            res["leave-2"] = st.heartbeat(c, app.group, m2.id, -1)
            res["after-leave"] = group_view(st.describe(c, [app.group])["groups"][0])
            out[side] = res
    dump("describe", out["kafka"])
    compare(col, "streams_group_describe", {"groups": [app.group] + others}, out)
    col.done()


def test_initial_rebalance_delay(brokers, name):
    """streams.initial.rebalance.delay.ms=1500 for the group: the first member joins with an
    empty assignment and the ASSIGNMENT_DELAYED status until the delay is over, then is
    assigned; after it left (the group is empty, not new), it joins again."""
    col = Collector()
    app = App(name)
    out = {}
    for side in SIDES:
        with RawClient(brokers[side].bootstrap, client_id="diff-streams") as c:
            create(c, app.src, partitions=2)
            set_group_config(c, app.group, "streams.initial.rebalance.delay.ms", "1500")
            res = {}
            mem = Member(c, app.group, f"{name}-member", "process-1")
            res["join"] = mem.join(app)
            wait_internal_topics(c, app)
            res["describe-delayed"] = group_view(st.describe(c, [app.group])["groups"][0])
            time.sleep(2.0)
            res["after-delay"] = mem.beat()
            time.sleep(ASSIGNMENT_WAIT)
            res["assigned"] = mem.beat()
            res["describe-assigned"] = group_view(st.describe(c, [app.group])["groups"][0])
            res["leave"] = st.heartbeat(c, app.group, mem.id, -1)
            mem.epoch, mem.owned = 0, []
            res["rejoin"] = mem.join(app)
            res["describe-rejoined"] = group_view(st.describe(c, [app.group])["groups"][0])
            res["rejoin-leave"] = st.heartbeat(c, app.group, mem.id, -1)
            out[side] = res
    dump("initial-delay", out["kafka"])
    compare(col, "streams_group_heartbeat/initial-delay", {"group": app.group}, out)
    col.done()
