//! What a streams group's topology means against the topics that exist now (Kafka's
//! "configured topology"): how many tasks each sub-topology has, how many partitions each
//! internal topic must have, which internal topics the broker must still create, and why the
//! group cannot be assigned yet when it cannot.
//!
//! The rules, in the order the broker applies them:
//! 1. every user source topic must exist (else status MISSING_SOURCE_TOPICS);
//! 2. a repartition topic without a declared partition count gets the largest input
//!    partition count of the sub-topology that writes it, repeated until nothing changes
//!    (a topology whose counts cannot be settled is invalid);
//! 3. copartitioned topics must agree; repartition topics in such a group follow the user
//!    topics of the group (else INCORRECTLY_PARTITIONED_TOPICS);
//! 4. a changelog topic has as many partitions as its sub-topology has tasks;
//! 5. a sub-topology has as many tasks as its largest input topic has partitions;
//! 6. an internal topic that exists with another partition count is
//!    INCORRECTLY_PARTITIONED_TOPICS; those that do not exist are to be created (status
//!    MISSING_INTERNAL_TOPICS until they do).
//!
//! Pure: the partition counts come from a lookup the caller provides.

use std::collections::{BTreeMap, BTreeSet};

use super::topology::{InternalTopic, StreamsTopology};

/// Status codes of StreamsGroupHeartbeat's `Status` (KIP-1071).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i8)]
pub enum StatusCode {
    StaleTopology = 0,
    MissingSourceTopics = 1,
    IncorrectlyPartitionedTopics = 2,
    MissingInternalTopics = 3,
    ShutdownApplication = 4,
    AssignmentDelayed = 5,
    MissingClientTags = 6,
}

/// One status the heartbeat reports, with its detail text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: StatusCode,
    pub detail: String,
}

/// A topology that can never be configured, whatever topics exist (STREAMS_INVALID_TOPOLOGY).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidTopology(pub String);

/// A sub-topology as the assignor sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfiguredSubtopology {
    pub tasks: i32,
    pub stateful: bool,
}

/// The outcome of configuring a topology.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfiguredTopology {
    pub epoch: i32,
    /// Sub-topologies with their task counts; `None` when the topics do not allow any yet.
    pub subtopologies: Option<BTreeMap<String, ConfiguredSubtopology>>,
    /// Internal topics that do not exist yet, with the partition count they must have.
    pub to_create: Vec<InternalTopic>,
    /// The partition count each internal topic must have (declared or decided).
    pub internal_partitions: BTreeMap<String, i32>,
    /// Why tasks cannot be assigned now, if they cannot.
    pub status: Option<Status>,
}

impl ConfiguredTopology {
    /// Tasks can be assigned: every topic exists with the right partition count.
    pub fn is_ready(&self) -> bool {
        self.status.is_none()
    }

    /// Tasks of one sub-topology, 0 when unknown.
    pub fn tasks(&self, subtopology: &str) -> i32 {
        self.subtopologies
            .as_ref()
            .and_then(|s| s.get(subtopology))
            .map_or(0, |s| s.tasks)
    }
}

/// Configures `topology` against the topics that exist (`partitions` answers a topic's
/// partition count, `None` when it does not exist).
pub fn configure(
    topology: &StreamsTopology,
    partitions: &dyn Fn(&str) -> Option<i32>,
) -> Result<ConfiguredTopology, InvalidTopology> {
    let not_ready = |code: StatusCode, detail: String| ConfiguredTopology {
        epoch: topology.epoch,
        subtopologies: None,
        to_create: Vec::new(),
        internal_partitions: BTreeMap::new(),
        status: Some(Status { code, detail }),
    };
    let missing: BTreeSet<&str> = topology
        .subtopologies
        .values()
        .flat_map(|s| s.source_topics.iter().map(String::as_str))
        .filter(|t| partitions(t).is_none())
        .collect();
    if !missing.is_empty() {
        return Ok(not_ready(
            StatusCode::MissingSourceTopics,
            format!("Source topics {} are missing.", summarize(&missing)),
        ));
    }
    let mut decided = repartition_counts(topology, partitions)?;
    match copartition(topology, partitions, &mut decided)? {
        Ok(()) => {}
        Err(detail) => return Ok(not_ready(StatusCode::IncorrectlyPartitionedTopics, detail)),
    }
    let count = |t: &str, decided: &BTreeMap<String, i32>| {
        partitions(t).or_else(|| decided.get(t).copied())
    };
    let mut subtopologies = BTreeMap::new();
    for s in topology.subtopologies.values() {
        let tasks = s
            .input_topics()
            .filter_map(|t| count(t, &decided))
            .max()
            .ok_or_else(|| {
                InvalidTopology(format!("No source topics found for subtopology {}", s.id))
            })?;
        for c in &s.state_changelog_topics {
            decided.insert(c.name.clone(), tasks);
        }
        subtopologies.insert(
            s.id.clone(),
            ConfiguredSubtopology {
                tasks,
                stateful: s.is_stateful(),
            },
        );
    }
    let mut to_create = BTreeMap::new();
    let mut internal_partitions = BTreeMap::new();
    for s in topology.subtopologies.values() {
        for t in s
            .repartition_source_topics
            .iter()
            .chain(&s.state_changelog_topics)
        {
            let want = if t.partitions > 0 {
                t.partitions
            } else {
                decided.get(&t.name).copied().unwrap_or(0)
            };
            internal_partitions.insert(t.name.clone(), want);
            match partitions(&t.name) {
                Some(have) if have != want => {
                    return Ok(not_ready(
                        StatusCode::IncorrectlyPartitionedTopics,
                        format!(
                            "Existing topic {} has different number of partitions: expected {want}, found {have}",
                            t.name
                        ),
                    ))
                }
                Some(_) => {}
                None => {
                    to_create.insert(
                        t.name.clone(),
                        InternalTopic {
                            partitions: want,
                            ..t.clone()
                        },
                    );
                }
            }
        }
    }
    let status = (!to_create.is_empty()).then(|| {
        let names: BTreeSet<&str> = to_create.keys().map(String::as_str).collect();
        Status {
            code: StatusCode::MissingInternalTopics,
            detail: format!("Internal topics are missing: {}", summarize(&names)),
        }
    });
    Ok(ConfiguredTopology {
        epoch: topology.epoch,
        subtopologies: Some(subtopologies),
        to_create: to_create.into_values().collect(),
        internal_partitions,
        status,
    })
}

