"""Offset commits checked against per-partition assignment epochs (KIP-1251, Kafka 4.4), the same
raw requests to both brokers and the answers compared:

- A consumer group (KIP-848) on a topic of 4 partitions, server assignor "range", with members
  chosen by the test: a joins and owns everything; b joins and a gives up partitions 2 and 3
  (a stays at its epoch while it revokes, then moves to the new one keeping 0 and 1, which
  keep the epoch they were assigned at); a leaves and b gets 0 and 1 at a newer epoch than its
  own 2 and 3; c joins and b has to give 2 and 3 up (pending revocation) before it moves on.
  At each stage OffsetCommit v9 from the members at their current epoch, at an older epoch
  for partitions they kept, gave up, are revoking or never had, for a mix of those, below the
  assignment epoch, above the member's epoch; an unknown member, a commit without a member
  while the group has members and once it is empty, an unknown topic, OffsetCommit v8 from a
  member (UNSUPPORTED_VERSION), and TxnOffsetCommit v5 (ILLEGAL_GENERATION in place of
  STALE_MEMBER_EPOCH below v6). The heartbeat answers on the way and the offsets that landed
  (OffsetFetch) are compared too.
- A streams group (KIP-1071), two members: commits for the tasks' partitions of the source
  topic and of the repartition topic the second sub-topology reads, of a changelog topic
  (not a source: always stale at an older epoch), at the same epochs as above.
- The absolute epochs of the first joins (with the default assignor and with "range"), kept
  apart so the relative comparisons above do not depend on them.

What Kafka 4.4 does (GroupCoordinator: ConsumerGroup/StreamsGroup.validateOffsetCommit and
OffsetMetadataManager): a commit at the member's current epoch is not checked per partition;
above it, STALE_MEMBER_EPOCH; below it, each partition must be assigned to or pending
revocation from the member at an assignment epoch not above the commit's epoch. The check
throws out of the whole commit, so one bad partition fails every partition of the request
with STALE_MEMBER_EPOCH and none is written: an answer never mixes 0 and 113.

Answers are made deterministic by the waits test_streams_groups.py uses: a group config set
and waited for before the first join (so Kafka's coordinator has seen the topic), and the
assignment interval (1 s, the default on both) waited out before every membership change.
Member ids, group and topic names are the test's, the same on both sides. Epochs are
compared relative to the first member's first epoch ("e+1"); each request is sent at the
same relative epoch on both sides. Topic ids are left out of heartbeat answers.

Checked against two reference brokers (no difference, so the waits make every compared answer
deterministic):
    bash tests/kafka/start.sh 19092 /tmp/k1 && bash tests/kafka/start.sh 19093 /tmp/k2
    DIFF_ATTACH='{"kafka": ["127.0.0.1:19092", "/tmp/k1/logs"], "skiff": ["127.0.0.1:19093", "/tmp/k2/logs"]}' \\
        tests/python/.venv/bin/python -m pytest -q tests/diff/test_assignment_epochs.py
EPOCHS_DIFF_DUMP=1 with -s prints Kafka's answers.
"""

import json
import os
import time

from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.transaction import EndTxnRequest, TxnOffsetCommitRequest

import consumer_proto as cp
import streams_proto as st
from diffutil import Collector
from raw import RawClient, to_plain
from test_errors import create
from test_share_groups import set_group_config, topic_id
from test_streams_groups import ASSIGNMENT_WAIT, App, Member, settle, wait_internal_topics
from test_transactions_v2 import init_producer, retrying

SIDES = ("kafka", "skiff")
OK, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION, STALE = 0, 22, 25, 35, 113


def dump(test, out):
    """EPOCHS_DIFF_DUMP=1 (with pytest -s) prints Kafka's answers."""
    if os.environ.get("EPOCHS_DIFF_DUMP"):
        print(f"\n==== {test}\n" + json.dumps(out, indent=1, default=str, sort_keys=True))


