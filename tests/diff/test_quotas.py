"""AlterClientQuotas and DescribeClientQuotas compared: per-entity answers (codes and messages)
for valid and invalid alterations, validate_only, and Describe with every match type, strict,
and the filters Kafka refuses. Entries are compared sorted (Kafka answers in hash-map order).
Every quota set here is removed at the end; values are large so no client is throttled."""

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest as A
from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest as D

import time

from diffutil import Collector
from raw import RawClient, to_plain
from test_errors import both


def entry(entity, ops):
    return A.EntryData(
        entity=[A.EntryData.EntityData(entity_type=t, entity_name=n) for t, n in entity],
        ops=[A.EntryData.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops])


def alter(c, entries, validate_only=False):
    r = to_plain(c.send(A, 1, entries=entries, validate_only=validate_only))
    rows = [(sorted((e["entity_type"], e["entity_name"] or "") for e in x["entity"]),
             x["error_code"], x["error_message"]) for x in r["entries"]]
    return sorted(rows)


def describe(c, components, strict=False, only=None):
    r = to_plain(c.send(D, 1, strict=strict, components=[
        D.ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components]))
    if r["entries"] is not None:
        rows = []
        for e in r["entries"]:
            entity = sorted((x["entity_type"], x["entity_name"]) for x in e["entity"])
            # Only this test's entities: others may exist on a shared broker.
            if only and not any(n and n.startswith(only) for _, n in entity) and entity != only_defaults(entity):
                continue
            rows.append((entity, sorted((v["key"], v["value"]) for v in e["values"])))
        r["entries"] = sorted(rows, key=repr)
    r.pop("throttle_time_ms", None)
    return r


def wait_visible(brokers, user, present, timeout=15.0):
    """Kafka applies a quota change through its metadata log, so a describe right after the
    alteration may not see it yet: wait until both brokers show (or no longer show) `user`."""
    for side in ("kafka", "skiff"):
        deadline = time.monotonic() + timeout
        while True:
            with RawClient(brokers[side].bootstrap) as c:
                found = bool(describe(c, [("user", 0, user)], False)["entries"])
            if found == present or time.monotonic() > deadline:
                break
            time.sleep(0.2)


def only_defaults(entity):
    return entity if all(n is None for _, n in entity) else None


def test_alter_and_describe_client_quotas(brokers, name):
    col = Collector()
    u, c = f"{name}-u", f"{name}-c"
    big = 1e9
    bad = [
        entry([("user", f"{u}-x")], [("nope", 1.0)]),
        entry([("user", f"{u}-y")], [("producer_byte_rate", 0.0)]),
        entry([("user", f"{u}-z")], [("consumer_byte_rate", 1.5)]),
        entry([("user", f"{u}-w")], [("producer_byte_rate", 1e300)]),
        entry([("client-id", "")], [("producer_byte_rate", big)]),
        entry([("group", "g")], [("producer_byte_rate", big)]),
        entry([], [("producer_byte_rate", big)]),
        entry([("user", f"{u}-v")], [("producer_byte_rate", big), ("producer_byte_rate", big)]),
        entry([("user", f"{u}-t")], [("request_percentage", -1.0)]),
    ]
    got = both(brokers, lambda k: alter(k, bad))
    col.check("alter_client_quotas/invalid", {"entries": len(bad)}, got["kafka"], got["skiff"])
    got = both(brokers, lambda k: alter(k, [entry([("user", f"{u}-vo")], [("producer_byte_rate", big)])], True))
    col.check("alter_client_quotas/validate-only", {}, got["kafka"], got["skiff"])
    good = [
        entry([("user", u)], [("producer_byte_rate", big), ("consumer_byte_rate", big)]),
        entry([("user", u), ("client-id", None)], [("request_percentage", 1000.0)]),
        entry([("user", u), ("client-id", c)], [("controller_mutation_rate", 1000.5)]),
        entry([("client-id", c)], [("consumer_byte_rate", big)]),
    ]
    got = both(brokers, lambda k: alter(k, good))
    col.check("alter_client_quotas/valid", {"entries": len(good)}, got["kafka"], got["skiff"])
    wait_visible(brokers, u, True)
    filters = [
        ("exact-user", [("user", 0, u)], False),
        ("exact-user-strict", [("user", 0, u)], True),
        ("exact-pair-strict", [("user", 0, u), ("client-id", 0, c)], True),
        ("user-default-client", [("user", 0, u), ("client-id", 1, None)], True),
        ("exact-client", [("client-id", 0, c)], False),
        ("any-client-of-user", [("user", 0, u), ("client-id", 2, None)], False),
        ("ip-any", [("ip", 2, None)], False),
        ("empty-type", [("", 0, "x")], False),
        ("unknown-type", [("group", 2, None)], False),
        ("exact-null", [("user", 0, None)], False),
        ("default-with-name", [("user", 1, "x")], False),
        ("any-with-name", [("user", 2, "x")], False),
        ("bad-match-type", [("user", 7, None)], False),
        ("type-twice", [("user", 2, None), ("user", 0, "x")], False),
        ("ip-with-user", [("ip", 2, None), ("user", 2, None)], False),
    ]
    for case, components, strict in filters:
        got = both(brokers, lambda k: describe(k, components, strict, only=name))
        col.check(f"describe_client_quotas/{case}", {"components": components, "strict": strict},
                  got["kafka"], got["skiff"])
    removal = [
        entry([("user", u)], [("producer_byte_rate", None), ("consumer_byte_rate", None)]),
        entry([("user", u), ("client-id", None)], [("request_percentage", None)]),
        entry([("user", u), ("client-id", c)], [("controller_mutation_rate", None)]),
        entry([("client-id", c)], [("consumer_byte_rate", None)]),
    ]
    got = both(brokers, lambda k: alter(k, removal))
    col.check("alter_client_quotas/remove", {"entries": len(removal)}, got["kafka"], got["skiff"])
    wait_visible(brokers, u, False)
    got = both(brokers, lambda k: describe(k, [("user", 0, u)], False, only=name))
    col.check("describe_client_quotas/after-remove", {}, got["kafka"], got["skiff"])
    col.done()
