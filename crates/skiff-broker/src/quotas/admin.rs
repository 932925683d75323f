//! What AlterClientQuotas and DescribeClientQuotas decide, without I/O: Kafka 4's
//! validation (`ClientQuotaControlManager`) and filter matching (`ClientQuotasImage.describe`),
//! with Kafka's error codes and messages.
//!
//! Alter: each entry's entity is read as Kafka's request does (a map: a type named twice
//! keeps its last name); an entity named twice in one request, or a key twice in one entry,
//! answers INVALID_REQUEST "Ignoring duplicate entity …" (Kafka's order of checks makes the
//! duplicate-key case end with that message too). Entity types are `user` and `client-id`;
//! `ip` (connection_creation_rate) is refused as an unhandled type because Skiff does not
//! enforce connection rates. Keys: the four user/client quotas, each > 0, the byte rates whole
//! numbers. Entities that pass are applied together; the others change nothing.

use std::collections::HashSet;

use kafka_protocol::messages::alter_client_quotas_request::EntryData as AlterEntry;
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::ResponseError;

use super::store::{QuotaEntity, Quotas, CLIENT_ID, IP, USER};

/// A Kafka `ApiError`: a code and its message.
pub type ApiError = (ResponseError, String);

/// The quota keys of user and client-id entities, and whether each must be a whole number
/// (Kafka types the byte rates LONG and the other two DOUBLE).
pub const KEYS: [(&str, bool); 4] = [
    ("producer_byte_rate", true),
    ("consumer_byte_rate", true),
    ("request_percentage", false),
    ("controller_mutation_rate", false),
];

/// An entity as the request named it, types in first-seen order (for the response).
pub type NamedEntity = Vec<(String, Option<String>)>;

/// One response row of an alteration.
pub struct AlterResult {
    pub entity: NamedEntity,
    pub result: Result<(), ApiError>,
}

/// Reads the entity of `entry` as Kafka's request does (a map: last name wins).
fn named_entity(entry: &AlterEntry) -> NamedEntity {
    let mut out: NamedEntity = Vec::new();
    for e in &entry.entity {
        let name = e.entity_name.as_ref().map(|n| n.to_string());
        match out.iter_mut().find(|(t, _)| t == e.entity_type.as_str()) {
            Some(slot) => slot.1 = name,
            None => out.push((e.entity_type.to_string(), name)),
        }
    }
    out
}

fn invalid(message: String) -> ApiError {
    (ResponseError::InvalidRequest, message)
}

/// Kafka's `ClientQuotaEntity.toString` for an entity as named.
fn display(entity: &NamedEntity) -> String {
    let parts: Vec<String> = entity
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("null")))
        .collect();
    format!("ClientQuotaEntity(entries={{{}}})", parts.join(", "))
}

/// Kafka's `validateEntity` and `configKeysForEntityType`.
fn validate_entity(entity: &NamedEntity) -> Result<QuotaEntity, ApiError> {
    if entity.is_empty() {
        return Err(invalid("Invalid empty client quota entity".into()));
    }
    let mut out = QuotaEntity::default();
    for (t, name) in entity {
        match t.as_str() {
            USER => out.user = Some(name.clone()),
            CLIENT_ID => out.client_id = Some(name.clone()),
            _ => return Err(invalid(format!("Unhandled client quota entity type: {t}"))),
        }
        if name.as_deref() == Some("") {
            return Err(invalid(format!("Empty {t} not supported")));
        }
    }
    Ok(out)
}

/// Kafka's `validateQuotaKeyValue` for user/client-id keys.
pub fn validate_value(key: &str, value: f64) -> Result<(), ApiError> {
    let Some(&(_, whole)) = KEYS.iter().find(|(k, _)| *k == key) else {
        return Err(invalid(format!("Invalid configuration key {key}")));
    };
    // `!(value > 0)` also refuses NaN, which Kafka's `value <= 0.0` lets through only to
    // fail later; a NaN quota cannot be enforced.
    if value.is_nan() || value <= 0.0 {
        return Err(invalid(format!("Quota {key} must be greater than 0")));
    }
    if whole {
        if value > i64::MAX as f64 {
            return Err(invalid(format!(
                "Proposed value for {key} is too large for a LONG."
            )));
        }
        if (value % 1.0).abs() > 1e-6 {
            return Err(invalid(format!("{key} cannot be a fractional value.")));
        }
    }
    Ok(())
}

