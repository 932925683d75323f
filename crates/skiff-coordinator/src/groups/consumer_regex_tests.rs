//! Regex subscriptions of the KIP-848 state machine: whole-name matching, clearing, topics
//! created after the member joined being picked up, and each member's regex scope.

use super::*;

fn topics(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn counts(names: &[&str]) -> HashMap<String, i32> {
    names.iter().map(|s| (s.to_string(), 2)).collect()
}

fn hb(id: &str, epoch: i32, regex: Option<Option<&str>>, owned: &Assignment) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: 10_000,
        regex: regex.map(|r| r.map(|s| TopicRegex::new(s).unwrap())),
        owned: Some(owned.clone()),
        ..Heartbeat::default()
    }
}

fn names(a: &Assignment) -> Vec<&str> {
    a.keys().map(String::as_str).collect()
}

#[test]
fn regex_matches_whole_names_only() {
    let re = TopicRegex::new("rx-.*").unwrap();
    assert!(re.matches("rx-a"));
    assert!(!re.matches("a-rx-a"));
    let re = TopicRegex::new("rx|ry").unwrap();
    assert!(re.matches("ry"));
    assert!(!re.matches("rxy"));
    let re = TopicRegex::new("^rx-.*$").unwrap();
    assert!(re.matches("rx-1"));
}

#[test]
fn invalid_regexes_are_refused() {
    assert!(TopicRegex::new("rx-(").is_err());
    assert!(TopicRegex::new("a)|(b").is_err());
    assert!(TopicRegex::new("[").is_err());
}

#[test]
fn regex_member_gets_matching_topics_and_later_ones() {
    let mut s = ConsumerState::default();
    s.observe_topics(topics(&["rx-a", "other"]));
    let all = counts(&["rx-a", "rx-b", "other"]);
    let r = s
        .heartbeat(
            hb("m", 0, Some(Some("rx-.*")), &Assignment::new()),
            &all,
            45_000,
            0,
        )
        .unwrap();
    let owned = r.assignment.clone().unwrap();
    assert_eq!(names(&owned), vec!["rx-a"]);
    assert_eq!(s.subscribed_topics(), topics(&["rx-a"]));
    let before = s.epoch;
    // rx-b is created: the next heartbeat (regex unchanged) picks it up at a new epoch.
    s.observe_topics(topics(&["rx-a", "rx-b", "other"]));
    let r2 = s
        .heartbeat(hb("m", r.member_epoch, None, &owned), &all, 45_000, 10)
        .unwrap();
    assert!(s.epoch > before);
    assert_eq!(r2.member_epoch, s.epoch);
    assert_eq!(names(&r2.assignment.unwrap()), vec!["rx-a", "rx-b"]);
}

#[test]
fn empty_regex_clears_and_null_keeps_it() {
    let mut s = ConsumerState::default();
    s.observe_topics(topics(&["rx-a"]));
    let all = counts(&["rx-a"]);
    let r = s
        .heartbeat(
            hb("m", 0, Some(Some("rx-.*")), &Assignment::new()),
            &all,
            45_000,
            0,
        )
        .unwrap();
    let owned = r.assignment.clone().unwrap();
    let r = s
        .heartbeat(hb("m", r.member_epoch, None, &owned), &all, 45_000, 1)
        .unwrap();
    assert_eq!(
        r.assignment, None,
        "null leaves the regex and assignment alone"
    );
    assert_eq!(
        s.members["m"].regex.as_ref().map(TopicRegex::as_str),
        Some("rx-.*")
    );
    let r = s
        .heartbeat(hb("m", r.member_epoch, Some(None), &owned), &all, 45_000, 2)
        .unwrap();
    assert!(s.members["m"].regex.is_none());
    assert!(s.subscribed_topics().is_empty());
    // The partitions are revoked; once released the member holds nothing.
    assert_eq!(r.assignment, Some(Assignment::new()));
    let r = s
        .heartbeat(
            hb("m", r.member_epoch, None, &Assignment::new()),
            &all,
            45_000,
            3,
        )
        .unwrap();
    assert_eq!(r.member_epoch, s.epoch);
    assert_eq!(s.state_name(), "Stable");
}

