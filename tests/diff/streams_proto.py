"""Hand-written encoders/decoders for the streams-group requests the differential suite sends
(KIP-1071): StreamsGroupHeartbeat (API 88) and StreamsGroupDescribe (API 89), versions 0 and
1. kafka-python 3.0 has no schemas for them, so they are framed on a RawClient's socket the
way share_proto.py frames the share-group APIs (whose writer, reader and framing are reused):
request header v2, response header v1, every version flexible.

Layouts follow Kafka 4.4's StreamsGroupHeartbeatRequest/Response.json and
StreamsGroupDescribeRequest/Response.json (read from kafka-clients-4.4.0.jar) and agree with
Skiff's codec (crates/skiff-protocol/src/streams/) and its golden tests. What changes with
the version: the heartbeat response carries an int32 AcceptableRecoveryLagLegacy at v0 and an
int64 AcceptableRecoveryLag plus the TopologyDescriptionRequired flag at v1; the describe
request gains IncludeTopologyDescription at v1 and its answer's groups gain
TopologyDescription, TopologyDescriptionStatus and AssignorName. A nullable struct is one
signed byte (-1 null, 1 present) followed by the struct; a non-nullable nested struct is the
struct itself; every struct ends with its (empty) tagged-field section.

Decoders return plain dicts in snake_case and fail if a response has bytes left over.
"""

from share_proto import W, send

HEARTBEAT, DESCRIBE = 88, 89

# Status codes of a heartbeat answer (the Status struct's StatusCode).
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 3, 4, 5


# ---- request side ----

def topic_info(name, partitions=0, replication_factor=0, configs=None):
    """A TopicInfo as the encoder takes it."""
    return {"name": name, "partitions": partitions, "replication_factor": replication_factor,
            "topic_configs": dict(configs or {})}


def subtopology(sid, source_topics=(), source_topic_regex=(), state_changelog_topics=(),
                repartition_sink_topics=(), repartition_source_topics=(), copartition_groups=()):
    """A request Subtopology; copartition_groups are (source idx, regex idx, repartition idx)
    triples of lists."""
    return {"subtopology_id": sid, "source_topics": list(source_topics),
            "source_topic_regex": list(source_topic_regex),
            "state_changelog_topics": list(state_changelog_topics),
            "repartition_sink_topics": list(repartition_sink_topics),
            "repartition_source_topics": list(repartition_source_topics),
            "copartition_groups": list(copartition_groups)}


def _kv(w, kv):
    w.cstr(kv[0]).cstr(kv[1]).tags()


def _topic_info(w, t):
    w.cstr(t["name"]).i32(t["partitions"]).i16(t["replication_factor"])
    w.array(sorted(t["topic_configs"].items()), _kv).tags()


def _task_ids(w, t):
    """(subtopology id, [partitions])"""
    w.cstr(t[0]).array(list(t[1]), lambda w, p: w.i32(p)).tags()


def _task_offset(w, t):
    """(subtopology id, partition, offset)"""
    w.cstr(t[0]).i32(t[1]).i64(t[2]).tags()


def _endpoint(w, e):
    """(host, port); the port is an unsigned 16-bit integer."""
    w.cstr(e[0])
    w.b += int(e[1]).to_bytes(2, "big")
    w.tags()


def _subtopology(w, s):
    w.cstr(s["subtopology_id"])
    w.array(s["source_topics"], lambda w, t: w.cstr(t))
    w.array(s["source_topic_regex"], lambda w, t: w.cstr(t))
    w.array(s["state_changelog_topics"], _topic_info)
    w.array(s["repartition_sink_topics"], lambda w, t: w.cstr(t))
    w.array(s["repartition_source_topics"], _topic_info)

    def cg(w, g):
        for idx in g:
            w.array(list(idx), lambda w, i: w.i16(i))
        w.tags()
    w.array(s["copartition_groups"], cg)
    w.tags()


def _nullable_struct(w, value, write):
    if value is None:
        w.i8(-1)
    else:
        w.i8(1)
        write(w, value)


def heartbeat_body(group_id, member_id, member_epoch, endpoint_information_epoch=0, instance_id=None,
                   rack_id=None, rebalance_timeout_ms=-1, topology=None, active_tasks=None,
                   standby_tasks=None, warmup_tasks=None, process_id=None, user_endpoint=None,
                   client_tags=None, task_offsets=None, task_end_offsets=None, shutdown_application=False):
    """topology: (epoch, [subtopology(...)]) or None; tasks: [(subtopology id, [partitions])];
    user_endpoint: (host, port); client_tags: {key: value}."""
    w = W().cstr(group_id).cstr(member_id).i32(member_epoch).i32(endpoint_information_epoch)
    w.cstr(instance_id).cstr(rack_id).i32(rebalance_timeout_ms)

    def topo(w, t):
        w.i32(t[0]).array(list(t[1]), _subtopology).tags()
    _nullable_struct(w, topology, topo)
    for tasks in (active_tasks, standby_tasks, warmup_tasks):
        w.array(None if tasks is None else list(tasks), _task_ids)
    w.cstr(process_id)
    _nullable_struct(w, user_endpoint, _endpoint)
    w.array(None if client_tags is None else sorted(client_tags.items()), _kv)
    w.array(None if task_offsets is None else list(task_offsets), _task_offset)
    w.array(None if task_end_offsets is None else list(task_end_offsets), _task_offset)
    w.bool(shutdown_application).tags()
    return bytes(w.b)


# ---- response side ----