def compare(col, prefix, request, out):
    for case in out["kafka"]:
        col.check(f"{prefix}/{case}", request | {"case": case}, out["kafka"][case], out["skiff"].get(case, "<absent>"))


def rel(epoch, base):
    """An epoch relative to `base` ("e+1"); 0 and the negative ones stay as they are."""
    return f"e{epoch - base:+d}" if epoch > 0 else epoch


# ---- requests ----

def commit(c, group, member, epoch, topic, partitions, version=9, offset=1):
    """OffsetCommit; [(partition, error code)] in the answer's order. Partition p commits
    offset + p, so OffsetFetch shows which commits landed."""
    O = OffsetCommitRequest
    r = c.send(O, version, group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
               group_instance_id=None, topics=[O.OffsetCommitRequestTopic(name=topic, partitions=[
                   O.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                       partition_index=p, committed_offset=offset + p, committed_leader_epoch=-1,
                       committed_metadata="") for p in partitions])])
    return [[p["partition_index"], p["error_code"]] for t in to_plain(r)["topics"] for p in t["partitions"]]


def txn_commit(c, txid, pid, producer_epoch, group, member, epoch, topic, partitions, offset=1000):
    """TxnOffsetCommit v5 (transaction version 2 adds the group to the transaction itself)."""
    T = TxnOffsetCommitRequest
    r = c.send(T, 5, transactional_id=txid, group_id=group, producer_id=pid, producer_epoch=producer_epoch,
               generation_id=epoch, member_id=member, group_instance_id=None, topics=[
                   T.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                       T.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                           partition_index=p, committed_offset=offset + p, committed_leader_epoch=-1,
                           committed_metadata="") for p in partitions])])
    return [[p["partition_index"], p["error_code"]] for t in to_plain(r)["topics"] for p in t["partitions"]]


def committed(c, group, topic, partitions):
    F = OffsetFetchRequest
    r = to_plain(c.send(F, 7, group_id=group, require_stable=False, topics=[
        F.OffsetFetchRequestTopic(name=topic, partition_indexes=list(partitions))]))
    return {"error_code": r["error_code"], "offsets": sorted(
        [p["partition_index"], p["committed_offset"], p["error_code"]] for t in r["topics"] for p in t["partitions"])}


def codes(answer):
    return {code for _, code in answer}


# ---- a consumer-protocol member ----

class ConsumerMember:
    """One raw KIP-848 member: its id, last epoch and the partitions it owns. Like a consumer,
    it takes what each answer's assignment gives (revoking what the assignment no longer
    has) and reports what it owns on the next heartbeat."""

    def __init__(self, c, group, member_id, topic, tid):
        self.c, self.group, self.id, self.topic, self.tid = c, group, member_id, topic, tid
        self.epoch = 0
        self.owned = []

    def join(self, assignor="range", timeout=20.0):
        deadline = time.monotonic() + timeout
        while True:
            h = cp.heartbeat(self.c, self.group, self.id, 0, rebalance_timeout_ms=30000, subscribed=[self.topic],
                             server_assignor=assignor, owned={})
            if h["error_code"] not in (14, 15, 16) or time.monotonic() > deadline:
                break
            self.c.send(FindCoordinatorRequest, 4, key_type=0, coordinator_keys=[self.group])
            time.sleep(0.3)
        return self._take(h)

    def beat(self):
        return self._take(cp.heartbeat(self.c, self.group, self.id, self.epoch,
                                       owned={self.tid: self.owned} if self.owned else {}))

    def leave(self):
        return cp.heartbeat(self.c, self.group, self.id, -1)

    def _take(self, h):
        if h["error_code"] == 0:
            self.epoch = h["member_epoch"]
            if h["assignment"] is not None:
                self.owned = sorted(p for t in h["assignment"]["topic_partitions"] for p in t["partitions"])
        return h


