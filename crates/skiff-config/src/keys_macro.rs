//! The `broker_keys!` macro behind the table in `keys.rs`, and the conversions it uses.
//!
//! One invocation declares every broker key Skiff reads (or has a field for) exactly once and
//! generates from it: the [`BrokerConfig`](crate::BrokerConfig) struct (one documented field
//! per typed key, in table order), its `Default` (each scalar default parsed from the same
//! Kafka string DescribeConfigs prints, with the parser used for user values), the step of
//! `build` that copies parsed scalar values into the struct, and the static
//! [`BrokerConfigDef`](crate::BrokerConfigDef) rows (type, default, status, live-dynamic flag,
//! validator, the fields whose use proves the key is acted on, and the doc line) from which
//! lookups, the env/`--set` name checks, DescribeConfigs and `docs/configuration.md` are made.
//!
//! Pure code generation and plain conversions; no state.

use crate::types::{parse_value, ConfigType, Parsed, Validator};

/// A typed field that `build` fills from a parsed value of its key.
pub(crate) trait FromParsed: Sized {
    fn from_parsed(v: &Parsed) -> Option<Self>;
}

impl FromParsed for i16 {
    fn from_parsed(v: &Parsed) -> Option<Self> {
        match v {
            Parsed::Int(i) => i16::try_from(*i).ok(),
            _ => None,
        }
    }
}

impl FromParsed for i32 {
    fn from_parsed(v: &Parsed) -> Option<Self> {
        match v {
            Parsed::Int(i) => i32::try_from(*i).ok(),
            _ => None,
        }
    }
}

