"""Transaction version 2 (KIP-890 part 2) on the wire, Skiff against Kafka 4.4: EndTxn v5's
answers (the bumped epoch, retries after the bump, the abort of an empty transaction), the
implicit adds of Produce v12 and TxnOffsetCommit v5, and the codes a producer left at the old
epoch gets. Producer ids differ between brokers, so each answer's id is reported relative to
the id InitProducerId gave ("same", "none" for -1, "other")."""

import time

from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import (AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest,
                                                 InitProducerIdRequest, TxnOffsetCommitRequest)
from kafka.record.default_records import DefaultRecordBatchBuilder

from diffutil import Collector
from raw import RawClient
from test_errors import create

# Retriable while a coordinator loads or a transaction completes; anything else is an answer.
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR (Kafka creates
# __transaction_state after the first FindCoordinator), CONCURRENT_TRANSACTIONS.
RETRIABLE = {14, 15, 16, 51}


def retrying(fn, code_of, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        r = fn()
        if code_of(r) not in RETRIABLE or time.monotonic() > deadline:
            return r
        time.sleep(0.1)


def leader_ready(fn, timeout=30.0):
    """fn() until its error code is not UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER:
    Kafka's replica manager may take the new partition's leadership a moment after Metadata
    shows it."""
    deadline = time.monotonic() + timeout
    while True:
        code = fn()
        if code not in (3, 6) or time.monotonic() > deadline:
            return code
        time.sleep(0.1)


def txn_batch(pid, epoch, seq):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
    b.append(0, timestamp=1_700_000_000_000, key=b"k", value=b"v", headers=[])
    return bytes(b.build())


def init_producer(c, txid, timeout_ms=60000):
    """FindCoordinator for `txid` (creating __transaction_state), then InitProducerId v5."""
    fc = retrying(lambda: c.send(FindCoordinatorRequest, 4, key_type=1, coordinator_keys=[txid]),
                  lambda r: r.coordinators[0].error_code)
    assert fc.coordinators[0].error_code == 0, fc
    init = retrying(lambda: c.send(InitProducerIdRequest, 5, transactional_id=txid, transaction_timeout_ms=timeout_ms,
                                   producer_id=-1, producer_epoch=-1), lambda r: r.error_code)
    assert init.error_code == 0, init
    return init


def scenario(c, name):
    """The whole TV2 story on one broker: {step: observable answer}."""
    txid = f"{name}-tx"
    create(c, name, partitions=2)
    init = init_producer(c, txid)
    pid, e0 = init.producer_id, init.producer_epoch

    def who(p):
        return "none" if p == -1 else "same" if p == pid else "other"

    def produce(version, partition, epoch, seq):
        P = ProduceRequest
        r = c.send(P, version, transactional_id=txid, acks=-1, timeout_ms=10000, topic_data=[
            P.TopicProduceData(name=name, partition_data=[
                P.TopicProduceData.PartitionProduceData(index=partition, records=txn_batch(pid, epoch, seq))])])
        return r.responses[0].partition_responses[0].error_code

    def end(version, epoch, commit, producer_id=None):
        r = retrying(lambda: c.send(EndTxnRequest, version, transactional_id=txid,
                                    producer_id=pid if producer_id is None else producer_id,
                                    producer_epoch=epoch, committed=commit), lambda r: r.error_code)
        out = {"error_code": r.error_code}
        if version >= 5:
            out["producer"] = who(r.producer_id)
            out["epoch_delta"] = r.producer_epoch - e0 if r.producer_epoch != -1 else None
        return out

    def offsets(epoch, offset):
        T = TxnOffsetCommitRequest
        r = c.send(T, 5, transactional_id=txid, group_id=f"{name}-g", producer_id=pid, producer_epoch=epoch,
                   generation_id=-1, member_id="", group_instance_id=None, topics=[
                       T.TxnOffsetCommitRequestTopic(name=name, partitions=[
                           T.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                               partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                               committed_metadata="")])])
        return r.topics[0].partitions[0].error_code

    out = {"init_epoch": e0}
    out["produce_v12_no_add"] = leader_ready(lambda: produce(12, 0, e0, 0))
    out["txn_offset_commit_v5_no_add"] = offsets(e0, 5)
    out["commit"] = end(5, e0, True)
    out["commit_retry_old_epoch"] = end(5, e0, True)
    out["abort_old_epoch_after_commit"] = end(5, e0, False)
    out["end_v4_old_epoch"] = end(4, e0, True)
    out["zombie_produce_v12"] = produce(12, 1, e0, 0)
    out["zombie_txn_offset_commit_v5"] = offsets(e0, 6)
    e1 = e0 + 1
    out["produce_v12_new_epoch"] = produce(12, 1, e1, 0)
    out["abort"] = end(5, e1, False)
    out["abort_of_nothing"] = end(5, e1 + 1, False)
    out["commit_of_nothing"] = end(5, e1 + 2, True)
    out["end_unknown_producer_id"] = end(5, e1 + 2, True, producer_id=pid + 1000)
    out["produce_v11_without_add"] = produce(11, 0, e1 + 2, 0)
    return out


def test_transaction_version_2(brokers, name):
    got = {}
    for side in ("kafka", "skiff"):
        with RawClient(brokers[side].bootstrap) as c:
            got[side] = scenario(c, name)
    col = Collector()
    for step in got["kafka"]:
        col.check(f"transactions_v2/{step}", {"step": step}, got["kafka"][step], got["skiff"][step])
    col.done()


def timeout_scenario(c, name):
    """A TV2 transaction left open past its timeout: the coordinator's abort leaves the
    producer two epochs behind (fence, then the TV2 bump), so its own abort is fenced while one
    epoch behind reads as a retry of the abort."""
    txid = f"{name}-tx"
    create(c, name, partitions=1)
    init = init_producer(c, txid, timeout_ms=1000)
    pid, e0 = init.producer_id, init.producer_epoch
    b = txn_batch(pid, e0, 0)
    P = ProduceRequest
    out = {"produce": leader_ready(lambda: c.send(P, 12, transactional_id=txid, acks=-1, timeout_ms=10000, topic_data=[
        P.TopicProduceData(name=name, partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=b)])])
        .responses[0].partition_responses[0].error_code)}
    # The abort check runs every transaction.abort.timed.out.transaction.cleanup.interval.ms
    # (10 s by default on both brokers).
    deadline = time.monotonic() + 40
    while True:
        d = c.send(DescribeTransactionsRequest, 0, transactional_ids=[txid]).transaction_states[0]
        if d.transaction_state == "CompleteAbort" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    out["state"] = d.transaction_state
    out["epoch_delta"] = d.producer_epoch - e0

    def end(epoch, commit):
        r = c.send(EndTxnRequest, 5, transactional_id=txid, producer_id=pid, producer_epoch=epoch, committed=commit)
        return {"error_code": r.error_code,
                "epoch_delta": r.producer_epoch - e0 if r.producer_epoch != -1 else None}

    out["abort_by_the_timed_out_producer"] = end(e0, False)
    out["commit_by_the_timed_out_producer"] = end(e0, True)
    out["abort_one_epoch_behind"] = end(e0 + 1, False)
    return out


