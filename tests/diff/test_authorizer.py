"""The authorizer run of the differential suite: Skiff and the reference Kafka 4.4, each with
StandardAuthorizer, a PLAINTEXT listener (User:ANONYMOUS, a super user, for the set-up) and a
SASL_PLAINTEXT listener with PLAIN users alice and bob. The same ACLs are created on both, then
the same requests are sent as alice and as bob over SASL and the answers compared: SASL errors,
CreateAcls/DescribeAcls output, Metadata filtering and authorized operations, and the
authorization error of each API.

The brokers here are their own pair (module scope), separate from the other tests' pair,
because an authorizer changes every answer."""

import tempfile
import time
from pathlib import Path

import pytest
from kafka.protocol.admin.acl import CreateAclsRequest, DescribeAclsRequest
from kafka.protocol.admin.cluster import DescribeClusterRequest
from kafka.protocol.admin.configs import DescribeConfigsRequest
from kafka.protocol.admin.topics import CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from brokers import Kafka, Skiff, warm_up
from diffutil import Collector
from raw import RawClient, to_plain
from test_errors import create, list_offsets, produce

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" '
        + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")
SETTINGS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS;User:admin",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
}

# Kafka's ACL enums (AclOperation, ResourceType, PatternType, AclPermissionType).
TOPIC, GROUP, CLUSTER, TXN_ID = 2, 3, 4, 5
READ, WRITE, CREATE, DELETE, DESCRIBE, DESCRIBE_CONFIGS = 3, 4, 5, 6, 8, 10
DENY, ALLOW = 2, 3
LITERAL, PREFIXED = 3, 4
ANY = 1


@pytest.fixture(scope="module")
def secured():
    with tempfile.TemporaryDirectory(prefix="skiff-diff-authz-") as d:
        root = Path(d)
        (root / "skiff").mkdir()
        s = Skiff(root / "skiff", extra=SETTINGS, sasl=True)
        k = Kafka(root, extra=SETTINGS, sasl=True)
        try:
            s.start()
            k.start()
            for b in (s, k):
                warm_up(b.bootstrap)
            yield {"kafka": k, "skiff": s}
        finally:
            s.stop()
            k.stop()


def as_user(broker, user, password=None):
    """A RawClient on the SASL listener, logged in as `user` (fails the test if refused)."""
    c = RawClient(broker.sasl_bootstrap)
    hs, auth = c.sasl_plain(user, password or PASSWORDS[user])
    assert hs.error_code == 0 and auth is not None and auth.error_code == 0, \
        f"{broker.name}: {user} could not log in: {to_plain(hs)} {to_plain(auth) if auth else None}"
    return c


def each(secured, fn, user=None):
    """fn(client) on both brokers, as `user` over SASL or as ANONYMOUS over PLAINTEXT."""
    out = {}
    for side in ("kafka", "skiff"):
        b = secured[side]
        with (as_user(b, user) if user else RawClient(b.bootstrap)) as c:
            out[side] = fn(c)
    return out


def acl(rtype, rname, pattern, principal, op, perm):
    C = CreateAclsRequest
    return C.AclCreation(resource_type=rtype, resource_name=rname, resource_pattern_type=pattern,
                         principal=principal, host="*", operation=op, permission_type=perm)


def describe_acls(c, principal):
    D = DescribeAclsRequest
    r = to_plain(c.send(D, 3, resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY,
                        principal_filter=principal, host_filter=None, operation=ANY, permission_type=ANY))
    for res in r["resources"]:
        res["acls"].sort(key=lambda a: (a["principal"], a["operation"], a["permission_type"]))
    r["resources"].sort(key=lambda x: (x["resource_type"], x["resource_name"], x["pattern_type"]))
    r.pop("throttle_time_ms", None)
    return r


def wait_acls(c, principal, count, timeout=15.0):
    """Kafka applies CreateAcls through its metadata log: wait until the broker sees them."""
    deadline = time.monotonic() + timeout
    while True:
        r = describe_acls(c, principal)
        if sum(len(x["acls"]) for x in r["resources"]) >= count:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} ACLs of {principal} not visible within {timeout}s: {r}")
        time.sleep(0.05)


