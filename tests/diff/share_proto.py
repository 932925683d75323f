"""Hand-written encoders/decoders for the share-group requests the differential suite sends
(KIP-932): ShareGroupHeartbeat v1, ShareGroupDescribe v1, ShareFetch v1 and ShareAcknowledge
v1. kafka-python 3.0 (the suite's protocol library, raw.py) has no schemas for these APIs, so
they are framed here on a RawClient's socket: request header v2, response header v1, every
version flexible (compact strings and arrays, empty tagged-field sections).

Decoders return plain dicts (field names in snake_case, as raw.to_plain gives for the other
APIs) and fail if a response has bytes left over, so a wrong layout shows at once.
"""

import struct
import uuid

HEARTBEAT, DESCRIBE, FETCH, ACK = 76, 77, 78, 79


class W:
    def __init__(self):
        self.b = bytearray()

    def i8(self, v):
        self.b += struct.pack(">b", v)
        return self

    def i16(self, v):
        self.b += struct.pack(">h", v)
        return self

    def i32(self, v):
        self.b += struct.pack(">i", v)
        return self

    def i64(self, v):
        self.b += struct.pack(">q", v)
        return self

    def bool(self, v):
        return self.i8(1 if v else 0)

    def uvarint(self, v):
        while True:
            byte = v & 0x7F
            v >>= 7
            if v:
                self.b.append(byte | 0x80)
            else:
                self.b.append(byte)
                return self

    def cstr(self, s):
        """Compact nullable string (None -> null)."""
        if s is None:
            return self.uvarint(0)
        raw = s.encode()
        self.uvarint(len(raw) + 1)
        self.b += raw
        return self

    def uuid(self, u):
        self.b += u.bytes if isinstance(u, uuid.UUID) else bytes(u)
        return self

    def array(self, items, each):
        """Compact nullable array (None -> null); each(writer, item) writes one element."""
        if items is None:
            return self.uvarint(0)
        self.uvarint(len(items) + 1)
        for it in items:
            each(self, it)
        return self

    def tags(self):
        return self.uvarint(0)


class R:
    def __init__(self, data):
        self.d, self.p = data, 0

    def _take(self, fmt, n):
        (v,) = struct.unpack_from(fmt, self.d, self.p)
        self.p += n
        return v

    def i8(self):
        return self._take(">b", 1)

    def i16(self):
        return self._take(">h", 2)

    def i32(self):
        return self._take(">i", 4)

    def i64(self):
        return self._take(">q", 8)

    def bool(self):
        return self.i8() != 0

    def uvarint(self):
        shift = v = 0
        while True:
            byte = self.d[self.p]
            self.p += 1
            v |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return v
            shift += 7

    def cstr(self):
        n = self.uvarint()
        if n == 0:
            return None
        s = self.d[self.p:self.p + n - 1].decode()
        self.p += n - 1
        return s

    def cbytes(self):
        n = self.uvarint()
        if n == 0:
            return None
        b = self.d[self.p:self.p + n - 1]
        self.p += n - 1
        return bytes(b)

    def uuid(self):
        u = uuid.UUID(bytes=bytes(self.d[self.p:self.p + 16]))
        self.p += 16
        return u

    def array(self, each):
        n = self.uvarint()
        if n == 0:
            return None
        return [each(self) for _ in range(n - 1)]

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            size = self.uvarint()
            self.p += size

    def end(self):
        if self.p != len(self.d):
            raise ValueError(f"{len(self.d) - self.p} bytes left after decoding the response")


def send(rc, api_key, version, body: bytes) -> R:
    """Frames `body` with a v2 request header on RawClient `rc`'s socket; returns a reader on
    the response body (after the v1 response header)."""
    rc.correlation += 1
    cid = rc.client_id.encode()
    hdr = struct.pack(">hhih", api_key, version, rc.correlation, len(cid)) + cid + b"\x00"
    msg = hdr + body
    rc.sock.sendall(struct.pack(">i", len(msg)) + msg)
    (size,) = struct.unpack(">i", rc._read_exact(4))
    r = R(rc._read_exact(size))
    corr = r.i32()
    if corr != rc.correlation:
        raise ValueError(f"correlation id {corr}, expected {rc.correlation}")
    r.tags()
    return r


# ---- ShareGroupHeartbeat v1 ----

def heartbeat(rc, group_id, member_id, member_epoch, subscribed=None, rack_id=None, version=1):
    w = W().cstr(group_id).cstr(member_id).i32(member_epoch).cstr(rack_id)
    w.array(subscribed, lambda w, t: w.cstr(t)).tags()
    r = send(rc, HEARTBEAT, version, bytes(w.b))
    out = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "error_message": r.cstr(),
           "member_id": r.cstr(), "member_epoch": r.i32(), "heartbeat_interval_ms": r.i32()}
    present = r.i8()
    if present < 0:
        out["assignment"] = None
    else:
        def tp(r):
            t = {"topic_id": r.uuid(), "partitions": r.array(lambda r: r.i32())}
            r.tags()
            return t
        out["assignment"] = {"topic_partitions": r.array(tp)}
        r.tags()
    r.tags()
    r.end()
    return out