/// Applies the alterations of `entries` to `current`: the rows of the response (one per
/// distinct entity, in first-seen order) and the quotas after the valid ones.
pub fn alter(current: &Quotas, entries: &[AlterEntry]) -> (Vec<AlterResult>, Quotas) {
    let mut next = current.clone();
    let mut results: Vec<AlterResult> = Vec::new();
    for entry in entries {
        let named = named_entity(entry);
        let mut sorted = named.clone();
        sorted.sort();
        let position = results.iter().position(|r| {
            let mut other = r.entity.clone();
            other.sort();
            other == sorted
        });
        let mut keys = HashSet::new();
        let duplicate_key = entry.ops.iter().find(|op| !keys.insert(op.key.as_str()));
        let outcome = if position.is_some() || duplicate_key.is_some() {
            Err(invalid(format!(
                "Ignoring duplicate entity {}",
                display(&named)
            )))
        } else {
            alter_entity(&mut next, &named, entry)
        };
        match position {
            Some(i) => results[i].result = outcome,
            None => results.push(AlterResult {
                entity: named,
                result: outcome,
            }),
        }
    }
    (results, next)
}

/// Kafka's `alterClientQuotaEntity`: validates every op first, then applies them all.
fn alter_entity(
    next: &mut Quotas,
    named: &NamedEntity,
    entry: &AlterEntry,
) -> Result<(), ApiError> {
    let entity = validate_entity(named)?;
    for op in &entry.ops {
        if !op.remove {
            validate_value(op.key.as_str(), op.value)?;
        }
    }
    let values = next.entry(entity.clone()).or_default();
    for op in &entry.ops {
        if op.remove {
            values.remove(op.key.as_str());
        } else {
            values.insert(op.key.to_string(), op.value);
        }
    }
    if values.is_empty() {
        next.remove(&entity);
    }
    Ok(())
}

/// Kafka's match types.
const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_SPECIFIED: i8 = 2;