#[test]
fn regex_and_names_combine() {
    let mut s = ConsumerState::default();
    s.observe_topics(topics(&["rx-a", "plain", "other"]));
    let all = counts(&["rx-a", "plain", "other"]);
    let mut beat = hb("m", 0, Some(Some("rx-.*")), &Assignment::new());
    beat.subscribed = Some(vec!["plain".into()]);
    let r = s.heartbeat(beat, &all, 45_000, 0).unwrap();
    assert_eq!(names(&r.assignment.unwrap()), vec!["plain", "rx-a"]);
}

#[test]
fn regex_is_persisted_and_restored() {
    use super::super::consumer_records::ConsumerKey;
    use super::super::consumer_store::{restore, snapshot};
    let mut s = ConsumerState::default();
    s.observe_topics(topics(&["rx-a"]));
    s.heartbeat(
        hb("m", 0, Some(Some("rx-.*")), &Assignment::new()),
        &counts(&["rx-a"]),
        45_000,
        0,
    )
    .unwrap();
    let id = uuid::Uuid::from_bytes([3; 16]);
    let records = snapshot("g", &s, &|t: &str| (t == "rx-a").then_some(id));
    assert!(records
        .keys()
        .any(|k| matches!(k, ConsumerKey::Member { .. })));
    let back = restore(
        &records,
        &|u| (u == id).then(|| "rx-a".to_string()),
        &|t: &str| (t == "rx-a").then_some(2),
        45_000,
        0,
    )
    .unwrap();
    let m = &back.members["m"];
    assert_eq!(m.regex.as_ref().map(TopicRegex::as_str), Some("rx-.*"));
    assert!(m.subscribed.is_empty());
}

/// A scope that lets through the topics starting with `prefix`.
fn only(prefix: &'static str) -> RegexScope {
    RegexScope::Only(std::sync::Arc::new(move |t: &str| t.starts_with(prefix)))
}

#[test]
fn each_member_resolves_its_regex_within_its_own_scope() {
    let mut s = ConsumerState::default();
    s.observe_topics(topics(&["rx-a1", "rx-b1", "other"]));
    let all = counts(&["rx-a1", "rx-b1", "rx-a2", "other"]);
    let join = |id: &str, scope: RegexScope| Heartbeat {
        regex_scope: scope,
        ..hb(id, 0, Some(Some("rx-.*")), &Assignment::new())
    };
    s.heartbeat(join("a", only("rx-a")), &all, 45_000, 0)
        .unwrap();
    s.heartbeat(join("b", RegexScope::All), &all, 45_000, 0)
        .unwrap();
    assert_eq!(s.members["a"].matched, topics(&["rx-a1"]));
    assert_eq!(s.members["b"].matched, topics(&["rx-a1", "rx-b1"]));
    // A new topic: b's heartbeat (everything visible) must not widen a's match beyond a's
    // own scope.
    s.observe_topics(topics(&["rx-a1", "rx-b1", "rx-a2", "other"]));
    let epoch = s.members["b"].epoch;
    let mut beat = hb("b", epoch, None, &Assignment::new());
    beat.regex_scope = RegexScope::All;
    s.heartbeat(beat, &all, 45_000, 10).unwrap();
    assert_eq!(s.members["a"].matched, topics(&["rx-a1", "rx-a2"]));
    assert_eq!(s.members["b"].matched, topics(&["rx-a1", "rx-a2", "rx-b1"]));
    // Nothing visible: nothing matched.
    let epoch = s.members["a"].epoch;
    let mut beat = hb("a", epoch, None, &Assignment::new());
    beat.regex_scope = only("none-");
    s.heartbeat(beat, &all, 45_000, 20).unwrap();
    assert!(s.members["a"].matched.is_empty());
}
