//! A streams application's topology as its members declare it in StreamsGroupHeartbeat
//! (KIP-1071): sub-topologies, the topics each reads and writes, and the internal topics the
//! broker must create for it. The broker keeps one topology per group (the first member's, at
//! the topology epoch it names) and persists it in `__consumer_offsets`.
//!
//! Pure data; what the broker derives from it against the topics that exist is
//! [`super::configure`].

use std::collections::{BTreeMap, BTreeSet};

/// A topic the application needs the broker to create: a state changelog or a repartition
/// topic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InternalTopic {
    pub name: String,
    /// 0: the broker decides (a changelog always, a repartition topic usually).
    pub partitions: i32,
    /// 0: the broker's default.
    pub replication_factor: i16,
    /// Topic configs the application asks for (a changelog asks for `cleanup.policy=compact`).
    pub configs: BTreeMap<String, String>,
}

/// Topics of a sub-topology that must have the same number of partitions (a join's inputs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopartitionGroup {
    /// Indexes into [`Subtopology::source_topics`].
    pub source_topics: Vec<i16>,
    /// Indexes into [`Subtopology::source_topic_regex`].
    pub source_topic_regex: Vec<i16>,
    /// Indexes into [`Subtopology::repartition_source_topics`].
    pub repartition_source_topics: Vec<i16>,
}

/// One independent part of the topology: its tasks are numbered by input partition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subtopology {
    pub id: String,
    /// User topics it reads (they must exist).
    pub source_topics: Vec<String>,
    /// Kept as declared; Kafka 4.4's broker does not resolve them either.
    pub source_topic_regex: Vec<String>,
    pub state_changelog_topics: Vec<InternalTopic>,
    /// Repartition topics it writes (read by another sub-topology).
    pub repartition_sink_topics: Vec<String>,
    /// Repartition topics it reads.
    pub repartition_source_topics: Vec<InternalTopic>,
    pub copartition_groups: Vec<CopartitionGroup>,
}

impl Subtopology {
    /// Every topic its tasks read: user source topics and repartition source topics.
    pub fn input_topics(&self) -> impl Iterator<Item = &str> {
        self.source_topics.iter().map(String::as_str).chain(
            self.repartition_source_topics
                .iter()
                .map(|t| t.name.as_str()),
        )
    }

    /// A sub-topology with state stores gets standby replicas.
    pub fn is_stateful(&self) -> bool {
        !self.state_changelog_topics.is_empty()
    }

    /// Each copartition group as topic names. An index that points nowhere is skipped (the
    /// topology was validated when it was accepted, [`StreamsTopology::validate`]).
    pub fn copartition_topic_sets(&self) -> Vec<BTreeSet<String>> {
        self.copartition_groups
            .iter()
            .map(|g| {
                let sources = g
                    .source_topics
                    .iter()
                    .filter_map(|i| self.source_topics.get(usize::try_from(*i).ok()?));
                let repartition = g.repartition_source_topics.iter().filter_map(|i| {
                    self.repartition_source_topics
                        .get(usize::try_from(*i).ok()?)
                        .map(|t| &t.name)
                });
                sources.chain(repartition).cloned().collect()
            })
            .collect()
    }
}

/// The topology of a streams group at one topology epoch, sub-topologies by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamsTopology {
    pub epoch: i32,
    pub subtopologies: BTreeMap<String, Subtopology>,
}

impl StreamsTopology {
    /// The check Kafka makes of a topology when the joining heartbeat arrives: changelog
    /// topics take their partition count from their sub-topology, so none may state one.
    /// The message is what STREAMS_INVALID_TOPOLOGY carries.
    pub fn check_changelogs(&self) -> Result<(), String> {
        for s in self.subtopologies.values() {
            if let Some(c) = s.state_changelog_topics.iter().find(|c| c.partitions != 0) {
                return Err(format!(
                    "Changelog topic {} must have an undefined partition count, but it is set to {}.",
                    c.name, c.partitions
                ));
            }
        }
        Ok(())
    }

    /// The structural checks a topology must pass to become a group's: the changelog rule,
    /// a non-negative epoch, sources in every sub-topology, copartition indexes in range,
    /// each refused with STREAMS_INVALID_TOPOLOGY. (Kafka fails a negative epoch or an index
    /// out of range with an unhandled exception, UNKNOWN_SERVER_ERROR, when it sets a
    /// group's topology.)
    pub fn validate(&self) -> Result<(), String> {
        self.check_changelogs()?;
        if self.epoch < 0 {
            return Err("Topology epoch must be non-negative.".to_string());
        }
        for s in self.subtopologies.values() {
            if s.source_topics.is_empty()
                && s.source_topic_regex.is_empty()
                && s.repartition_source_topics.is_empty()
            {
                return Err(format!("No source topics found for subtopology {}", s.id));
            }
            for g in &s.copartition_groups {
                let in_range = |idx: &[i16], len: usize| {
                    idx.iter()
                        .all(|i| usize::try_from(*i).is_ok_and(|i| i < len))
                };
                if !in_range(&g.source_topics, s.source_topics.len())
                    || !in_range(&g.source_topic_regex, s.source_topic_regex.len())
                    || !in_range(
                        &g.repartition_source_topics,
                        s.repartition_source_topics.len(),
                    )
                {
                    return Err(format!(
                        "Copartition group of subtopology {} refers to a topic it does not have.",
                        s.id
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every topic the topology reads or creates: what must exist before tasks are assigned.
    pub fn required_topics(&self) -> BTreeSet<&str> {
        self.subtopologies
            .values()
            .flat_map(|s| {
                s.input_topics()
                    .chain(s.state_changelog_topics.iter().map(|t| t.name.as_str()))
            })
            .collect()
    }
}