def test_transaction_version_2_timeout_abort(brokers, name):
    got = {}
    for side in ("kafka", "skiff"):
        with RawClient(brokers[side].bootstrap) as c:
            got[side] = timeout_scenario(c, name)
    col = Collector()
    for step in got["kafka"]:
        col.check(f"transactions_v2_timeout/{step}", {"step": step}, got["kafka"][step], got["skiff"][step])
    col.done()


def reinit_scenario(c, name):
    """A second InitProducerId while a TV2 transaction is open: the open transaction is
    aborted (its marker written) and the new instance gets the next epoch."""
    txid = f"{name}-tx"
    create(c, name, partitions=1)
    init = init_producer(c, txid)
    pid, e0 = init.producer_id, init.producer_epoch
    P = ProduceRequest
    out = {"produce": leader_ready(lambda: c.send(P, 12, transactional_id=txid, acks=-1, timeout_ms=10000, topic_data=[
        P.TopicProduceData(name=name, partition_data=[
            P.TopicProduceData.PartitionProduceData(index=0, records=txn_batch(pid, e0, 0))])])
        .responses[0].partition_responses[0].error_code)}
    again = init_producer(c, txid)
    out["reinit"] = {"error_code": again.error_code, "same_id": again.producer_id == pid,
                     "epoch_delta": again.producer_epoch - e0}
    r = c.send(EndTxnRequest, 5, transactional_id=txid, producer_id=pid, producer_epoch=e0, committed=True)
    out["commit_by_the_old_instance"] = r.error_code
    d = c.send(DescribeTransactionsRequest, 0, transactional_ids=[txid]).transaction_states[0]
    out["state"] = d.transaction_state
    return out