def _r_kv(r):
    kv = {"key": r.cstr(), "value": r.cstr()}
    r.tags()
    return kv


def _r_endpoint(r):
    host = r.cstr()
    port = int.from_bytes(bytes(r.d[r.p:r.p + 2]), "big")
    r.p += 2
    r.tags()
    return {"host": host, "port": port}


def _r_nullable(r, read):
    return None if r.i8() < 0 else read(r)


def _r_task_ids(r):
    t = {"subtopology_id": r.cstr(), "partitions": r.array(lambda r: r.i32())}
    r.tags()
    return t


def _r_task_offset(r):
    t = {"subtopology_id": r.cstr(), "partition": r.i32(), "offset": r.i64()}
    r.tags()
    return t


def _r_topic_info(r):
    t = {"name": r.cstr(), "partitions": r.i32(), "replication_factor": r.i16(),
         "topic_configs": r.array(_r_kv)}
    r.tags()
    return t


def _r_topic_partition(r):
    t = {"topic": r.cstr(), "partitions": r.array(lambda r: r.i32())}
    r.tags()
    return t


def heartbeat(rc, group_id, member_id, member_epoch, version=1, **fields):
    """Sends a StreamsGroupHeartbeat (fields as heartbeat_body's) and decodes the answer."""
    r = send(rc, HEARTBEAT, version, heartbeat_body(group_id, member_id, member_epoch, **fields))
    out = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "error_message": r.cstr(),
           "member_id": r.cstr(), "member_epoch": r.i32(), "heartbeat_interval_ms": r.i32()}
    if version == 0:
        out["acceptable_recovery_lag_legacy"] = r.i32()
    out["task_offset_interval_ms"] = r.i32()
    if version >= 1:
        out["acceptable_recovery_lag"] = r.i64()

    def status(r):
        s = {"status_code": r.i8(), "status_detail": r.cstr()}
        r.tags()
        return s
    out["status"] = r.array(status)
    out["active_tasks"] = r.array(_r_task_ids)
    out["standby_tasks"] = r.array(_r_task_ids)
    out["warmup_tasks"] = r.array(_r_task_ids)
    if version >= 1:
        out["topology_description_required"] = r.bool()
    out["endpoint_information_epoch"] = r.i32()

    def e2p(r):
        e = {"user_endpoint": _r_endpoint(r), "active_partitions": r.array(_r_topic_partition),
             "standby_partitions": r.array(_r_topic_partition)}
        r.tags()
        return e
    out["partitions_by_user_endpoint"] = r.array(e2p)
    r.tags()
    r.end()
    return out


def describe(rc, group_ids, include_authorized_operations=False, include_topology_description=False, version=1):
    w = W().array(list(group_ids), lambda w, g: w.cstr(g)).bool(include_authorized_operations)
    if version >= 1:
        w.bool(include_topology_description)
    w.tags()
    r = send(rc, DESCRIBE, version, bytes(w.b))

    def subtopology(r):
        s = {"subtopology_id": r.cstr(), "source_topics": r.array(lambda r: r.cstr()),
             "repartition_sink_topics": r.array(lambda r: r.cstr()),
             "state_changelog_topics": r.array(_r_topic_info),
             "repartition_source_topics": r.array(_r_topic_info)}
        r.tags()
        return s

    def topology(r):
        t = {"epoch": r.i32(), "subtopologies": r.array(subtopology)}
        r.tags()
        return t

    def assignment(r):
        a = {"active_tasks": r.array(_r_task_ids), "standby_tasks": r.array(_r_task_ids),
             "warmup_tasks": r.array(_r_task_ids)}
        r.tags()
        return a

    def member(r):
        m = {"member_id": r.cstr(), "member_epoch": r.i32(), "instance_id": r.cstr(), "rack_id": r.cstr(),
             "client_id": r.cstr(), "client_host": r.cstr(), "topology_epoch": r.i32(),
             "process_id": r.cstr(), "user_endpoint": _r_nullable(r, _r_endpoint),
             "client_tags": r.array(_r_kv), "task_offsets": r.array(_r_task_offset),
             "task_end_offsets": r.array(_r_task_offset), "assignment": assignment(r),
             "target_assignment": assignment(r), "is_classic": r.bool()}
        r.tags()
        return m

    def node(r):
        n = {"name": r.cstr(), "node_type": r.i8(), "source_topics": r.array(lambda r: r.cstr()),
             "sink_topic": r.cstr(), "stores": r.array(lambda r: r.cstr()),
             "successors": r.array(lambda r: r.cstr())}
        r.tags()
        return n

    def description(r):
        def sub(r):
            s = {"subtopology_id": r.cstr(), "nodes": r.array(node)}
            r.tags()
            return s

        def glob(r):
            g = {"source": node(r), "processor": node(r)}
            r.tags()
            return g
        d = {"subtopologies": r.array(sub), "global_stores": r.array(glob)}
        r.tags()
        return d

    def group(r):
        g = {"error_code": r.i16(), "error_message": r.cstr(), "group_id": r.cstr(), "group_state": r.cstr(),
             "group_epoch": r.i32(), "assignment_epoch": r.i32(), "topology": _r_nullable(r, topology),
             "members": r.array(member), "authorized_operations": r.i32()}
        if version >= 1:
            g["topology_description"] = _r_nullable(r, description)
            g["topology_description_status"] = r.i8()
            g["assignor_name"] = r.cstr()
        r.tags()
        return g

    out = {"throttle_time_ms": r.i32(), "groups": r.array(group)}
    r.tags()
    r.end()
    return out
