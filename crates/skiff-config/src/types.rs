//! Shared vocabulary of configs: Kafka's config value types and sources (with their wire ids),
//! the described-config record returned for DescribeConfigs, and Kafka-compatible parsing of
//! a config value string (`ConfigDef.parseType` semantics) plus the range/choice validators.
//!
//! Pure functions and plain data; no I/O, no shared state.

use crate::error::TopicConfigError;

/// Kafka's config value types, as DescribeConfigs (v3+) reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigType {
    Boolean,
    String,
    Int,
    Short,
    Long,
    Double,
    List,
    Class,
    Password,
}

impl ConfigType {
    /// Wire id in DescribeConfigsResponse (`config_type`).
    pub fn id(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Short => 4,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Class => 8,
            ConfigType::Password => 9,
        }
    }

    /// Kafka's upper-case type name, used in its error messages ("Not a number of type LONG").
    pub fn kafka_name(self) -> &'static str {
        match self {
            ConfigType::Boolean => "BOOLEAN",
            ConfigType::String => "STRING",
            ConfigType::Int => "INT",
            ConfigType::Short => "SHORT",
            ConfigType::Long => "LONG",
            ConfigType::Double => "DOUBLE",
            ConfigType::List => "LIST",
            ConfigType::Class => "CLASS",
            ConfigType::Password => "PASSWORD",
        }
    }
}

/// Where a described value comes from; ids are Kafka's `DescribeConfigsResponse.ConfigSource`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigSource {
    Unknown,
    /// A per-topic override (CreateTopics / AlterConfigs / `[topic.config]`).
    TopicConfig,
    DynamicBroker,
    DynamicDefaultBroker,
    /// Set in the broker's static configuration (file, `--set`, environment).
    StaticBroker,
    /// Nobody set it: Kafka's default.
    Default,
    /// A group's override (IncrementalAlterConfigs / AlterConfigs on a GROUP resource).
    GroupConfig,
}

impl ConfigSource {
    /// Wire id in DescribeConfigsResponse (`config_source`).
    pub fn id(self) -> i8 {
        match self {
            ConfigSource::Unknown => 0,
            ConfigSource::TopicConfig => 1,
            ConfigSource::DynamicBroker => 2,
            ConfigSource::DynamicDefaultBroker => 3,
            ConfigSource::StaticBroker => 4,
            ConfigSource::Default => 5,
            ConfigSource::GroupConfig => 8,
        }
    }
}

/// One config entry as DescribeConfigs reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct DescribedConfig {
    pub name: String,
    /// `None` for unset configs without a default, and for sensitive values (never sent).
    pub value: Option<String>,
    pub source: ConfigSource,
    pub read_only: bool,
    pub is_sensitive: bool,
    pub kind: ConfigType,
    pub doc: &'static str,
    /// Synonyms in Kafka's precedence order: (name, value, source).
    pub synonyms: Vec<(String, Option<String>, ConfigSource)>,
}

/// A value after Kafka-style parsing. Integers of every width are held as `i64` after their
/// own width was range-checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Parsed {
    Bool(bool),
    Str(String),
    Int(i64),
    Double(f64),
    List(Vec<String>),
}

/// Value constraints, mirroring the validators Kafka attaches to its config definitions.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Validator {
    None,
    /// Integer `>= min`.
    AtLeast(i64),
    /// Integer in `[min, max]`.
    Between(i64, i64),
    /// Double in `[0, 1]` (ratios).
    Ratio,
    /// String equal (case-sensitive, like Kafka's `ValidString`) to one of these.
    OneOf(&'static [&'static str]),
    /// String equal, ignoring ASCII case, to one of these (Kafka's `CaseInsensitiveValidString`).
    OneOfIgnoreCase(&'static [&'static str]),
    /// Every list element is one of these (Kafka's `ValidList`); the empty list is allowed.
    ListOf(&'static [&'static str]),
    /// gzip level: 1..=9 or -1 (the codec's default).
    GzipLevel,
    /// `*` or `partition:broker` pairs.
    ThrottledReplicas,
    /// Empty, or a legal topic name (Kafka's rules): a config that names another topic.
    TopicNameOrEmpty,
}