/// Rule 2: partition counts of repartition topics, declared or inherited from the
/// sub-topology that writes them.
fn repartition_counts(
    topology: &StreamsTopology,
    partitions: &dyn Fn(&str) -> Option<i32>,
) -> Result<BTreeMap<String, i32>, InvalidTopology> {
    let mut counts: BTreeMap<String, i32> = topology
        .subtopologies
        .values()
        .flat_map(|s| &s.repartition_source_topics)
        .filter(|t| t.partitions != 0)
        .map(|t| (t.name.clone(), t.partitions))
        .collect();
    loop {
        let mut progress = false;
        let mut pending = false;
        for s in topology.subtopologies.values() {
            for sink in &s.repartition_sink_topics {
                if counts.contains_key(sink) {
                    continue;
                }
                let known = s
                    .repartition_source_topics
                    .iter()
                    .filter_map(|t| counts.get(&t.name).copied())
                    .chain(s.source_topics.iter().filter_map(|t| partitions(t)))
                    .max();
                match known {
                    Some(n) => {
                        counts.insert(sink.clone(), n);
                        progress = true;
                    }
                    None => pending = true,
                }
            }
        }
        if !pending {
            break;
        }
        if !progress {
            return Err(InvalidTopology(
                "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."
                    .to_string(),
            ));
        }
    }
    for s in topology.subtopologies.values() {
        if s.repartition_source_topics
            .iter()
            .any(|t| !counts.contains_key(&t.name))
        {
            return Err(InvalidTopology(
                "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic."
                    .to_string(),
            ));
        }
    }
    Ok(counts)
}

/// Rule 3. The outer error is an invalid topology; the inner one a status detail.
fn copartition(
    topology: &StreamsTopology,
    partitions: &dyn Fn(&str) -> Option<i32>,
    decided: &mut BTreeMap<String, i32>,
) -> Result<Result<(), String>, InvalidTopology> {
    let declared: BTreeMap<&str, i32> = topology
        .subtopologies
        .values()
        .flat_map(|s| &s.repartition_source_topics)
        .map(|t| (t.name.as_str(), t.partitions))
        .collect();
    for s in topology.subtopologies.values() {
        for group in s.copartition_topic_sets() {
            if group.is_empty() {
                continue;
            }
            let count = |t: &str, decided: &BTreeMap<String, i32>| {
                partitions(t)
                    .or_else(|| decided.get(t).copied())
                    .ok_or_else(|| {
                        InvalidTopology(format!("Number of partitions is not set for topic: {t}"))
                    })
            };
            let (repartition, user): (Vec<&String>, Vec<&String>) = group
                .iter()
                .partition(|t| declared.contains_key(t.as_str()));
            let fixed: Vec<&&String> = repartition
                .iter()
                .filter(|t| declared.get(t.as_str()).is_some_and(|p| *p != 0))
                .collect();
            let target = if user.is_empty() {
                if let Some(first) = fixed.first() {
                    let n = count(first, decided)?;
                    for t in &fixed {
                        if count(t, decided)? != n {
                            return Ok(Err(format!(
                                "Following topics do not have the same number of partitions: [{}]",
                                listed(&repartition, |t| count(t, decided).unwrap_or(0))
                            )));
                        }
                    }
                    n
                } else {
                    let mut max = 0;
                    for t in &repartition {
                        max = max.max(count(t, decided)?);
                    }
                    if max == 0 {
                        return Err(InvalidTopology(format!(
                            "All topics in the copartition group had undefined partition number: {repartition:?}"
                        )));
                    }
                    max
                }
            } else {
                let first = count(user[0], decided)?;
                for t in &user {
                    if count(t, decided)? != first {
                        return Ok(Err(format!(
                            "Following topics do not have the same number of partitions: [{}]",
                            listed(&user, |t| count(t, decided).unwrap_or(0))
                        )));
                    }
                }
                first
            };
            for t in &repartition {
                let is_fixed = declared.get(t.as_str()).is_some_and(|p| *p != 0);
                if is_fixed && count(t, decided)? != target {
                    return Ok(Err(format!(
                        "Number of partitions [{}] of repartition topic [{t}] doesn't match number of partitions [{target}] of the source topic.",
                        count(t, decided)?
                    )));
                }
                decided.insert((*t).clone(), target);
            }
        }
    }
    Ok(Ok(()))
}

/// `a=1, b=2`, sorted by name.
fn listed(topics: &[&String], count: impl Fn(&str) -> i32) -> String {
    let sorted: BTreeSet<&String> = topics.iter().copied().collect();
    sorted
        .iter()
        .map(|t| format!("{t}={}", count(t)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// At most three names, then how many more (as Kafka words it).
fn summarize(topics: &BTreeSet<&str>) -> String {
    if topics.is_empty() {
        return "<none>".to_string();
    }
    let shown: Vec<&str> = topics.iter().take(3).copied().collect();
    let more = topics.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} additional topics", shown.join(", "))
    } else {
        shown.join(", ")
    }
}
