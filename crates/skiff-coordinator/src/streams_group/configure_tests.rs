//! Configuring topologies against the topics that exist.

use std::collections::BTreeMap;

use super::*;

fn internal(name: &str, partitions: i32) -> InternalTopic {
    InternalTopic {
        name: name.to_string(),
        partitions,
        ..InternalTopic::default()
    }
}

fn changelog(name: &str) -> InternalTopic {
    InternalTopic {
        configs: BTreeMap::from([("cleanup.policy".to_string(), "compact".to_string())]),
        ..internal(name, 0)
    }
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The word count of Kafka Streams' quickstart: sub-topology 0 reads the input and writes a
/// repartition topic, sub-topology 1 reads it into a counting store.
fn word_count() -> StreamsTopology {
    let split = Subtopology {
        id: "0".to_string(),
        source_topics: strings(&["input"]),
        repartition_sink_topics: strings(&["app-counts-repartition"]),
        ..Subtopology::default()
    };
    let count = Subtopology {
        id: "1".to_string(),
        repartition_source_topics: vec![internal("app-counts-repartition", 0)],
        state_changelog_topics: vec![changelog("app-counts-changelog")],
        ..Subtopology::default()
    };
    StreamsTopology {
        epoch: 0,
        subtopologies: BTreeMap::from([("0".to_string(), split), ("1".to_string(), count)]),
    }
}

fn topics(existing: &[(&str, i32)]) -> impl Fn(&str) -> Option<i32> {
    let map: BTreeMap<String, i32> = existing.iter().map(|(n, p)| (n.to_string(), *p)).collect();
    move |name| map.get(name).copied()
}

#[test]
fn a_missing_source_topic_is_reported_and_nothing_is_created() {
    let c = configure(&word_count(), &topics(&[])).unwrap();
    assert!(!c.is_ready());
    let status = c.status.unwrap();
    assert_eq!(status.code, StatusCode::MissingSourceTopics);
    assert_eq!(status.detail, "Source topics input are missing.");
    assert!(c.to_create.is_empty());
    assert!(c.subtopologies.is_none());
}

#[test]
fn internal_topics_inherit_the_input_partition_count_and_are_created() {
    let c = configure(&word_count(), &topics(&[("input", 3)])).unwrap();
    let status = c.status.clone().unwrap();
    assert_eq!(status.code, StatusCode::MissingInternalTopics);
    assert_eq!(
        status.detail,
        "Internal topics are missing: app-counts-changelog, app-counts-repartition"
    );
    let created: Vec<(&str, i32)> = c
        .to_create
        .iter()
        .map(|t| (t.name.as_str(), t.partitions))
        .collect();
    assert_eq!(
        created,
        [("app-counts-changelog", 3), ("app-counts-repartition", 3)]
    );
    assert_eq!(
        c.to_create[0]
            .configs
            .get("cleanup.policy")
            .map(String::as_str),
        Some("compact")
    );
    assert_eq!(c.tasks("0"), 3);
    assert_eq!(c.tasks("1"), 3);
}

#[test]
fn once_every_topic_exists_the_topology_is_ready() {
    let c = configure(
        &word_count(),
        &topics(&[
            ("input", 3),
            ("app-counts-repartition", 3),
            ("app-counts-changelog", 3),
        ]),
    )
    .unwrap();
    assert!(c.is_ready(), "{c:?}");
    assert!(c.to_create.is_empty());
    let subs = c.subtopologies.unwrap();
    assert!(!subs["0"].stateful);
    assert!(subs["1"].stateful);
}

#[test]
fn an_internal_topic_with_the_wrong_partition_count_is_incorrectly_partitioned() {
    let c = configure(
        &word_count(),
        &topics(&[("input", 3), ("app-counts-repartition", 5)]),
    )
    .unwrap();
    let status = c.status.unwrap();
    assert_eq!(status.code, StatusCode::IncorrectlyPartitionedTopics);
    assert_eq!(
        status.detail,
        "Existing topic app-counts-repartition has different number of partitions: expected 3, found 5"
    );
}

#[test]
fn a_declared_repartition_count_wins_and_tasks_follow_the_largest_input() {
    let mut t = word_count();
    t.subtopologies
        .get_mut("1")
        .unwrap()
        .repartition_source_topics[0]
        .partitions = 6;
    let c = configure(&t, &topics(&[("input", 2)])).unwrap();
    let created: BTreeMap<&str, i32> = c
        .to_create
        .iter()
        .map(|t| (t.name.as_str(), t.partitions))
        .collect();
    assert_eq!(created["app-counts-repartition"], 6);
    assert_eq!(created["app-counts-changelog"], 6);
    assert_eq!(c.tasks("0"), 2);
    assert_eq!(c.tasks("1"), 6);
}

fn join(left: i32, right: i32) -> (StreamsTopology, impl Fn(&str) -> Option<i32>) {
    let s = Subtopology {
        id: "0".to_string(),
        source_topics: strings(&["left", "right"]),
        state_changelog_topics: vec![changelog("app-join-changelog")],
        copartition_groups: vec![CopartitionGroup {
            source_topics: vec![0, 1],
            ..CopartitionGroup::default()
        }],
        ..Subtopology::default()
    };
    let t = StreamsTopology {
        epoch: 1,
        subtopologies: BTreeMap::from([("0".to_string(), s)]),
    };
    (t, topics(&[("left", left), ("right", right)]))
}

#[test]
fn copartitioned_user_topics_must_agree() {
    let (t, existing) = join(3, 4);
    let status = configure(&t, &existing).unwrap().status.unwrap();
    assert_eq!(status.code, StatusCode::IncorrectlyPartitionedTopics);
    assert_eq!(
        status.detail,
        "Following topics do not have the same number of partitions: [left=3, right=4]"
    );
    let (t, existing) = join(4, 4);
    let c = configure(&t, &existing).unwrap();
    assert_eq!(c.tasks("0"), 4);
    assert_eq!(c.status.unwrap().code, StatusCode::MissingInternalTopics);
}

#[test]
fn a_repartition_topic_read_but_never_written_is_an_invalid_topology() {
    let mut t = word_count();
    t.subtopologies
        .get_mut("0")
        .unwrap()
        .repartition_sink_topics
        .clear();
    let e = configure(&t, &topics(&[("input", 3)])).unwrap_err();
    assert!(e.0.contains("never used as a sink topic"), "{e}");
}

#[test]
fn structural_checks() {
    assert_eq!(word_count().validate(), Ok(()));
    let mut t = word_count();
    t.subtopologies.get_mut("1").unwrap().state_changelog_topics[0].partitions = 3;
    assert_eq!(
        t.validate().unwrap_err(),
        "Changelog topic app-counts-changelog must have an undefined partition count, but it is set to 3."
    );
    let (mut t, _) = join(1, 1);
    t.subtopologies.get_mut("0").unwrap().copartition_groups[0].source_topics = vec![0, 7];
    assert!(t.validate().is_err());
    assert_eq!(t.check_changelogs(), Ok(()));
    let (mut t, _) = join(1, 1);
    t.epoch = -1;
    assert!(t.validate().is_err());
}

#[test]
fn many_missing_topics_are_summarised() {
    let s = Subtopology {
        id: "0".to_string(),
        source_topics: strings(&["a", "b", "c", "d", "e"]),
        ..Subtopology::default()
    };
    let t = StreamsTopology {
        epoch: 0,
        subtopologies: BTreeMap::from([("0".to_string(), s)]),
    };
    let status = configure(&t, &topics(&[])).unwrap().status.unwrap();
    assert_eq!(
        status.detail,
        "Source topics a, b, c and 2 additional topics are missing."
    );
}