def hb_view(h, base):
    """A heartbeat answer with its epoch relative to `base` and its assignment as sorted
    partitions (one topic), without topic ids."""
    out = {k: h[k] for k in ("error_code", "error_message", "member_id", "heartbeat_interval_ms")}
    out["member_epoch"] = rel(h["member_epoch"], base)
    a = h["assignment"]
    out["assignment"] = None if a is None else sorted(p for t in a["topic_partitions"] for p in t["partitions"])
    return out


def consumer_scenario(c, name):
    """The consumer-group story on one broker: {case: observable answer}."""
    topic, group = f"{name}-t", f"{name}-g"
    create(c, topic, partitions=4)
    tid = topic_id(c, topic)
    # Also makes Kafka's coordinator see the topic before the first join.
    set_group_config(c, group, "consumer.session.timeout.ms", "60000")
    a, b, m_c = (ConsumerMember(c, group, f"{name}-{x}", topic, tid) for x in "abc")
    res = {}

    # Stage 1: a alone owns the 4 partitions at its first epoch, the base of every label.
    h = a.join()
    assert h["error_code"] == 0 and a.owned == [0, 1, 2, 3], h
    base = e1 = a.epoch
    res["a-join"] = hb_view(h, base)
    res["a-steady"] = hb_view(a.beat(), base)

    def at(member, epoch, partitions, **kw):
        return commit(c, group, member.id if hasattr(member, "id") else member, epoch, topic, partitions, **kw)

    # Stage 2: b joins; a must give up 2 and 3 and stays at its epoch until it does.
    time.sleep(ASSIGNMENT_WAIT)
    res["b-join"] = hb_view(b.join(), base)
    res["a-told-to-revoke"] = hb_view(a.beat(), base)
    res["commit/a-current-while-revoking"] = at(a, e1, [0, 1, 2, 3], offset=10)
    res["commit/a-below-assignment-while-revoking"] = at(a, e1 - 1, [2, 3], offset=20)

    # Stage 3: a revoked; it is at the new epoch keeping 0 and 1 (assigned at e1); b gets 2, 3.
    res["a-revoked"] = hb_view(a.beat(), base)
    res["b-assigned"] = hb_view(b.beat(), base)
    res["owned-stage-3"] = {"a": a.owned, "b": b.owned}
    kept, given = a.owned, [p for p in range(4) if p not in a.owned]
    e2 = a.epoch
    res["commit/a-current-all"] = at(a, e2, [0, 1, 2, 3], offset=30)
    res["commit/a-older-kept"] = at(a, e1, kept, offset=40)
    res["commit/a-older-given-up"] = at(a, e1, given, offset=50)
    res["commit/a-older-mixed"] = at(a, e1, [0, 1, 2, 3], offset=60)
    res["commit/a-below-assignment"] = at(a, e1 - 1, kept, offset=70)
    res["commit/a-newer"] = at(a, e2 + 1, kept, offset=80)
    res["commit/b-older"] = at(b, b.epoch - 1, b.owned, offset=90)
    res["commit/unknown-member"] = at(f"{name}-nobody", e2, [0], offset=100)
    res["commit/no-member-group-not-empty"] = at("", -1, [0], offset=110)
    res["commit/a-older-unknown-topic"] = commit(c, group, a.id, e1, f"{name}-none", [0], offset=120)
    res["committed-stage-3"] = committed(c, group, topic, range(4))
    res["commit/a-current-v8"] = at(a, e2, kept, version=8, offset=130)

    # TxnOffsetCommit v5: the same checks; below v6 Kafka answers ILLEGAL_GENERATION for them.
    txid = f"{name}-tx"
    init = init_producer(c, txid)
    pid, pe = init.producer_id, init.producer_epoch

    def txn(member, epoch, partitions, offset):
        member_id = member.id if hasattr(member, "id") else member
        return txn_commit(c, txid, pid, pe, group, member_id, epoch, topic, partitions, offset=offset)
    res["txn/a-current-all"] = txn(a, e2, [0, 1, 2, 3], 1000)
    res["txn/a-older-kept"] = txn(a, e1, kept, 1010)
    res["txn/a-older-given-up"] = txn(a, e1, given, 1020)
    res["txn/a-older-mixed"] = txn(a, e1, [0, 1, 2, 3], 1030)
    res["txn/a-newer"] = txn(a, e2 + 1, kept, 1040)
    res["txn/unknown-member"] = txn(f"{name}-nobody", e2, [0], 1050)
    res["txn/no-member"] = txn("", -1, [0], 1060)
    end = retrying(lambda: c.send(EndTxnRequest, 5, transactional_id=txid, producer_id=pid, producer_epoch=pe,
                                  committed=False), lambda r: r.error_code)
    assert end.error_code == 0, end

    # Stage 4: a leaves; b gets 0 and 1 at a newer epoch than its 2 and 3.
    time.sleep(ASSIGNMENT_WAIT)
    res["a-leave"] = hb_view(a.leave(), base)
    res["b-gets-all"] = hb_view(b.beat(), base)
    res["b-steady"] = hb_view(b.beat(), base)
    eb2, eb3 = e2, b.epoch
    res["owned-stage-4"] = {"b": b.owned}
    res["commit/a-after-leave"] = at(a, e2, kept, offset=200)
    res["commit/b-older-own-old"] = at(b, eb2, [2, 3], offset=210)
    res["commit/b-older-own-new"] = at(b, eb2, [0, 1], offset=220)
    res["commit/b-older-all"] = at(b, eb2, [0, 1, 2, 3], offset=230)

    # Stage 5: c joins; b must give up 2 and 3 (assigned at eb2) and keeps 0 and 1 (at eb3).
    time.sleep(ASSIGNMENT_WAIT)
    res["c-join"] = hb_view(m_c.join(), base)
    res["b-told-to-revoke"] = hb_view(b.beat(), base)
    res["commit/b-older-pending-revocation"] = at(b, eb2, [2, 3], offset=300)
    res["commit/b-older-kept-newer"] = at(b, eb2, [0, 1], offset=310)
    res["commit/b-current-while-revoking"] = at(b, eb3, [0, 1, 2, 3], offset=320)
    res["commit/c-older-pending-assignment"] = at(m_c, m_c.epoch - 1, [2, 3], offset=330)

    # Stage 6: b revoked and moves on; c gets 2 and 3.
    res["b-revoked"] = hb_view(b.beat(), base)
    res["c-assigned"] = hb_view(m_c.beat(), base)
    res["owned-stage-6"] = {"b": b.owned, "c": m_c.owned}
    res["commit/b-older-revoked"] = at(b, eb2, [2, 3], offset=400)
    res["commit/b-older-kept"] = at(b, eb3, [0, 1], offset=410)
    res["commit/c-older-own"] = at(m_c, m_c.epoch - 1, [2, 3], offset=420)

    # Everyone leaves: a commit without a member is accepted again.
    res["b-leave"] = hb_view(b.leave(), base)
    res["c-leave"] = hb_view(m_c.leave(), base)
    res["commit/no-member-group-empty"] = at("", -1, [0, 1, 2, 3], offset=500)
    res["commit/old-member-group-empty"] = at(b, -1, [0], offset=510)
    res["committed-end"] = committed(c, group, topic, range(4))
    return res


