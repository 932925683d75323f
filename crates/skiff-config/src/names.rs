//! Every broker config name Skiff knows, and lookups over them. The keys Skiff reads are
//! declared in `keys.rs`; this file lists the rest of Apache Kafka 4.x's broker configs
//! (server, socket, quotas, KRaft controller and metadata, remote log, share groups, SSL/SASL,
//! metrics), with Kafka's type and default, which Skiff accepts and does not act on.
//!
//! Built from Kafka's config definitions (names, types and defaults only), with the removals up
//! to Kafka 4.4 left out (ZooKeeper, message format / down-conversion, control plane listener,
//! password encoder, controlled-shutdown retries, inter.broker.protocol.version,
//! eligible.leader.replicas.enable, group.share.max.groups,
//! leader.imbalance.per.broker.percentage) and Kafka 4.4's defaults applied. Static data (the
//! merged, sorted view is built once); safe from any thread.

use std::sync::OnceLock;

use crate::types::ConfigType;

/// What Skiff does with a broker config key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyStatus {
    /// Read and acted on; a guard test checks that another crate reads one of the key's
    /// `reads` (see `keys.rs`).
    Implemented,
    /// A valid Kafka key Skiff accepts but does not act on (a load warning lists these).
    Recognised,
    /// A Skiff-only key with no Kafka equivalent.
    Skiff,
    /// A key Kafka 4.4 knows only as a dynamic broker config (the replication throttles):
    /// accepted and not acted on, like `Recognised`, but DescribeConfigs does not list it
    /// because Kafka does not list it for a broker that has not set it dynamically.
    DynamicOnly,
}

/// One broker config key.
#[derive(Clone, Copy, Debug)]
pub struct BrokerConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// Default as DescribeConfigs prints it (Skiff's own default for the few keys where Skiff
    /// differs from Kafka: `listeners`, `log.dir`);
    /// `None` when Kafka has none (`log.dirs`, `node.id`: Skiff still falls back to `log.dir`
    /// and node 1, but like Kafka it reports no default synonym for them).
    pub default: Option<&'static str>,
    pub status: KeyStatus,
    /// The `BrokerConfig` field that holds the typed value, if the key has one.
    pub field: Option<&'static str>,
    /// Fields (of `BrokerConfig` or `skiff_log::LogConfig`) or functions whose use outside
    /// skiff-config shows the key is acted on; a guard test checks them for every key marked
    /// implemented. Empty for keys Skiff does not act on.
    pub reads: &'static [&'static str],
    /// Skiff applies a dynamic change of this key (see `dynamic.rs`).
    pub live: bool,
    /// One line for `docs/configuration.md`; empty for keys Skiff only accepts.
    pub doc: &'static str,
    /// The key's own validator; `None` = the validator of the topic config it is a
    /// same-unit synonym of, if any.
    pub(crate) validator: Option<crate::types::Validator>,
}

impl BrokerConfigDef {
    /// Password-typed values are never shown.
    pub fn is_sensitive(&self) -> bool {
        self.kind == ConfigType::Password
    }

    pub fn implemented(&self) -> bool {
        matches!(self.status, KeyStatus::Implemented | KeyStatus::Skiff)
    }

    /// Whether DescribeConfigs(BROKER) lists this key whatever is set (an internal key is
    /// listed only once set, see [`BrokerConfigDef::internal`]).
    pub fn described(&self) -> bool {
        self.status != KeyStatus::DynamicOnly
            && !AUTHORIZER_PROPERTIES.contains(&self.name)
            && !self.internal()
    }

    /// A key Kafka 4.4 defines as internal: accepted like any other, but its DescribeConfigs
    /// lists it only when it is set (Kafka lists the set keys and the non-internal ones).
    pub fn internal(&self) -> bool {
        INTERNAL.contains(&self.name)
    }
}

/// The keys Skiff knows that Kafka 4.4 defines as internal broker configs.
const INTERNAL: [&str; 8] = [
    "group.streams.acceptable.recovery.lag",
    "group.streams.assignor.offload.enable",
    "group.streams.max.warmup.replicas",
    "group.streams.min.task.offset.interval.ms",
    "group.streams.num.warmup.replicas",
    "group.streams.task.offset.interval.ms",
    "share.coordinator.cold.partition.snapshot.interval.ms",
    "share.coordinator.state.topic.prune.interval.ms",
];