def test_sasl_login_errors(secured):
    col = Collector()

    def on_sasl_port(fn):
        """fn(client) on each broker's SASL listener, not logged in; "closed" if the broker
        closes the connection instead of answering."""
        out = {}
        for side, b in secured.items():
            with RawClient(b.sasl_bootstrap) as c:
                try:
                    out[side] = fn(c)
                except ConnectionError:
                    out[side] = "closed"
        return out

    def login(user, password):
        def run(c):
            hs, auth = c.sasl_plain(user, password)
            return {"handshake": to_plain(hs), "authenticate": to_plain(auth) if auth else None}
        return run
    for case, user, password in [("wrong-password", "alice", "not-her-password"),
                                 ("unknown-user", "mallory", "x"), ("empty-password", "alice", "")]:
        got = on_sasl_port(login(user, password))
        col.check(f"sasl/{case}", {"user": user}, got["kafka"], got["skiff"])
    got = on_sasl_port(lambda c: to_plain(c.send(SaslHandshakeRequest, 1, mechanism="SCRAM-SHA-256")))
    col.check("sasl/unsupported-mechanism", {"mechanism": "SCRAM-SHA-256"}, got["kafka"], got["skiff"])
    got = on_sasl_port(lambda c: to_plain(c.send(SaslAuthenticateRequest, 2, auth_bytes=b"\0alice\0alice-secret")))
    col.check("sasl/authenticate-before-handshake", {}, got["kafka"], got["skiff"])
    got = on_sasl_port(lambda c: metadata(c, None))
    col.check("sasl/metadata-before-login", {}, got["kafka"], got["skiff"])
    # A SASL handshake on the PLAINTEXT listener.
    got = each(secured, lambda c: to_plain(c.send(SaslHandshakeRequest, 1, mechanism="PLAIN")))
    col.check("sasl/handshake-on-plaintext-listener", {}, got["kafka"], got["skiff"])
    col.done()


def setup_acls(c, n):
    """Topics and ACLs of one test (as the super user); returns the number of alice's ACLs."""
    for suffix in ("a", "a-denied", "r", "d", "hidden"):
        create(c, f"{n}-{suffix}")
    alice = "User:alice"
    creations = [
        acl(TOPIC, f"{n}-a", PREFIXED, alice, WRITE, ALLOW),
        acl(TOPIC, f"{n}-a-denied", LITERAL, alice, READ, DENY),
        acl(TOPIC, f"{n}-a-denied", LITERAL, alice, READ, ALLOW),
        acl(TOPIC, f"{n}-r", LITERAL, alice, READ, ALLOW),
        acl(TOPIC, f"{n}-d", LITERAL, alice, DESCRIBE, ALLOW),
        acl(TOPIC, f"{n}-create", LITERAL, alice, CREATE, ALLOW),
        acl(GROUP, f"{n}-g", LITERAL, alice, READ, ALLOW),
        acl(TXN_ID, f"{n}-tx", LITERAL, alice, WRITE, ALLOW),
    ]
    r = to_plain(c.send(CreateAclsRequest, 3, creations=creations))
    return r, len(creations)


def metadata(c, topics, auto_create=False):
    M = MetadataRequest
    req = None if topics is None else [M.MetadataRequestTopic(name=t) for t in topics]
    r = to_plain(c.send(M, 12, topics=req, allow_auto_topic_creation=auto_create,
                        include_topic_authorized_operations=True))
    return sorted(({"name": t["name"], "error_code": t["error_code"],
                    "authorized_operations": t["authorized_operations"], "partitions": len(t["partitions"])}
                   for t in r["topics"]), key=lambda t: t["name"] or "")