/// Java's `Double.toString` for the values configs use: integral values keep a `.0`.
pub(crate) fn java_double(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e7 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// Parse `raw` as Kafka does for a value of type `kind` (trimmed; booleans case-insensitive;
/// lists split on commas with surrounding whitespace; empty list for an empty string), then
/// apply `validator`. Errors carry Kafka's message text.
pub(crate) fn parse_value(
    name: &str,
    kind: ConfigType,
    raw: &str,
    validator: Validator,
) -> Result<Parsed, TopicConfigError> {
    let t = raw.trim();
    let not_number = || {
        TopicConfigError::invalid(
            name,
            raw,
            &format!("Not a number of type {}", kind.kafka_name()),
        )
    };
    let parsed = match kind {
        ConfigType::Boolean => {
            if t.eq_ignore_ascii_case("true") {
                Parsed::Bool(true)
            } else if t.eq_ignore_ascii_case("false") {
                Parsed::Bool(false)
            } else {
                return Err(TopicConfigError::invalid(
                    name,
                    raw,
                    "Expected value to be either true or false",
                ));
            }
        }
        ConfigType::String | ConfigType::Class | ConfigType::Password => Parsed::Str(t.to_string()),
        ConfigType::Int => Parsed::Int(i64::from(t.parse::<i32>().map_err(|_| not_number())?)),
        ConfigType::Short => Parsed::Int(i64::from(t.parse::<i16>().map_err(|_| not_number())?)),
        ConfigType::Long => Parsed::Int(t.parse::<i64>().map_err(|_| not_number())?),
        ConfigType::Double => {
            let v = t.parse::<f64>().map_err(|_| not_number())?;
            if v.is_nan() {
                return Err(not_number());
            }
            Parsed::Double(v)
        }
        ConfigType::List => {
            if t.is_empty() {
                Parsed::List(Vec::new())
            } else {
                Parsed::List(t.split(',').map(|s| s.trim().to_string()).collect())
            }
        }
    };
    validate(name, &parsed, validator)?;
    Ok(parsed)
}

fn validate(name: &str, v: &Parsed, validator: Validator) -> Result<(), TopicConfigError> {
    let shown = |v: &Parsed| match v {
        Parsed::Int(i) => i.to_string(),
        Parsed::Double(d) => java_double(*d),
        Parsed::Str(s) => s.clone(),
        Parsed::Bool(b) => b.to_string(),
        Parsed::List(l) => l.join(","),
    };
    match (validator, v) {
        (Validator::None, _) => Ok(()),
        (Validator::AtLeast(min), Parsed::Int(i)) if *i < min => Err(TopicConfigError::invalid(
            name,
            &shown(v),
            &format!("Value must be at least {min}"),
        )),
        (Validator::Between(min, _), Parsed::Int(i)) if *i < min => Err(TopicConfigError::invalid(
            name,
            &shown(v),
            &format!("Value must be at least {min}"),
        )),
        (Validator::Between(_, max), Parsed::Int(i)) if *i > max => Err(TopicConfigError::invalid(
            name,
            &shown(v),
            &format!("Value must be no more than {max}"),
        )),
        (Validator::Ratio, Parsed::Double(d)) if *d < 0.0 => Err(TopicConfigError::invalid(
            name,
            &shown(v),
            "Value must be at least 0",
        )),
        (Validator::Ratio, Parsed::Double(d)) if *d > 1.0 => Err(TopicConfigError::invalid(
            name,
            &shown(v),
            "Value must be no more than 1",
        )),
        (Validator::OneOf(choices), Parsed::Str(s)) if !choices.contains(&s.as_str()) => {
            Err(TopicConfigError::invalid(
                name,
                s,
                &format!("String must be one of: {}", choices.join(", ")),
            ))
        }
        (Validator::OneOfIgnoreCase(choices), Parsed::Str(s))
            if !choices.iter().any(|c| c.eq_ignore_ascii_case(s)) =>
        {
            Err(TopicConfigError::invalid(
                name,
                s,
                &format!(
                    "String must be one of (case insensitive): {}",
                    choices.join(", ")
                ),
            ))
        }
        (Validator::ListOf(choices), Parsed::List(items)) => {
            match items.iter().find(|i| !choices.contains(&i.as_str())) {
                Some(bad) => Err(TopicConfigError::invalid(
                    name,
                    bad,
                    &format!("String must be one of: {}", choices.join(", ")),
                )),
                None => Ok(()),
            }
        }
        (Validator::TopicNameOrEmpty, Parsed::Str(s)) if !s.is_empty() => {
            match crate::broker::validate_topic_name(s) {
                Ok(()) => Ok(()),
                Err(why) => Err(TopicConfigError::invalid(name, s, &why)),
            }
        }
        (Validator::GzipLevel, Parsed::Int(i)) if *i != -1 && !(1..=9).contains(i) => {
            Err(TopicConfigError::invalid(
                name,
                &shown(v),
                "Value must be between 1 and 9 or equal to -1",
            ))
        }
        (Validator::ThrottledReplicas, Parsed::List(items)) => {
            let ok = items.is_empty()
                || (items.len() == 1 && items[0] == "*")
                || items.iter().all(|i| is_replica_pair(i));
            if ok {
                Ok(())
            } else {
                Err(TopicConfigError::invalid(
                    name,
                    &shown(v),
                    "must be the literal '*' or a list of replicas in the form partitionId:brokerId,partitionId:brokerId,...",
                ))
            }
        }
        _ => Ok(()),
    }
}

fn is_replica_pair(s: &str) -> bool {
    match s.split_once(':') {
        Some((p, b)) => p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_kafka_parse_rules() {
        assert_eq!(
            parse_value("x", ConfigType::Int, " 42 ", Validator::None).unwrap(),
            Parsed::Int(42)
        );
        let e = parse_value("x", ConfigType::Int, "3000000000", Validator::None).unwrap_err();
        assert_eq!(
            e.message,
            "Invalid value 3000000000 for configuration x: Not a number of type INT"
        );
        let e = parse_value("x", ConfigType::Boolean, "yes", Validator::None).unwrap_err();
        assert_eq!(
            e.message,
            "Invalid value yes for configuration x: Expected value to be either true or false"
        );
        assert_eq!(
            parse_value("x", ConfigType::Boolean, "TRUE", Validator::None).unwrap(),
            Parsed::Bool(true)
        );
    }

    #[test]
    fn lists_split_and_validate_each_element() {
        let v = parse_value(
            "p",
            ConfigType::List,
            "compact , delete",
            Validator::ListOf(&["compact", "delete"]),
        )
        .unwrap();
        assert_eq!(v, Parsed::List(vec!["compact".into(), "delete".into()]));
        assert_eq!(
            parse_value("p", ConfigType::List, "", Validator::ListOf(&["compact"])).unwrap(),
            Parsed::List(vec![])
        );
        let e = parse_value(
            "p",
            ConfigType::List,
            "compact,,delete",
            Validator::ListOf(&["compact", "delete"]),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "Invalid value  for configuration p: String must be one of: compact, delete"
        );
    }

    #[test]
    fn doubles_print_like_java() {
        let e = parse_value("r", ConfigType::Double, "2", Validator::Ratio).unwrap_err();
        assert_eq!(
            e.message,
            "Invalid value 2.0 for configuration r: Value must be no more than 1"
        );
        assert!(parse_value("r", ConfigType::Double, "NaN", Validator::Ratio).is_err());
    }

    #[test]
    fn wire_ids_match_kafka() {
        assert_eq!(ConfigSource::TopicConfig.id(), 1);
        assert_eq!(ConfigSource::StaticBroker.id(), 4);
        assert_eq!(ConfigSource::Default.id(), 5);
        assert_eq!(ConfigType::Password.id(), 9);
        assert_eq!(ConfigType::List.id(), 7);
    }
}