/// Keys Kafka hands to the authorizer instead of defining them as broker configs, so its
/// DescribeConfigs(BROKER) has no row for them; Skiff's has none either.
const AUTHORIZER_PROPERTIES: [&str; 2] = ["super.users", "allow.everyone.if.no.acl.found"];

const fn def(
    name: &'static str,
    kind: ConfigType,
    default: Option<&'static str>,
    status: KeyStatus,
) -> BrokerConfigDef {
    BrokerConfigDef {
        name,
        kind,
        default,
        status,
        field: None,
        reads: &[],
        live: false,
        doc: "",
        validator: None,
    }
}

use ConfigType::*;
use KeyStatus::*;

/// The Kafka keys Skiff accepts without acting on them, sorted by name.
static ACCEPTED: &[BrokerConfigDef] = &[
    def("alter.config.policy.class.name", Class, None, Recognised),
    def("alter.log.dirs.replication.quota.window.num", Int, Some("11"), Recognised),
    def("alter.log.dirs.replication.quota.window.size.seconds", Int, Some("1"), Recognised),
    def("auto.leader.rebalance.enable", Boolean, Some("true"), Recognised),
    def("background.threads", Int, Some("10"), Recognised),
    def("broker.heartbeat.interval.ms", Int, Some("2000"), Recognised),
    def("broker.rack", String, None, Recognised),
    def("broker.session.timeout.ms", Int, Some("9000"), Recognised),
    def("client.quota.callback.class", Class, None, Recognised),
    def("compression.gzip.level", Int, Some("-1"), Recognised),
    def("compression.lz4.level", Int, Some("9"), Recognised),
    def("compression.zstd.level", Int, Some("3"), Recognised),
    def("controlled.shutdown.enable", Boolean, Some("true"), Recognised),
    def("controller.listener.names", List, None, Recognised),
    def("controller.quorum.append.linger.ms", Int, Some("25"), Recognised),
    def("controller.quorum.bootstrap.servers", List, Some(""), Recognised),
    def("controller.quorum.election.backoff.max.ms", Int, Some("1000"), Recognised),
    def("controller.quorum.election.timeout.ms", Int, Some("1000"), Recognised),
    def("controller.quorum.fetch.timeout.ms", Int, Some("2000"), Recognised),
    def("controller.quorum.request.timeout.ms", Int, Some("2000"), Recognised),
    def("controller.quorum.retry.backoff.ms", Int, Some("20"), Recognised),
    def("controller.quorum.voters", List, Some(""), Recognised),
    def("controller.socket.timeout.ms", Int, Some("30000"), Recognised),
    def("create.topic.policy.class.name", Class, None, Recognised),
    def("delegation.token.expiry.check.interval.ms", Long, Some("3600000"), Recognised),
    def("delegation.token.expiry.time.ms", Long, Some("86400000"), Recognised),
    def("delegation.token.max.lifetime.ms", Long, Some("604800000"), Recognised),
    def("delegation.token.secret.key", Password, None, Recognised),
    def("delete.records.purgatory.purge.interval.requests", Int, Some("1"), Recognised),
    def("early.start.listeners", List, None, Recognised),
    def("fetch.purgatory.purge.interval.requests", Int, Some("1000"), Recognised),
    def("follower.replication.throttled.rate", Long, Some("9223372036854775807"), DynamicOnly),
    def("group.consumer.assignors", List, Some("uniform,range"), Recognised),
    def("group.consumer.max.size", Int, Some("2147483647"), Recognised),
    def("group.coordinator.append.linger.ms", Int, Some("-1"), Recognised),
    def("group.coordinator.rebalance.protocols", List, Some("classic,consumer,streams"), Recognised),
    def("group.coordinator.threads", Int, Some("4"), Recognised),
    def("group.max.size", Int, Some("2147483647"), Recognised),
    def("initial.broker.registration.timeout.ms", Int, Some("60000"), Recognised),
    def("inter.broker.listener.name", String, None, Recognised),
    def("kafka.metrics.polling.interval.secs", Int, Some("10"), Recognised),
    def("kafka.metrics.reporters", List, Some(""), Recognised),
    def("leader.imbalance.check.interval.seconds", Long, Some("300"), Recognised),
    def("leader.replication.throttled.rate", Long, Some("9223372036854775807"), DynamicOnly),
    def("log.dir.failure.timeout.ms", Long, Some("30000"), Recognised),
    def("log.flush.offset.checkpoint.interval.ms", Int, Some("60000"), Recognised),
    def("log.flush.start.offset.checkpoint.interval.ms", Int, Some("60000"), Recognised),
    def("log.local.retention.bytes", Long, Some("-2"), Recognised),
    def("log.local.retention.ms", Long, Some("-2"), Recognised),
    def("log.remote.copy.lag.bytes", Long, Some("-1"), Recognised),
    def("log.remote.copy.lag.ms", Long, Some("0"), Recognised),
    def("max.connection.creation.rate", Int, Some("2147483647"), Recognised),
    def("max.decompressed.message.bytes", Int, Some("2147483639"), Recognised),
    def("max.request.partition.size.limit", Int, Some("2000"), Recognised),
    def("metadata.log.dir", String, None, Recognised),
    def("metadata.log.max.record.bytes.between.snapshots", Long, Some("20971520"), Recognised),
    def("metadata.log.max.snapshot.interval.ms", Long, Some("3600000"), Recognised),
    def("metadata.log.segment.bytes", Int, Some("1073741824"), Recognised),
    def("metadata.log.segment.ms", Long, Some("604800000"), Recognised),
    def("metadata.max.idle.interval.ms", Int, Some("500"), Recognised),
    def("metadata.max.retention.bytes", Long, Some("104857600"), Recognised),
    def("metadata.max.retention.ms", Long, Some("604800000"), Recognised),
    def("metric.reporters", List, Some(""), Recognised),
    def("metrics.num.samples", Int, Some("2"), Recognised),
    def("metrics.recording.level", String, Some("INFO"), Recognised),
    def("metrics.sample.window.ms", Long, Some("30000"), Recognised),
    def("min.insync.replicas", Int, Some("1"), Recognised),
    def("num.io.threads", Int, Some("8"), Recognised),
    def("num.network.threads", Int, Some("3"), Recognised),
    def("num.replica.alter.log.dirs.threads", Int, None, Recognised),
    def("num.replica.fetchers", Int, Some("1"), Recognised),
    def("offsets.commit.timeout.ms", Int, Some("5000"), Recognised),
    def("offsets.load.buffer.size", Int, Some("5242880"), Recognised),
    def("offsets.topic.compression.codec", Int, Some("0"), Recognised),
    def("offsets.topic.replication.factor", Short, Some("3"), Recognised),
    def("offsets.topic.segment.bytes", Int, Some("104857600"), Recognised),
    def("principal.builder.class", Class, Some("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"), Recognised),
    def("process.roles", List, Some(""), Recognised),
    def("producer.purgatory.purge.interval.requests", Int, Some("1000"), Recognised),
    def("queued.max.request.bytes", Long, Some("-1"), Recognised),
    def("queued.max.requests", Int, Some("500"), Recognised),
    def("remote.fetch.max.wait.ms", Int, Some("500"), Recognised),
    def("remote.list.offsets.request.timeout.ms", Long, Some("30000"), Recognised),
    def("remote.log.index.file.cache.total.size.bytes", Long, Some("1073741824"), Recognised),
    def("remote.log.manager.copier.thread.pool.size", Int, Some("10"), Recognised),
    def("remote.log.manager.copy.max.bytes.per.second", Long, Some("9223372036854775807"), Recognised),
    def("remote.log.manager.copy.quota.window.num", Int, Some("11"), Recognised),
    def("remote.log.manager.copy.quota.window.size.seconds", Int, Some("1"), Recognised),
    def("remote.log.manager.expiration.thread.pool.size", Int, Some("10"), Recognised),
    def("remote.log.manager.fetch.max.bytes.per.second", Long, Some("9223372036854775807"), Recognised),
    def("remote.log.manager.fetch.quota.window.num", Int, Some("11"), Recognised),
    def("remote.log.manager.fetch.quota.window.size.seconds", Int, Some("1"), Recognised),
    def("remote.log.manager.task.interval.ms", Long, Some("30000"), Recognised),
    def("remote.log.manager.thread.pool.size", Int, Some("2"), Recognised),
    def("remote.log.metadata.custom.metadata.max.bytes", Int, Some("128"), Recognised),
    def("remote.log.metadata.manager.class.name", String, Some("org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"), Recognised),
    def("remote.log.metadata.manager.class.path", String, None, Recognised),
    def("remote.log.metadata.manager.impl.prefix", String, Some("rlmm.config."), Recognised),
    def("remote.log.metadata.manager.listener.name", String, None, Recognised),
    def("remote.log.reader.max.pending.tasks", Int, Some("100"), Recognised),
    def("remote.log.reader.threads", Int, Some("10"), Recognised),
    def("remote.log.storage.manager.class.name", String, None, Recognised),
    def("remote.log.storage.manager.class.path", String, None, Recognised),
    def("remote.log.storage.manager.impl.prefix", String, Some("rsm.config."), Recognised),
    def("remote.log.storage.system.enable", Boolean, Some("false"), Recognised),
    def("replica.alter.log.dirs.io.max.bytes.per.second", Long, Some("9223372036854775807"), DynamicOnly),
    def("replica.fetch.backoff.ms", Int, Some("1000"), Recognised),
    def("replica.fetch.max.bytes", Int, Some("1048576"), Recognised),
    def("replica.fetch.min.bytes", Int, Some("1"), Recognised),
    def("replica.fetch.response.max.bytes", Int, Some("10485760"), Recognised),
    def("replica.fetch.wait.max.ms", Int, Some("500"), Recognised),
    def("replica.high.watermark.checkpoint.interval.ms", Long, Some("5000"), Recognised),
    def("replica.lag.time.max.ms", Long, Some("30000"), Recognised),
    def("replica.selector.class", String, None, Recognised),
    def("replica.socket.receive.buffer.bytes", Int, Some("65536"), Recognised),
    def("replica.socket.timeout.ms", Int, Some("30000"), Recognised),
    def("replication.quota.window.num", Int, Some("11"), Recognised),
    def("replication.quota.window.size.seconds", Int, Some("1"), Recognised),
    def("request.timeout.ms", Int, Some("30000"), Recognised),
    def("sasl.client.callback.handler.class", Class, None, Recognised),
    def("sasl.kerberos.kinit.cmd", String, Some("/usr/bin/kinit"), Recognised),
    def("sasl.kerberos.min.time.before.relogin", Long, Some("60000"), Recognised),
    def("sasl.kerberos.principal.to.local.rules", List, Some("DEFAULT"), Recognised),
    def("sasl.kerberos.service.name", String, None, Recognised),
    def("sasl.kerberos.ticket.renew.jitter", Double, Some("0.05"), Recognised),
    def("sasl.kerberos.ticket.renew.window.factor", Double, Some("0.8"), Recognised),
    def("sasl.login.callback.handler.class", Class, None, Recognised),
    def("sasl.login.class", Class, None, Recognised),
    def("sasl.login.connect.timeout.ms", Int, None, Recognised),
    def("sasl.login.read.timeout.ms", Int, None, Recognised),
    def("sasl.login.refresh.buffer.seconds", Short, Some("300"), Recognised),
    def("sasl.login.refresh.min.period.seconds", Short, Some("60"), Recognised),
    def("sasl.login.refresh.window.factor", Double, Some("0.8"), Recognised),
    def("sasl.login.refresh.window.jitter", Double, Some("0.05"), Recognised),
    def("sasl.login.retry.backoff.max.ms", Long, Some("10000"), Recognised),
    def("sasl.login.retry.backoff.ms", Long, Some("100"), Recognised),
    def("sasl.mechanism.controller.protocol", String, Some("GSSAPI"), Recognised),
    def("sasl.mechanism.inter.broker.protocol", String, Some("GSSAPI"), Recognised),
    def("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, Some("3600000"), Recognised),
    def("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, Some("10000"), Recognised),
    def("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, Some("100"), Recognised),
    def("sasl.oauthbearer.token.endpoint.url", String, None, Recognised),
    def("security.inter.broker.protocol", String, Some("PLAINTEXT"), Recognised),
    def("security.providers", String, None, Recognised),
    def("share.coordinator.append.linger.ms", Int, Some("-1"), Recognised),
    def("share.coordinator.load.buffer.size", Int, Some("5242880"), Recognised),
    def("share.coordinator.state.topic.compression.codec", Int, Some("0"), Recognised),
    def("share.coordinator.state.topic.min.isr", Short, Some("2"), Recognised),
    def("share.coordinator.state.topic.replication.factor", Short, Some("3"), Recognised),
    def("share.coordinator.state.topic.segment.bytes", Int, Some("104857600"), Recognised),
    def("share.coordinator.threads", Int, Some("1"), Recognised),
    def("share.coordinator.write.timeout.ms", Int, Some("5000"), Recognised),
    def("share.fetch.purgatory.purge.interval.requests", Int, Some("1000"), Recognised),
    def("socket.connection.setup.timeout.max.ms", Long, Some("30000"), Recognised),
    def("socket.connection.setup.timeout.ms", Long, Some("10000"), Recognised),
    def("socket.listen.backlog.size", Int, Some("50"), Recognised),
    def("socket.receive.buffer.bytes", Int, Some("102400"), Recognised),
    def("socket.send.buffer.bytes", Int, Some("102400"), Recognised),
    def("ssl.endpoint.identification.algorithm", String, Some("https"), Recognised),
    def("ssl.engine.factory.class", Class, None, Recognised),
    def("ssl.keymanager.algorithm", String, Some("SunX509"), Recognised),
    def("ssl.keystore.password", Password, None, Recognised),
    def("ssl.protocol", String, Some("TLSv1.3"), Recognised),
    def("ssl.provider", String, None, Recognised),
    def("ssl.secure.random.implementation", String, None, Recognised),
    def("ssl.trustmanager.algorithm", String, Some("PKIX"), Recognised),
    def("ssl.truststore.password", Password, None, Recognised),
    def("telemetry.max.bytes", Int, Some("1048576"), Recognised),
    def("transaction.state.log.load.buffer.size", Int, Some("5242880"), Recognised),
    def("transaction.state.log.min.isr", Int, Some("2"), Recognised),
    def("transaction.state.log.replication.factor", Short, Some("3"), Recognised),
    def("transaction.state.log.segment.bytes", Int, Some("104857600"), Recognised),
    def("unclean.leader.election.enable", Boolean, Some("false"), Recognised),
];

/// Every broker config key Skiff knows: all of Kafka 4.x's plus Skiff's own, sorted by name
/// (binary search relies on it; a test checks).
pub fn broker_config_names() -> &'static [BrokerConfigDef] {
    static ALL: OnceLock<Vec<BrokerConfigDef>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<BrokerConfigDef> =
            crate::keys::KEYS.iter().chain(ACCEPTED).copied().collect();
        all.sort_by_key(|d| d.name);
        all
    })
}