def test_acls_and_authorization(secured, name):
    n = name
    col = Collector()
    got = each(secured, lambda c: setup_acls(c, n))
    col.check("create_acls", {"test": n}, got["kafka"][0], got["skiff"][0])
    count = got["kafka"][1]
    for side in secured:
        with RawClient(secured[side].bootstrap) as c:
            wait_acls(c, "User:alice", count)
    got = each(secured, lambda c: describe_acls(c, "User:alice"))
    col.check("describe_acls/alice", {"principal": "User:alice"}, got["kafka"], got["skiff"])

    names = [f"{n}-{s}" for s in ("a", "a-denied", "r", "d", "hidden")]
    for user in ("alice", "bob"):
        got = each(secured, lambda c: metadata(c, names), user)
        col.check(f"metadata/{user}/named", {"topics": names}, got["kafka"], got["skiff"])
        got = each(secured, lambda c: [t for t in metadata(c, None) if t["name"].startswith(n)], user)
        col.check(f"metadata/{user}/all", {"topics": None}, got["kafka"], got["skiff"])
    got = each(secured, lambda c: metadata(c, [f"{n}-auto"], auto_create=True), "alice")
    col.check("metadata/alice/auto-create-without-create", {"topic": f"{n}-auto"}, got["kafka"], got["skiff"])

    def create_two(c):
        CT = CreateTopicsRequest
        r = to_plain(c.send(CT, 7, timeout_ms=15000, validate_only=True, topics=[
            CT.CreatableTopic(name=t, num_partitions=1, replication_factor=1, assignments=[], configs=[])
            for t in (f"{n}-create", f"{n}-nocreate")]))
        return [{"name": t["name"], "error_code": t["error_code"], "error_message": t["error_message"]}
                for t in r["topics"]]
    got = each(secured, create_two, "alice")
    col.check("create_topics/alice", {"validate_only": True}, got["kafka"], got["skiff"])

    for topic in (f"{n}-a", f"{n}-a-denied", f"{n}-r"):
        got = each(secured, lambda c: produce(c, topic, 0), "alice")
        col.check(f"produce/alice/{topic[len(n) + 1:]}", {"topic": topic}, got["kafka"], got["skiff"])
        got = each(secured, lambda c: fetch(c, topic), "alice")
        col.check(f"fetch/alice/{topic[len(n) + 1:]}", {"topic": topic}, got["kafka"], got["skiff"])
    for topic in (f"{n}-d", f"{n}-hidden"):
        got = each(secured, lambda c: list_offsets(c, topic, 0, -1), "alice")
        col.check(f"list_offsets/alice/{topic[len(n) + 1:]}", {"topic": topic}, got["kafka"], got["skiff"])

    for group in (f"{n}-g", f"{n}-other"):
        got = each(secured, lambda c: find_coordinator(c, group), "alice")
        col.check(f"find_coordinator/alice/{group[len(n) + 1:]}", {"group": group}, got["kafka"], got["skiff"])
        got = each(secured, lambda c: offset_fetch(c, group, f"{n}-r"), "alice")
        col.check(f"offset_fetch/alice/{group[len(n) + 1:]}", {"group": group}, got["kafka"], got["skiff"])

    got = each(secured, lambda c: describe_configs(c, f"{n}-r"), "alice")
    col.check("describe_configs/alice", {"topic": f"{n}-r"}, got["kafka"], got["skiff"])
    # Kafka's message here is the toString of its internal request object (connection ids,
    # processor numbers), so only the codes are compared.
    got = each(secured, lambda c: describe_acls(c, None)["error_code"], "alice")
    col.check("describe_acls/as-alice", {}, got["kafka"], got["skiff"])
    got = each(secured, lambda c: [r["error_code"] for r in to_plain(c.send(CreateAclsRequest, 3, creations=[
        acl(TOPIC, "x", LITERAL, "User:alice", READ, ALLOW)]))["results"]], "alice")
    col.check("create_acls/as-alice", {}, got["kafka"], got["skiff"])
    got = each(secured, lambda c: [{k: r[k] for k in ("name", "error_code", "error_message")}
                                   for r in to_plain(c.send(DeleteTopicsRequest, 5, topic_names=[f"{n}-r"],
                                                            timeout_ms=15000))["responses"]], "alice")
    col.check("delete_topics/alice", {"topic": f"{n}-r"}, got["kafka"], got["skiff"])

    for user, txn in (("alice", f"{n}-tx2"), ("alice", None), ("bob", None)):
        got = each(secured, lambda c: init_producer_id(c, txn), user)
        col.check(f"init_producer_id/{user}/{'txn' if txn else 'idempotent'}", {"transactional_id": txn},
                  got["kafka"], got["skiff"])
    for user in ("alice", "bob"):
        got = each(secured, lambda c: to_plain(c.send(DescribeClusterRequest, 1,
                                                      include_cluster_authorized_operations=True,
                                                      endpoint_type=1))["authorized_operations"], user)
        col.check(f"describe_cluster/{user}", {}, got["kafka"], got["skiff"])
    col.done()


def fetch(c, topic):
    F = FetchRequest
    r = to_plain(c.send(F, 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[F.FetchTopic(topic=topic, partitions=[
                            F.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                        last_fetched_epoch=-1, log_start_offset=-1,
                                                        partition_max_bytes=1 << 20)])],
                        forgotten_topics_data=[], rack_id=""))
    return {"error_code": r["error_code"],
            "partitions": [{"error_code": p["error_code"], "has_records": bool(p["records"])}
                           for t in r["responses"] for p in t["partitions"]]}


def find_coordinator(c, group):
    r = to_plain(c.send(FindCoordinatorRequest, 4, key_type=0, coordinator_keys=[group]))
    return [{"key": x["key"], "error_code": PASSED.get(x["error_code"], x["error_code"])} for x in r["coordinators"]]


def offset_fetch(c, group, topic):
    O = OffsetFetchRequest
    r = to_plain(c.send(O, 8, groups=[O.OffsetFetchRequestGroup(group_id=group, topics=[
        O.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])],
        require_stable=False))
    return [{"group_id": g["group_id"], "error_code": g["error_code"]} for g in r["groups"]]


def describe_configs(c, topic):
    D = DescribeConfigsRequest
    r = to_plain(c.send(D, 4, resources=[
        D.DescribeConfigsResource(resource_type=2, resource_name=topic, configuration_keys=None),
        D.DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=["log.retention.ms"])],
        include_synonyms=False, include_documentation=False))
    return [{k: x[k] for k in ("error_code", "error_message", "resource_type", "resource_name")}
            | {"configs": len(x["configs"])} for x in r["results"]]


# Answers that mean the request passed authorization and met a coordinator still loading.
PASSED = {0: "passed", 14: "passed", 15: "passed"}


def init_producer_id(c, txn):
    r = to_plain(c.send(InitProducerIdRequest, 4, transactional_id=txn, transaction_timeout_ms=60000,
                        producer_id=-1, producer_epoch=-1))
    return {"error_code": PASSED.get(r["error_code"], r["error_code"])}