# ---- ShareGroupDescribe v1 ----

def describe(rc, group_ids, include_authorized_operations=False, version=1):
    w = W().array(group_ids, lambda w, g: w.cstr(g)).bool(include_authorized_operations).tags()
    r = send(rc, DESCRIBE, version, bytes(w.b))

    def topic_partitions(r):
        t = {"topic_id": r.uuid(), "topic_name": r.cstr(), "partitions": r.array(lambda r: r.i32())}
        r.tags()
        return t

    def member(r):
        m = {"member_id": r.cstr(), "rack_id": r.cstr(), "member_epoch": r.i32(), "client_id": r.cstr(),
             "client_host": r.cstr(), "subscribed_topic_names": r.array(lambda r: r.cstr())}
        m["assignment"] = {"topic_partitions": r.array(topic_partitions)}
        r.tags()
        r.tags()
        return m

    def group(r):
        g = {"error_code": r.i16(), "error_message": r.cstr(), "group_id": r.cstr(), "group_state": r.cstr(),
             "group_epoch": r.i32(), "assignment_epoch": r.i32(), "assignor_name": r.cstr(),
             "members": r.array(member), "authorized_operations": r.i32()}
        r.tags()
        return g

    out = {"throttle_time_ms": r.i32(), "groups": r.array(group)}
    r.tags()
    r.end()
    return out


# ---- ShareFetch v1 / ShareAcknowledge v1 ----

def _ack_batches(w, batches):
    """batches: [(first, last, [types])]"""
    def one(w, b):
        w.i64(b[0]).i64(b[1]).array(b[2], lambda w, t: w.i8(t)).tags()
    w.array(batches, one)


def _leader(r):
    ld = {"leader_id": r.i32(), "leader_epoch": r.i32()}
    r.tags()
    return ld


def _node_endpoints(r):
    def ne(r):
        n = {"node_id": r.i32(), "host": r.cstr(), "port": r.i32(), "rack": r.cstr()}
        r.tags()
        return n
    return r.array(ne)


def fetch(rc, group_id, member_id, session_epoch, topics, forgotten=(), max_wait_ms=500, min_bytes=1,
          max_bytes=1 << 20, max_records=500, batch_size=500, version=1):
    """topics: {topic_id: {partition: [(first, last, [types])]}} (an empty list: fetch only)."""
    w = W().cstr(group_id).cstr(member_id).i32(session_epoch).i32(max_wait_ms).i32(min_bytes).i32(max_bytes)
    w.i32(max_records).i32(batch_size)

    def topic(w, item):
        tid, parts = item

        def part(w, pb):
            w.i32(pb[0])
            _ack_batches(w, pb[1])
            w.tags()
        w.uuid(tid).array(sorted(parts.items()), part).tags()
    w.array(list(topics.items()), topic)
    w.array(list(forgotten), lambda w, f: w.uuid(f[0]).array(f[1], lambda w, p: w.i32(p)).tags())
    w.tags()
    r = send(rc, FETCH, version, bytes(w.b))

    def acquired(r):
        a = {"first_offset": r.i64(), "last_offset": r.i64(), "delivery_count": r.i16()}
        r.tags()
        return a

    def part(r):
        p = {"partition_index": r.i32(), "error_code": r.i16(), "error_message": r.cstr(),
             "acknowledge_error_code": r.i16(), "acknowledge_error_message": r.cstr(),
             "current_leader": _leader(r), "records": r.cbytes(), "acquired_records": r.array(acquired)}
        r.tags()
        return p

    def topic_resp(r):
        t = {"topic_id": r.uuid(), "partitions": r.array(part)}
        r.tags()
        return t

    out = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "error_message": r.cstr(),
           "acquisition_lock_timeout_ms": r.i32(), "responses": r.array(topic_resp),
           "node_endpoints": _node_endpoints(r)}
    r.tags()
    r.end()
    return out


def acknowledge(rc, group_id, member_id, session_epoch, topics, version=1):
    """topics: {topic_id: {partition: [(first, last, [types])]}}"""
    w = W().cstr(group_id).cstr(member_id).i32(session_epoch)

    def topic(w, item):
        tid, parts = item

        def part(w, pb):
            w.i32(pb[0])
            _ack_batches(w, pb[1])
            w.tags()
        w.uuid(tid).array(sorted(parts.items()), part).tags()
    w.array(list(topics.items()), topic).tags()
    r = send(rc, ACK, version, bytes(w.b))

    def part(r):
        p = {"partition_index": r.i32(), "error_code": r.i16(), "error_message": r.cstr(),
             "current_leader": _leader(r)}
        r.tags()
        return p

    def topic_resp(r):
        t = {"topic_id": r.uuid(), "partitions": r.array(part)}
        r.tags()
        return t

    out = {"throttle_time_ms": r.i32(), "error_code": r.i16(), "error_message": r.cstr(),
           "responses": r.array(topic_resp), "node_endpoints": _node_endpoints(r)}
    r.tags()
    r.end()
    return out