/// Look up one key.
pub fn broker_config_def(name: &str) -> Option<&'static BrokerConfigDef> {
    let all = broker_config_names();
    all.binary_search_by(|d| d.name.cmp(name))
        .ok()
        .and_then(|i| all.get(i))
}

/// The known key closest to `name` (edit distance), offered when `name` looks like a typo.
pub fn closest_name(name: &str) -> Option<&'static str> {
    let best = broker_config_names()
        .iter()
        .map(|d| (edit_distance(name, d.name), d.name))
        .min_by_key(|(dist, _)| *dist)?;
    // Far-off suggestions are noise; allow about one edit per four characters.
    (best.0 <= (name.len() / 4).max(2)).then_some(best.1)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_unique() {
        for w in ACCEPTED.windows(2) {
            assert!(w[0].name < w[1].name, "{} / {}", w[0].name, w[1].name);
        }
        let all = broker_config_names();
        for w in all.windows(2) {
            assert!(w[0].name < w[1].name, "{} / {}", w[0].name, w[1].name);
        }
        assert!(all.len() > 250, "{}", all.len());
    }

    #[test]
    fn kafka_4_keys_present_and_removed_keys_absent() {
        for k in [
            "log.retention.hours",
            "listeners",
            "group.share.delivery.count.limit",
            "share.coordinator.threads",
            "controller.quorum.bootstrap.servers",
            "remote.log.manager.thread.pool.size",
            "sasl.jaas.config",
            "log.cleaner.dedupe.buffer.size",
            "transaction.state.log.num.partitions",
            "node.id",
            "process.roles",
        ] {
            assert!(broker_config_def(k).is_some(), "{k}");
        }
        for k in [
            "zookeeper.connect",
            "log.message.format.version",
            "log.message.downconversion.enable",
            "control.plane.listener.name",
            "log.message.timestamp.difference.max.ms",
        ] {
            assert!(broker_config_def(k).is_none(), "{k}");
        }
        assert_eq!(
            broker_config_def("num.recovery.threads.per.data.dir").and_then(|d| d.default),
            Some("2")
        );
        assert!(broker_config_def("ssl.keystore.password").is_some_and(|d| d.is_sensitive()));
    }

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(
            closest_name("log.retention.hour"),
            Some("log.retention.hours")
        );
        assert_eq!(closest_name("listeners"), Some("listeners"));
        assert_eq!(closest_name("completely.unrelated.thing.here"), None);
    }
}
