#!/usr/bin/env python3
"""A TCP proxy in front of a Kafka broker that lowers the max versions the broker advertises in
ApiVersions, so clients negotiate the versions another broker (Skiff) would offer. Used to check
that kafka-clients and the CLI tools work with, e.g., ShareFetch/ShareAcknowledge v1 only and
DescribeShareGroupOffsets v0 only, against the reference Kafka.

    cap_versions_proxy.py LISTEN_PORT BROKER_HOST:PORT KEY=MAX [KEY=MAX ...]
    cap_versions_proxy.py 19190 127.0.0.1:19191 78=1 79=1 90=0

Only ApiVersions responses are changed (each listed API key's max version is lowered in place,
never raised); every other byte is passed through. The broker must advertise the proxy's
address (advertised.listeners=PLAINTEXT://127.0.0.1:LISTEN_PORT) or clients will go around it
after their first Metadata request. Prints one line per capped ApiVersions answer and per
request that uses a capped API (key, version), to stdout.
"""

import asyncio
import struct
import sys

API_VERSIONS = 18


def uvarint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def cap_api_versions(body: bytearray, version: int, caps: dict) -> list:
    """Lowers max versions in an ApiVersions response body (after the 4-byte correlation id,
    which is the whole response header for every ApiVersions version). Returns what changed."""
    changed = []
    pos = 2  # error_code
    if version >= 3:
        n, pos = uvarint(body, pos)
        n -= 1
    else:
        (n,) = struct.unpack_from(">i", body, pos)
        pos += 4
    for _ in range(max(n, 0)):
        key, _min, mx = struct.unpack_from(">hhh", body, pos)
        if key in caps and mx > caps[key]:
            struct.pack_into(">h", body, pos + 4, caps[key])
            changed.append(f"{key}:{mx}->{caps[key]}")
        pos += 6
        if version >= 3:
            ntags, pos = uvarint(body, pos)
            for _ in range(ntags):
                _tag, pos = uvarint(body, pos)
                size, pos = uvarint(body, pos)
                pos += size
    return changed


async def read_frame(reader):
    head = await reader.readexactly(4)
    (size,) = struct.unpack(">i", head)
    return head + await reader.readexactly(size)


async def handle(client_r, client_w, target, caps):
    host, port = target
    try:
        broker_r, broker_w = await asyncio.open_connection(host, port)
    except OSError:
        client_w.close()
        return
    pending = {}  # correlation id -> (api key, version)

    async def upstream():
        try:
            while True:
                frame = await read_frame(client_r)
                key, ver, corr = struct.unpack_from(">hhi", frame, 4)
                pending[corr] = (key, ver)
                if key in caps:
                    print(f"request api={key} v{ver}", flush=True)
                broker_w.write(frame)
                await broker_w.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            broker_w.close()

    async def downstream():
        try:
            while True:
                frame = bytearray(await read_frame(broker_r))
                (corr,) = struct.unpack_from(">i", frame, 4)
                key, ver = pending.pop(corr, (None, None))
                if key == API_VERSIONS:
                    body = memoryview(frame)[8:]
                    patched = bytearray(body)
                    changed = cap_api_versions(patched, ver, caps)
                    frame[8:] = patched
                    if changed:
                        print(f"ApiVersions v{ver} capped {' '.join(changed)}", flush=True)
                client_w.write(frame)
                await client_w.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            client_w.close()

    await asyncio.gather(upstream(), downstream())


async def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    listen = int(sys.argv[1])
    host, port = sys.argv[2].rsplit(":", 1)
    caps = {}
    for kv in sys.argv[3:]:
        k, v = kv.split("=", 1)
        caps[int(k)] = int(v)
    server = await asyncio.start_server(lambda r, w: handle(r, w, (host, int(port)), caps), "127.0.0.1", listen)
    print(f"cap_versions_proxy: 127.0.0.1:{listen} -> {host}:{port}, caps {caps}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