def test_consumer_group_offset_commit_epochs(brokers, name):
    """The consumer-group story (consumer_scenario): every answer compared, and Skiff's codes
    for the key cases checked on their own."""
    col = Collector()
    out = {}
    for side in SIDES:
        with RawClient(brokers[side].bootstrap, client_id="diff-epochs") as c:
            out[side] = consumer_scenario(c, name)
    dump("consumer", out["kafka"])
    compare(col, "assignment_epochs/consumer", {"group": f"{name}-g", "assignor": "range"}, out)
    s = out["skiff"]
    # Skiff's own answers for the key cases, so a failure says what is wrong without Kafka's.
    want = {
        "commit/a-current-all": {OK},
        "commit/a-older-kept": {OK},
        "commit/a-older-given-up": {STALE},
        "commit/a-older-mixed": {STALE},
        "commit/a-below-assignment": {STALE},
        "commit/a-newer": {STALE},
        "commit/b-older": {STALE},
        "commit/unknown-member": {UNKNOWN_MEMBER_ID},
        "commit/a-current-v8": {UNSUPPORTED_VERSION},
        "commit/b-older-own-old": {OK},
        "commit/b-older-own-new": {STALE},
        "commit/b-older-all": {STALE},
        "commit/b-older-pending-revocation": {OK},
        "commit/b-older-revoked": {STALE},
        "commit/no-member-group-empty": {OK},
        "txn/a-older-kept": {OK},
        "txn/a-older-given-up": {ILLEGAL_GENERATION},
        "txn/a-older-mixed": {ILLEGAL_GENERATION},
    }
    got = {case: codes(s[case]) for case in want}
    wrong = {case: f"skiff {sorted(got[case])}, expected {sorted(want[case])}"
             for case in want if got[case] != want[case]}
    if wrong:
        col.errors.append("Skiff's own answers:\n" + "\n".join(f"  {k}: {v}" for k, v in wrong.items()))
    col.done()