def test_transaction_version_2_reinit_aborts_the_open_transaction(brokers, name):
    got = {}
    for side in ("kafka", "skiff"):
        with RawClient(brokers[side].bootstrap) as c:
            got[side] = reinit_scenario(c, name)
    col = Collector()
    for step in got["kafka"]:
        col.check(f"transactions_v2_reinit/{step}", {"step": step}, got["kafka"][step], got["skiff"][step])
    col.done()


def explicit_adds_scenario(c, name):
    """The version 0 requests (AddPartitionsToTxn v3, AddOffsetsToTxn) from a producer that
    ends its transactions with EndTxn v5: accepted, and the EndTxn still bumps."""
    txid = f"{name}-tx"
    create(c, name, partitions=1)
    init = init_producer(c, txid)
    pid, e0 = init.producer_id, init.producer_epoch
    A = AddPartitionsToTxnRequest
    r = retrying(lambda: c.send(A, 3, v3_and_below_transactional_id=txid, v3_and_below_producer_id=pid,
                                v3_and_below_producer_epoch=e0, v3_and_below_topics=[
                                    A.AddPartitionsToTxnTopic(name=name, partitions=[0])]),
                 lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)
    out = {"add_partitions_v3": r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code}
    r = retrying(lambda: c.send(AddOffsetsToTxnRequest, 4, transactional_id=txid, producer_id=pid, producer_epoch=e0,
                                group_id=f"{name}-g"), lambda r: r.error_code)
    out["add_offsets_v4"] = r.error_code
    d = c.send(DescribeTransactionsRequest, 0, transactional_ids=[txid]).transaction_states[0]
    out["partitions"] = sorted(len(t.partitions) for t in d.topics)
    r = retrying(lambda: c.send(EndTxnRequest, 5, transactional_id=txid, producer_id=pid, producer_epoch=e0,
                                committed=True), lambda r: r.error_code)
    out["commit_v5"] = {"error_code": r.error_code, "epoch_delta": r.producer_epoch - e0}
    # The old epoch on AddPartitionsToTxn after the bump, once the markers are written (Kafka
    # answers EndTxn before its markers go out and says CONCURRENT_TRANSACTIONS until then;
    # Skiff answers after them, so it never shows that window).
    deadline = time.monotonic() + 30
    while c.send(DescribeTransactionsRequest, 0, transactional_ids=[txid]).transaction_states[0] \
            .transaction_state != "CompleteCommit" and time.monotonic() < deadline:
        time.sleep(0.1)
    r = c.send(A, 3, v3_and_below_transactional_id=txid, v3_and_below_producer_id=pid,
               v3_and_below_producer_epoch=e0, v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=name, partitions=[0])])
    out["add_partitions_v3_old_epoch"] = r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
    return out


def test_transaction_version_2_with_explicit_adds(brokers, name):
    got = {}
    for side in ("kafka", "skiff"):
        with RawClient(brokers[side].bootstrap) as c:
            got[side] = explicit_adds_scenario(c, name)
    col = Collector()
    for step in got["kafka"]:
        col.check(f"transactions_v2_explicit/{step}", {"step": step}, got["kafka"][step], got["skiff"][step])
    col.done()