/// The entities of `current` that the filter selects, in the store's order, or the error
/// Kafka answers for a bad filter.
pub fn describe<'q>(
    current: &'q Quotas,
    components: &[ComponentData],
    strict: bool,
) -> Result<Vec<(&'q QuotaEntity, &'q super::store::QuotaValues)>, ApiError> {
    // type -> exact name (None: the default); types that must merely be present.
    let mut exact: Vec<(String, Option<String>)> = Vec::new();
    let mut present: Vec<String> = Vec::new();
    for c in components {
        let t = c.entity_type.as_str();
        if t.is_empty() {
            return Err(invalid("Invalid empty entity type.".into()));
        }
        if exact.iter().any(|(e, _)| e == t) || present.iter().any(|p| p == t) {
            return Err(invalid(format!(
                "Entity type {t} cannot appear more than once in the filter."
            )));
        }
        if ![IP, USER, CLIENT_ID].contains(&t) {
            return Err((
                ResponseError::UnsupportedVersion,
                format!("Unsupported entity type {t}"),
            ));
        }
        let m = c._match.as_ref().map(|m| m.to_string());
        match c.match_type {
            MATCH_EXACT => match m {
                Some(name) => exact.push((t.to_string(), Some(name))),
                None => {
                    return Err(invalid(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                    ))
                }
            },
            MATCH_DEFAULT => {
                if m.is_some() {
                    return Err(invalid(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                            .into(),
                    ));
                }
                exact.push((t.to_string(), None));
            }
            MATCH_SPECIFIED => {
                if m.is_some() {
                    return Err(invalid(
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                            .into(),
                    ));
                }
                present.push(t.to_string());
            }
            other => return Err(invalid(format!("Unknown match type {other}"))),
        }
    }
    let uses = |t: &str| exact.iter().any(|(e, _)| e == t) || present.iter().any(|p| p == t);
    if uses(IP) && (uses(USER) || uses(CLIENT_ID)) {
        return Err(invalid(
            "Invalid entity filter component combination. IP filter component should not be \
             used with user or clientId filter component."
                .into(),
        ));
    }
    Ok(current
        .iter()
        .filter(|(entity, _)| {
            if strict && entity.parts().len() != exact.len() + present.len() {
                return false;
            }
            exact
                .iter()
                .all(|(t, name)| entity.get(t) == Some(name.as_deref()))
                && present.iter().all(|t| entity.get(t).is_some())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::alter_client_quotas_request::{EntityData, OpData};
    use kafka_protocol::protocol::StrBytes;

    fn entry(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> AlterEntry {
        AlterEntry::default()
            .with_entity(
                entity
                    .iter()
                    .map(|(t, n)| {
                        EntityData::default()
                            .with_entity_type(StrBytes::from_string(t.to_string()))
                            .with_entity_name(n.map(|n| StrBytes::from_string(n.to_string())))
                    })
                    .collect(),
            )
            .with_ops(
                ops.iter()
                    .map(|(k, v)| {
                        OpData::default()
                            .with_key(StrBytes::from_string(k.to_string()))
                            .with_value(v.unwrap_or(0.0))
                            .with_remove(v.is_none())
                    })
                    .collect(),
            )
    }

    fn error_of(r: &AlterResult) -> Option<(i16, String)> {
        r.result.as_ref().err().map(|(e, m)| (e.code(), m.clone()))
    }

    #[test]
    fn values_are_validated_as_kafka_does() {
        let bad = |k: &str, v: f64| validate_value(k, v).unwrap_err().1;
        assert_eq!(bad("nope", 1.0), "Invalid configuration key nope");
        assert_eq!(
            bad("connection_creation_rate", 1.0),
            "Invalid configuration key connection_creation_rate"
        );
        assert_eq!(
            bad("producer_byte_rate", 0.0),
            "Quota producer_byte_rate must be greater than 0"
        );
        assert_eq!(
            bad("request_percentage", -1.0),
            "Quota request_percentage must be greater than 0"
        );
        assert_eq!(
            bad("consumer_byte_rate", 1.5),
            "consumer_byte_rate cannot be a fractional value."
        );
        assert_eq!(
            bad("producer_byte_rate", 1e300),
            "Proposed value for producer_byte_rate is too large for a LONG."
        );
        assert!(validate_value("request_percentage", 0.5).is_ok());
        assert!(validate_value("controller_mutation_rate", 2.25).is_ok());
        assert!(validate_value("producer_byte_rate", 1024.0).is_ok());
    }

    #[test]
    fn alter_applies_the_valid_entities_and_reports_the_others() {
        let entries = vec![
            entry(
                &[("user", Some("alice"))],
                &[("producer_byte_rate", Some(1024.0))],
            ),
            entry(
                &[("user", None), ("client-id", Some("c"))],
                &[("request_percentage", Some(50.0))],
            ),
            entry(
                &[("group", Some("g"))],
                &[("producer_byte_rate", Some(1.0))],
            ),
            entry(&[], &[("producer_byte_rate", Some(1.0))]),
            entry(
                &[("client-id", Some(""))],
                &[("producer_byte_rate", Some(1.0))],
            ),
            entry(
                &[("ip", Some("1.2.3.4"))],
                &[("connection_creation_rate", Some(1.0))],
            ),
            entry(
                &[("user", Some("bob"))],
                &[("producer_byte_rate", Some(1.0)), ("nope", Some(1.0))],
            ),
            entry(
                &[("user", Some("carol"))],
                &[
                    ("producer_byte_rate", Some(1.0)),
                    ("producer_byte_rate", Some(2.0)),
                ],
            ),
        ];
        let (results, next) = alter(&Quotas::new(), &entries);
        let errors: Vec<_> = results.iter().map(error_of).collect();
        assert_eq!(errors[0], None);
        assert_eq!(errors[1], None);
        assert_eq!(
            errors[2],
            Some((42, "Unhandled client quota entity type: group".into()))
        );
        assert_eq!(
            errors[3],
            Some((42, "Invalid empty client quota entity".into()))
        );
        assert_eq!(
            errors[4],
            Some((42, "Empty client-id not supported".into()))
        );
        assert_eq!(
            errors[5],
            Some((42, "Unhandled client quota entity type: ip".into()))
        );
        assert_eq!(
            errors[6],
            Some((42, "Invalid configuration key nope".into()))
        );
        assert_eq!(
            errors[7],
            Some((
                42,
                "Ignoring duplicate entity ClientQuotaEntity(entries={user=carol})".into()
            ))
        );
        assert_eq!(next.len(), 2, "{next:?}");
        assert_eq!(
            next[&QuotaEntity::user(Some("alice"))]["producer_byte_rate"],
            1024.0
        );
        assert_eq!(
            next[&QuotaEntity::user_client(None, Some("c"))]["request_percentage"],
            50.0
        );
        // Removing the last value removes the entity; removing an absent key is fine.
        let (results, after) = alter(
            &next,
            &[entry(
                &[("user", Some("alice"))],
                &[("producer_byte_rate", None), ("consumer_byte_rate", None)],
            )],
        );
        assert!(results[0].result.is_ok());
        assert_eq!(after.len(), 1);
    }

    #[test]
    fn an_entity_named_twice_keeps_its_first_change_and_answers_once() {
        let entries = vec![
            entry(
                &[("user", Some("a")), ("client-id", Some("c"))],
                &[("producer_byte_rate", Some(10.0))],
            ),
            entry(
                &[("client-id", Some("c")), ("user", Some("a"))],
                &[("producer_byte_rate", Some(20.0))],
            ),
        ];
        let (results, next) = alter(&Quotas::new(), &entries);
        assert_eq!(results.len(), 1);
        assert_eq!(error_of(&results[0]).unwrap().0, 42);
        assert_eq!(
            next[&QuotaEntity::user_client(Some("a"), Some("c"))]["producer_byte_rate"],
            10.0
        );
    }

    fn component(t: &str, match_type: i8, m: Option<&str>) -> ComponentData {
        ComponentData::default()
            .with_entity_type(StrBytes::from_string(t.to_string()))
            .with_match_type(match_type)
            .with_match(m.map(|m| StrBytes::from_string(m.to_string())))
    }

    #[test]
    fn describe_filters_by_exact_default_and_any_name() {
        let mut q = Quotas::new();
        for e in [
            QuotaEntity::user(Some("alice")),
            QuotaEntity::user(None),
            QuotaEntity::user_client(Some("alice"), Some("app")),
            QuotaEntity::client(None),
        ] {
            q.insert(e, [("producer_byte_rate".to_string(), 1.0)].into());
        }
        let names = |c: &[ComponentData], strict: bool| -> Vec<String> {
            describe(&q, c, strict)
                .unwrap()
                .iter()
                .map(|(e, _)| e.to_string())
                .collect()
        };
        assert_eq!(names(&[], false).len(), 4);
        assert_eq!(names(&[], true).len(), 0);
        assert_eq!(
            names(&[component("user", 0, Some("alice"))], false).len(),
            2
        );
        assert_eq!(
            names(&[component("user", 0, Some("alice"))], true),
            vec!["ClientQuotaEntity(entries={user=alice})"]
        );
        assert_eq!(
            names(&[component("user", 1, None)], false),
            vec!["ClientQuotaEntity(entries={user=null})"]
        );
        assert_eq!(names(&[component("user", 2, None)], true).len(), 2);
        assert_eq!(names(&[component("client-id", 2, None)], false).len(), 2);
        assert!(names(&[component("ip", 2, None)], false).is_empty());
        let err = |c: &[ComponentData]| describe(&q, c, false).unwrap_err();
        assert_eq!(
            err(&[component("", 0, Some("x"))]).1,
            "Invalid empty entity type."
        );
        assert_eq!(
            err(&[component("group", 2, None)]).0,
            ResponseError::UnsupportedVersion
        );
        assert_eq!(
            err(&[component("user", 0, None)]).1,
            "Request specified MATCH_TYPE_EXACT, but set match string to null."
        );
        assert_eq!(
            err(&[component("user", 1, Some("a"))]).0,
            ResponseError::InvalidRequest
        );
        assert_eq!(
            err(&[component("user", 2, Some("a"))]).0,
            ResponseError::InvalidRequest
        );
        assert_eq!(err(&[component("user", 7, None)]).1, "Unknown match type 7");
        assert_eq!(
            err(&[component("user", 2, None), component("user", 1, None)]).1,
            "Entity type user cannot appear more than once in the filter."
        );
        assert_eq!(
            err(&[component("ip", 2, None), component("user", 2, None)]).0,
            ResponseError::InvalidRequest
        );
    }
}
