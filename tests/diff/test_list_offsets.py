"""ListOffsets answers compared: the same batches (explicit, non-monotonic timestamps) written
with raw Produce to both brokers, then earliest / latest / max-timestamp / earliest-local and
by-time lookups at several versions and both isolation levels."""

from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from diffutil import Collector
from test_errors import both, create, list_offsets

T0 = 1_700_000_000_000
# Three batches; record timestamps (ms after T0) are not in offset order.
BATCHES = [[0, 5000, 2000], [3000, 3000, 1000], [7000, 6000]]


def batch(offsets_ts):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, ts in enumerate(offsets_ts):
        b.append(i, timestamp=T0 + ts, key=b"k%d" % i, value=b"v%d" % ts, headers=[])
    return bytes(b.build())


def produce_all(c, topic):
    P = ProduceRequest
    for ts in BATCHES:
        r = c.send(P, 9, transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[P.TopicProduceData(
            name=topic, partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=batch(ts))])])
        assert r.responses[0].partition_responses[0].error_code == 0


def test_list_offsets_answers(brokers, name):
    col = Collector()
    both(brokers, lambda c: (create(c, name), produce_all(c, name)))
    specs = [-2, -1, -3, -4, T0 - 1, T0, T0 + 1, T0 + 2500, T0 + 5000, T0 + 6500, T0 + 7000, T0 + 7001]
    for version in (1, 4, 7, 8, 9):
        for ts in specs:
            if ts == -3 and version < 7 or ts == -4 and version < 8:
                continue
            for iso in ((0, 1) if version >= 2 else (0,)):
                got = both(brokers, lambda c: list_offsets(c, name, 0, ts, version=version, isolation=iso))
                col.check(f"list_offsets/v{version}/ts{ts if ts < 0 else ts - T0:+d}/iso{iso}",
                          {"version": version, "timestamp": ts, "isolation_level": iso}, got["kafka"], got["skiff"])
    # An empty topic.
    both(brokers, lambda c: create(c, f"{name}-empty"))
    for ts in (-2, -1, -3, T0):
        got = both(brokers, lambda c: list_offsets(c, f"{name}-empty", 0, ts))
        col.check(f"list_offsets/empty/ts{ts}", {"topic": "empty", "timestamp": ts}, got["kafka"], got["skiff"])
    col.done()
