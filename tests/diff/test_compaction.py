"""What a consumer reads from a compacted topic after cleaning, compared: the same batches
(raw Produce, so byte-identical input) go to both brokers, both clean (tombstones are removed
after delete.retention.ms on a later pass), and the (offset, key, value) lists read from
offset 0, the log start and the high watermark must be the same."""

import time

from confluent_kafka import Consumer, TopicPartition

from diffutil import check
from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from raw import RawClient
from test_errors import create, list_offsets

KEYS = 12
ROUNDS = 4
TOMBSTONED = {"key-0", "key-5"}
TOPIC_CONFIGS = [("cleanup.policy", "compact"), ("segment.ms", "100"), ("min.cleanable.dirty.ratio", "0.01"),
                 ("delete.retention.ms", "100"), ("min.compaction.lag.ms", "0")]


def produce(c, topic, records):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (k, v) in enumerate(records):
        b.append(i, timestamp=int(time.time() * 1000), key=k.encode(), value=None if v is None else v.encode(),
                 headers=[])
    P = ProduceRequest
    r = c.send(P, 9, transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=bytes(b.build()))])])
    err = r.responses[0].partition_responses[0].error_code
    assert err == 0, f"produce to {topic}: error {err}"


def read_all(bootstrap, topic, timeout=20.0):
    """[(offset, key, value)] from offset 0 up to the high watermark."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    try:
        tp = TopicPartition(topic, 0)
        _, high = c.get_watermark_offsets(tp, timeout=10)
        out = []
        if high == 0:
            return out
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    if out and out[-1][0] >= high - 1 or not out:
                        break
                    continue
                raise RuntimeError(f"read {topic}: {m.error()}")
            out.append((m.offset(), m.key().decode() if m.key() else None,
                        None if m.value() is None else m.value().decode()))
            if m.offset() >= high - 1:
                break
        return out
    finally:
        c.close()


def cleaned(records):
    """True when the readout is the fully cleaned log: one record per live key, no tombstones.
    The marker key is left out: its latest write is in the active segment, which no cleaner
    touches, and the test keeps writing it."""
    data = [(k, v) for _, k, v in records if k != "marker"]
    keys = [k for k, _ in data]
    return len(keys) == len(set(keys)) and not any(v is None for _, v in data)


def test_compacted_topic_after_cleaning(brokers, name):
    for side in ("kafka", "skiff"):
        with RawClient(brokers[side].bootstrap) as c:
            r = create(c, name, configs=TOPIC_CONFIGS)
            assert r["error_code"] == 0, r
    # Same produce sequence on both, interleaved so both see the same timing.
    clients = {s: RawClient(brokers[s].bootstrap) for s in ("kafka", "skiff")}
    try:
        steps = [[(f"key-{k}", f"r{r}-key-{k}") for k in range(KEYS)] for r in range(ROUNDS)]
        steps.append([(k, None) for k in sorted(TOMBSTONED)])
        steps.append([("marker", "end")])  # rolls the segment holding everything above
        for records in steps:
            for c in clients.values():
                produce(c, name, records)
            time.sleep(0.2)
        results = {}
        deadline = time.monotonic() + 90
        rolled = 0
        while time.monotonic() < deadline:
            results = {s: read_all(brokers[s].bootstrap, name) for s in clients}
            if all(cleaned(r) for r in results.values()):
                break
            # Tombstones go on a later cleaning pass, after delete.retention.ms: a new write
            # rolls the segment again so the cleaner has dirty data to run for.
            if rolled < 20:
                rolled += 1
                for c in clients.values():
                    produce(c, name, [("marker", f"end-{rolled}")])
            time.sleep(1.0)
        starts = {s: list_offsets(clients[s], name, 0, -2)[0]["partitions"][0]["offset"] for s in clients}
        ends = {s: list_offsets(clients[s], name, 0, -1)[0]["partitions"][0]["offset"] for s in clients}
    finally:
        for c in clients.values():
            c.close()
    want = {f"key-{k}": f"r{ROUNDS - 1}-key-{k}" for k in range(KEYS) if f"key-{k}" not in TOMBSTONED}
    live = {s: {k: v for _, k, v in r if k != "marker"} for s, r in results.items()}

    def summary(s):
        return {"fully_cleaned": cleaned(results[s]), "key_value_map": live[s], "matches_expected": live[s] == want,
                "records": [list(x) for x in results[s] if x[1] != "marker"], "log_start": starts[s],
                "high_watermark": ends[s]}
    check("compaction/after-cleaning", {"topic_configs": TOPIC_CONFIGS, "rounds": ROUNDS, "keys": KEYS,
                                        "tombstoned": sorted(TOMBSTONED)}, summary("kafka"), summary("skiff"))
    assert live["kafka"] == want, f"reference Kafka did not clean as expected: {results['kafka']}"
