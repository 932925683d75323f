"""Hand-written encoder/decoder for ConsumerGroupHeartbeat (API 68, KIP-848), versions 0 and 1,
which kafka-python 3.0 (the suite's protocol library, raw.py) has no schema for. Framed on a
RawClient's socket with share_proto.py's writer, reader and framing: request header v2,
response header v1, every version flexible.

Layout from Kafka 4.4's ConsumerGroupHeartbeatRequest/Response.json (kafka-clients-4.4.0.jar):
v1 adds SubscribedTopicRegex after SubscribedTopicNames (and has the client choose its member
id, KIP-1082); the answer is the same at both versions. The Assignment is a nullable struct:
one signed byte (-1 null, 1 present), then its TopicPartitions and an empty tagged-field
section.

The decoder returns a plain dict in snake_case and fails if the answer has bytes left over.
"""

from share_proto import W, send

HEARTBEAT = 68


def heartbeat(rc, group_id, member_id, member_epoch, version=1, instance_id=None, rack_id=None,
              rebalance_timeout_ms=-1, subscribed=None, regex=None, server_assignor=None, owned=None):
    """owned: {topic_id: [partitions]} (the TopicPartitions the member reports it owns), or
    None when unchanged since the last heartbeat; subscribed: topic names, or None."""
    w = W().cstr(group_id).cstr(member_id).i32(member_epoch).cstr(instance_id).cstr(rack_id)
    w.i32(rebalance_timeout_ms).array(None if subscribed is None else list(subscribed), lambda w, t: w.cstr(t))
    if version >= 1:
        w.cstr(regex)
    w.cstr(server_assignor)

    def tp(w, item):
        w.uuid(item[0]).array(sorted(item[1]), lambda w, p: w.i32(p)).tags()
    w.array(None if owned is None else list(owned.items()), tp).tags()
    r = send(rc, HEARTBEAT, version, bytes(w.b))
    out = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "error_message": r.cstr(),
           "member_id": r.cstr(), "member_epoch": r.i32(), "heartbeat_interval_ms": r.i32()}
    if r.i8() < 0:
        out["assignment"] = None
    else:
        def tps(r):
            t = {"topic_id": r.uuid(), "partitions": r.array(lambda r: r.i32())}
            r.tags()
            return t
        out["assignment"] = {"topic_partitions": r.array(tps)}
        r.tags()
    r.tags()
    r.end()
    return out