def test_consumer_group_join_epochs(brokers, name):
    """The absolute epochs of two joins into a new group, with the default assignor and with
    "range" asked for on the first join (the scenario above compares epochs relative to the
    first one, so a different start shows here only)."""
    col = Collector()
    out = {}
    for side in SIDES:
        with RawClient(brokers[side].bootstrap, client_id="diff-epochs") as c:
            topic = f"{name}-t"
            create(c, topic, partitions=4)
            tid = topic_id(c, topic)
            res = {}
            for assignor in (None, "range"):
                group = f"{name}-{assignor or 'default'}-g"
                set_group_config(c, group, "consumer.session.timeout.ms", "60000")
                a, b = (ConsumerMember(c, group, f"{name}-{x}", topic, tid) for x in "ab")
                first = a.join(assignor=assignor)
                time.sleep(ASSIGNMENT_WAIT)
                second = b.join(assignor=assignor)
                res[str(assignor)] = {"a": [first["error_code"], first["member_epoch"]],
                                      "b": [second["error_code"], second["member_epoch"]]}
                a.leave()
                b.leave()
            out[side] = res
    compare(col, "assignment_epochs/join-epochs", {"topic": f"{name}-t"}, out)
    col.done()


# ---- streams group ----

def task_partitions(tasks, subtopology):
    return sorted(p for sid, ps in tasks if sid == subtopology for p in ps)


