"""DescribeConfigs compared: every topic config (name, value, source, read-only, sensitive,
type, synonyms) for a default topic and one with overrides, the broker's configs for the keys
Skiff implements (host-describing values normalised), and the errors for unknown resources.
Documentation strings are not requested: Skiff writes its own wording (it may not copy Kafka's)."""

import re

from kafka.protocol.admin.configs import DescribeConfigsRequest as D

from diffutil import Collector
from raw import RawClient, to_plain
from test_errors import both, create


def describe(c, rtype, rname, keys=None, synonyms=True):
    r = to_plain(c.send(D, 4, include_synonyms=synonyms, include_documentation=False, resources=[
        D.DescribeConfigsResource(resource_type=rtype, resource_name=rname, configuration_keys=keys)]))
    return r["results"][0]


def by_name(result, normalise=lambda s: s):
    """{config name: its entry without the name}, values passed through normalise()."""
    out = {}
    for c in result["configs"]:
        e = dict(c)
        e.pop("name")
        e.pop("documentation", None)
        e["value"] = normalise(e["value"])
        e["synonyms"] = [dict(s, value=normalise(s["value"])) for s in e["synonyms"]]
        out[c["name"]] = e
    return {"error_code": result["error_code"], "error_message": result["error_message"], "configs": out}


def test_topic_configs(brokers, name):
    col = Collector()
    cases = [
        ("default-topic", f"{name}-d", []),
        ("overrides", f"{name}-o", [("retention.ms", "3600000"), ("cleanup.policy", "compact,delete"),
                                    ("max.message.bytes", "2000000"), ("min.cleanable.dirty.ratio", "0.2"),
                                    ("segment.bytes", "2097152"), ("message.timestamp.type", "LogAppendTime"),
                                    ("compression.type", "zstd")]),
    ]
    for case, topic, configs in cases:
        both(brokers, lambda c: create(c, topic, configs=configs))
        got = both(brokers, lambda c: by_name(describe(c, 2, topic)))
        col.check(f"describe_configs/topic/{case}", {"topic": topic, "configs": configs}, got["kafka"], got["skiff"])
        keys = ["retention.ms", "cleanup.policy", "no.such.config"]
        got = both(brokers, lambda c: by_name(describe(c, 2, topic, keys=keys, synonyms=False)))
        col.check(f"describe_configs/topic-keys/{case}", {"topic": topic, "keys": keys}, got["kafka"], got["skiff"])
    got = both(brokers, lambda c: describe(c, 2, f"{name}-nope"))
    col.check("describe_configs/unknown-topic", {"topic": f"{name}-nope"}, got["kafka"], got["skiff"])
    got = both(brokers, lambda c: describe(c, 4, "7"))
    col.check("describe_configs/unknown-broker", {"broker": "7"}, got["kafka"], got["skiff"])
    got = both(brokers, lambda c: describe(c, 2, ""))
    col.check("describe_configs/empty-topic-name", {"topic": ""}, got["kafka"], got["skiff"])
    col.done()


def host_normaliser(broker):
    """Broker config values that describe the host differ legitimately: the data directory and
    the listener port. Both are replaced by placeholders before comparing."""
    data = str(broker.data)
    port = broker.bootstrap.rsplit(":", 1)[1]

    def norm(v):
        if v is None:
            return v
        v = v.replace(data, "<DATA_DIR>")
        return re.sub(rf"\b{port}\b", "<PORT>", v)
    return norm


# Keys tests/kafka/start.sh sets only because the reference broker is a KRaft controller too
# (Skiff has no controller quorum): their values and sources describe that setup, not a
# behaviour Skiff could match, so they are not compared.
KRAFT_ONLY = {"process.roles", "controller.quorum.voters", "controller.listener.names",
              "listener.security.protocol.map", "inter.broker.listener.name"}


def drop_controller_listener(v):
    """`PLAINTEXT://h:p,CONTROLLER://h:q` -> `PLAINTEXT://h:p` (Kafka's KRaft controller port)."""
    if v is None:
        return v
    return ",".join(x for x in v.split(",") if not x.startswith("CONTROLLER://"))


def test_broker_configs(brokers):
    """All of the broker's configs, compared for the keys Skiff implements. Kafka has many more
    (KRaft, replication, SASL/SSL, quotas...): those are not differences Skiff can have."""
    got = {}
    for side in ("kafka", "skiff"):
        with RawClient(brokers[side].bootstrap) as c:
            got[side] = by_name(describe(c, 4, "1"), host_normaliser(brokers[side]))
    for side in got:
        for k in KRAFT_ONLY:
            got[side]["configs"].pop(k, None)
        lst = got[side]["configs"].get("listeners")
        if lst:
            lst["value"] = drop_controller_listener(lst["value"])
            for syn in lst["synonyms"]:
                syn["value"] = drop_controller_listener(syn["value"])
    skiff_keys = set(got["skiff"]["configs"])
    kafka = dict(got["kafka"], configs={k: v for k, v in got["kafka"]["configs"].items() if k in skiff_keys})
    col = Collector()
    col.check("describe_configs/broker", {"resource": "broker 1", "all": True}, kafka, got["skiff"])
    # The broker-logger resource type (8) and a request for named keys.
    keys = ["num.partitions", "log.retention.hours", "log.dirs", "auto.create.topics.enable"]
    got = {}
    for side in ("kafka", "skiff"):
        with RawClient(brokers[side].bootstrap) as c:
            got[side] = by_name(describe(c, 4, "1", keys=keys), host_normaliser(brokers[side]))
    col.check("describe_configs/broker-keys", {"resource": "broker 1", "keys": keys}, got["kafka"], got["skiff"])
    col.done()
