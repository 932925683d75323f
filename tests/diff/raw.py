"""A tiny raw-frame Kafka client for the differential suite: kafka-python's JSON-schema
protocol classes encode the request and decode the response; this module only frames them on
a blocking socket. It lets a test send exactly the request it wants (bad names, bad configs,
unknown partitions) and see the broker's exact error codes and messages, which the high-level
clients validate away or reword.

Not thread-safe: one connection per RawClient, one request in flight.
"""

import socket
import struct

from kafka.protocol.api_header import ResponseHeader


class RawClient:
    def __init__(self, bootstrap: str, timeout=30.0, client_id="skiff-diff"):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation = 0
        self.client_id = client_id

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"broker closed the connection after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def sasl_plain(self, user: str, password: str):
        """SaslHandshake v1 (PLAIN) then SaslAuthenticate v2 with the PLAIN token; returns
        (handshake, authenticate) responses. A broker that refuses the login answers
        SaslAuthenticate with its error and then closes the connection."""
        from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

        hs = self.send(SaslHandshakeRequest, 1, mechanism="PLAIN")
        if hs.error_code != 0:
            return hs, None
        token = b"\0" + user.encode() + b"\0" + password.encode()
        return hs, self.send(SaslAuthenticateRequest, 2, auth_bytes=token)

    def send(self, request_cls, version: int, **fields):
        """Send request_cls[version](**fields); return the decoded response."""
        req = request_cls[version](**fields)
        self.correlation += 1
        req.with_header(correlation_id=self.correlation, client_id=self.client_id)
        self.sock.sendall(req.encode(header=True, framed=True))
        (size,) = struct.unpack(">i", self._read_exact(4))
        body = self._read_exact(size)
        resp_cls = req.header.get_response_class()
        # ApiVersions responses always use header v0; every other flexible version uses v1.
        flexible = resp_cls.flexible_version_q(version) and request_cls.API_KEY != 18
        hdr_len = 4
        if flexible:
            hdr_len += 1  # empty tagged-field section
            if body[4] != 0:
                raise ValueError("response header carries tagged fields; not expected")
        (corr,) = struct.unpack(">i", body[:4])
        if corr != self.correlation:
            raise ValueError(f"correlation id {corr}, expected {self.correlation}")
        return resp_cls.decode(body[hdr_len:], version=version)


def to_plain(obj):
    """A decoded response as plain dicts/lists (field name -> value), for comparing and printing."""
    if isinstance(obj, (list, tuple)):
        return [to_plain(x) for x in obj]
    if hasattr(obj, "_struct") and obj._struct is not None:
        out = {}
        for f in obj._struct._fields:
            if obj.version is None or f.for_version_q(obj.version):
                out[f.name] = to_plain(getattr(obj, f.name))
        return out
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj)
    return obj