def streams_scenario(c, name):
    app = App(name)
    create(c, app.src, partitions=2)
    set_group_config(c, app.group, "streams.initial.rebalance.delay.ms", "0")
    set_group_config(c, app.group, "streams.session.timeout.ms", "60000")
    m1 = Member(c, app.group, f"{name}-member-1", "process-1")
    m2 = Member(c, app.group, f"{name}-member-2", "process-2")
    res = {}
    m1.join(app)
    wait_internal_topics(c, app)
    settle(c, app.group, [m1])
    base = e1 = m1.epoch
    res["m1-tasks-alone"] = sorted(m1.owned)
    m2.join(app)
    settle(c, app.group, [m1, m2])
    e2 = m1.epoch
    res["epochs"] = {"m1": rel(m1.epoch, base), "m2": rel(m2.epoch, base)}
    res["tasks"] = {"m1": sorted(m1.owned), "m2": sorted(m2.owned)}
    src_kept, rep_kept = task_partitions(m1.owned, "0"), task_partitions(m1.owned, "1")
    src_given = [p for p in range(2) if p not in src_kept]
    rep_given = [p for p in range(2) if p not in rep_kept]

    def at(member_id, epoch, topic, partitions, **kw):
        return commit(c, app.group, member_id, epoch, topic, partitions, **kw)
    res["commit/m1-current-all"] = at(m1.id, e2, app.src, [0, 1], offset=10)
    res["commit/m1-current-changelog"] = at(m1.id, e2, app.changelogs[0], [0], offset=15)
    res["commit/m1-older-source-kept"] = at(m1.id, e1, app.src, src_kept, offset=20)
    res["commit/m1-older-source-given-up"] = at(m1.id, e1, app.src, src_given, offset=30)
    res["commit/m1-older-source-all"] = at(m1.id, e1, app.src, [0, 1], offset=40)
    res["commit/m1-older-repartition-kept"] = at(m1.id, e1, app.repartition, rep_kept, offset=50)
    res["commit/m1-older-repartition-given-up"] = at(m1.id, e1, app.repartition, rep_given, offset=60)
    res["commit/m1-older-changelog"] = at(m1.id, e1, app.changelogs[0], [0], offset=70)
    res["commit/m1-below-assignment"] = at(m1.id, e1 - 1, app.src, src_kept, offset=80)
    res["commit/m1-newer"] = at(m1.id, e2 + 1, app.src, src_kept, offset=90)
    res["commit/m2-older"] = at(m2.id, m2.epoch - 1, app.src, task_partitions(m2.owned, "0"), offset=100)
    res["commit/unknown-member"] = at(f"{name}-nobody", e2, app.src, [0], offset=110)
    res["commit/no-member-group-not-empty"] = at("", -1, app.src, [0], offset=120)
    res["committed"] = committed(c, app.group, app.src, range(2))
    res["commit/m1-current-v8"] = at(m1.id, e2, app.src, src_kept, version=8, offset=130)
    res["leave-1"] = st.heartbeat(c, app.group, m1.id, -1)["error_code"]
    res["leave-2"] = st.heartbeat(c, app.group, m2.id, -1)["error_code"]
    res["commit/no-member-group-empty"] = at("", -1, app.src, [0, 1], offset=140)
    res["_kept"] = {"src": src_kept, "repartition": rep_kept}
    return res


def test_streams_group_offset_commit_epochs(brokers, name):
    """The streams-group story (streams_scenario): every answer compared, and Skiff's codes for
    the key cases checked on their own."""
    col = Collector()
    out = {}
    for side in SIDES:
        with RawClient(brokers[side].bootstrap, client_id="diff-epochs") as c:
            out[side] = streams_scenario(c, name)
    dump("streams", out["kafka"])
    compare(col, "assignment_epochs/streams", {"app": f"{name}-app"}, out)
    s = out["skiff"]
    want = {
        "commit/m1-current-all": {OK},
        "commit/m1-older-source-all": {STALE},
        "commit/m1-older-changelog": {STALE},
        "commit/m1-newer": {STALE},
        "commit/unknown-member": {UNKNOWN_MEMBER_ID},
        "commit/m1-current-v8": {UNSUPPORTED_VERSION},
        "commit/no-member-group-empty": {OK},
    }
    # Which tasks m1 keeps is the assignor's choice (compared above); an empty list has no codes.
    for case, kept in (("source", s["_kept"]["src"]), ("repartition", s["_kept"]["repartition"])):
        if kept:
            want[f"commit/m1-older-{case}-kept"] = {OK}
        if len(kept) < 2:
            want[f"commit/m1-older-{case}-given-up"] = {STALE}
    got = {case: codes(s[case]) for case in want}
    wrong = {case: f"skiff {sorted(got[case])}, expected {sorted(want[case])}"
             for case in want if got[case] != want[case]}
    if wrong:
        col.errors.append("Skiff's own answers:\n" + "\n".join(f"  {k}: {v}" for k, v in wrong.items()))
    col.done()