impl FromParsed for i64 {
    fn from_parsed(v: &Parsed) -> Option<Self> {
        match v {
            Parsed::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl FromParsed for f64 {
    fn from_parsed(v: &Parsed) -> Option<Self> {
        match v {
            Parsed::Double(d) => Some(*d),
            Parsed::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl FromParsed for String {
    fn from_parsed(v: &Parsed) -> Option<Self> {
        match v {
            Parsed::Str(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl FromParsed for bool {
    fn from_parsed(v: &Parsed) -> Option<Self> {
        match v {
            Parsed::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

/// The typed default of a scalar key: its Kafka default string parsed like a user's value.
/// A test (`every_scalar_default_parses_and_passes_its_validator`) checks that each table
/// default parses, so the zero/false fallback is never used.
pub(crate) fn scalar_default<T: FromParsed + Default>(
    key: &str,
    kind: ConfigType,
    default: Option<&str>,
) -> T {
    default
        .and_then(|s| parse_value(key, kind, s, Validator::None).ok())
        .and_then(|p| T::from_parsed(&p))
        .unwrap_or_default()
}

/// `Default` of one field: parsed from the Kafka default, or the row's `custom:` value.
macro_rules! key_default {
    ($key:literal, $kind:ident, $default:expr, $ty:ty) => {
        $crate::keys_macro::scalar_default::<$ty>($key, ConfigType::$kind, $default)
    };
    ($key:literal, $kind:ident, $default:expr, $ty:ty, $typed:expr) => {
        $typed
    };
}

/// Copy a parsed scalar into its field; `custom:` rows are filled by hand in `broker::build`.
macro_rules! key_assign {
    ($cfg:ident, $parsed:ident, $key:literal, $field:ident, $ty:ty) => {
        if let Some(v) = $parsed
            .get($key)
            .and_then(<$ty as $crate::keys_macro::FromParsed>::from_parsed)
        {
            $cfg.$field = v;
        }
    };
    ($cfg:ident, $parsed:ident, $key:literal, $field:ident, $ty:ty, $typed:expr) => {};
}

/// The fields whose use outside skiff-config shows a key is acted on: the row's own field
/// unless the row names others with `reads:`.
macro_rules! key_reads {
    ($field:ident) => {
        &[stringify!($field)]
    };
    ($field:ident; $($read:ident),*) => {
        &[$(stringify!($read)),*]
    };
}

macro_rules! key_validator {
    () => {
        None
    };
    ($v:expr) => {
        Some($v)
    };
}

/// See the module doc. Row shapes (optional parts in this order):
///
/// `field: Type = "kafka.key", KafkaType, Some("default") | None, Status, live: bool,
///  [valid: Validator,] [reads: [field, ...],] [custom: typed_default,] doc: "...";`
///
/// and, for keys with no field of their own (they feed `log`, another field or a check):
///
/// `"kafka.key", KafkaType, default, Status, live: bool, [valid: Validator,]
///  reads: [field, ...], doc: "...";`
macro_rules! broker_keys {
    (
        fields {
            $(
                $field:ident : $ty:ty = $key:literal, $kind:ident, $default:expr, $status:ident,
                live: $live:literal,
                $(valid: $valid:expr,)?
                $(reads: [$($read:ident),*],)?
                $(custom: $typed:expr,)?
                doc: $doc:literal;
            )*
        }
        others {
            $(
                $okey:literal, $okind:ident, $odefault:expr, $ostatus:ident, live: $olive:literal,
                $(valid: $ovalid:expr,)?
                reads: [$($oread:ident),*],
                doc: $odoc:literal;
            )*
        }
    ) => {
        /// Everything the broker reads from its configuration. `Default` = Skiff's defaults,
        /// which are Kafka's except: listeners bind loopback, data goes to `./data`, the node
        /// id is 1. Generated with its defaults from the table in `keys.rs`.
        #[derive(Clone, Debug, PartialEq)]
        pub struct BrokerConfig {
            $(
                #[doc = concat!("`", $key, "`: ", $doc)]
                pub $field: $ty,
            )*
            /// Broker-level defaults for topic configs.
            pub log: LogConfig,
            /// Every key the user set (file, `--set`, environment), normalized to Kafka's
            /// string form.
            pub explicit: BTreeMap<String, String>,
            /// Dynamic cluster-default broker configs (`<default>`) applied on top of
            /// `explicit`.
            pub dynamic_default: BTreeMap<String, String>,
            /// Dynamic per-broker configs, applied on top of everything else.
            pub dynamic_broker: BTreeMap<String, String>,
            /// `[[topic]]` entries.
            pub topics: Vec<TopicSpec>,
        }

        impl Default for BrokerConfig {
            fn default() -> Self {
                BrokerConfig {
                    $( $field: key_default!($key, $kind, $default, $ty $(, $typed)?), )*
                    log: LogConfig::default(),
                    explicit: BTreeMap::new(),
                    dynamic_default: BTreeMap::new(),
                    dynamic_broker: BTreeMap::new(),
                    topics: Vec::new(),
                }
            }
        }

        /// Copy every parsed scalar key into its field (keys not set keep their default).
        pub(crate) fn assign_scalars(cfg: &mut BrokerConfig, parsed: &BTreeMap<&str, Parsed>) {
            $( key_assign!(cfg, parsed, $key, $field, $ty $(, $typed)?); )*
        }

        /// Every key this table declares, in table order (not sorted).
        pub(crate) static KEYS: &[BrokerConfigDef] = &[
            $(
                BrokerConfigDef {
                    name: $key,
                    kind: ConfigType::$kind,
                    default: $default,
                    status: KeyStatus::$status,
                    field: Some(stringify!($field)),
                    reads: key_reads!($field $(; $($read),*)?),
                    live: $live,
                    doc: $doc,
                    validator: key_validator!($($valid)?),
                },
            )*
            $(
                BrokerConfigDef {
                    name: $okey,
                    kind: ConfigType::$okind,
                    default: $odefault,
                    status: KeyStatus::$ostatus,
                    field: None,
                    reads: &[$(stringify!($oread)),*],
                    live: $olive,
                    doc: $odoc,
                    validator: key_validator!($($ovalid)?),
                },
            )*
        ];
    };
}
