//! The ACL vocabulary with Kafka's wire codes: resource types, pattern types, operations,
//! permission types, principals, resource patterns, entries and bindings.
//!
//! Every enum keeps Kafka's `UNKNOWN` (code 0) and the filter value `ANY` (code 1), because
//! requests carry them; [`crate::validate`] decides where they are refused. `from_code` maps a
//! code Kafka does not define to `Unknown`, as Kafka's `fromCode` does.
//!
//! Thread safety: plain values.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The name an ACL uses for "every resource of this type" (a LITERAL pattern) and for "every
/// host".
pub const WILDCARD: &str = "*";

/// The only name a CLUSTER resource may have.
pub const CLUSTER_NAME: &str = "kafka-cluster";

macro_rules! coded_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $code:literal, $text:literal;)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        #[repr(i8)]
        pub enum $name {
            $($variant = $code,)*
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL_VALUES: &'static [$name] = &[$($name::$variant,)*];

            /// The wire code.
            pub fn code(self) -> i8 {
                self as i8
            }

            /// The value for a wire code; codes Kafka does not define are `Unknown`.
            pub fn from_code(code: i8) -> $name {
                match code {
                    $($code => $name::$variant,)*
                    _ => $name::Unknown,
                }
            }

            /// Kafka's enum constant name (`TRANSACTIONAL_ID`, `DESCRIBE_CONFIGS`, ...).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// Parse Kafka's constant name, case-insensitively, ignoring `_` so that the
            /// Pascal-case names Kafka's tools print (`TransactionalId`) are accepted too.
            pub fn parse(text: &str) -> Option<$name> {
                let wanted: String = text.chars().filter(|c| *c != '_').collect();
                $name::ALL_VALUES.iter().copied().find(|v| {
                    let own: String = v.name().chars().filter(|c| *c != '_').collect();
                    own.eq_ignore_ascii_case(&wanted)
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

coded_enum! {
    /// Kafka's `ResourceType`.
    ResourceType {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        Topic = 2, "TOPIC";
        Group = 3, "GROUP";
        Cluster = 4, "CLUSTER";
        TransactionalId = 5, "TRANSACTIONAL_ID";
        DelegationToken = 6, "DELEGATION_TOKEN";
        User = 7, "USER";
    }
}

coded_enum! {
    /// Kafka's `PatternType`. `Any` and `Match` exist only in filters.
    PatternType {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        Match = 2, "MATCH";
        Literal = 3, "LITERAL";
        Prefixed = 4, "PREFIXED";
    }
}

coded_enum! {
    /// Kafka's `AclOperation`; the code is also the bit number in the `*AuthorizedOperations`
    /// fields.
    AclOperation {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        All = 2, "ALL";
        Read = 3, "READ";
        Write = 4, "WRITE";
        Create = 5, "CREATE";
        Delete = 6, "DELETE";
        Alter = 7, "ALTER";
        Describe = 8, "DESCRIBE";
        ClusterAction = 9, "CLUSTER_ACTION";
        DescribeConfigs = 10, "DESCRIBE_CONFIGS";
        AlterConfigs = 11, "ALTER_CONFIGS";
        IdempotentWrite = 12, "IDEMPOTENT_WRITE";
        CreateTokens = 13, "CREATE_TOKENS";
        DescribeTokens = 14, "DESCRIBE_TOKENS";
    }
}

coded_enum! {
    /// Kafka's `AclPermissionType`.
    PermissionType {
        Unknown = 0, "UNKNOWN";
        Any = 1, "ANY";
        Deny = 2, "DENY";
        Allow = 3, "ALLOW";
    }
}

impl ResourceType {
    /// The operations Kafka defines for a concrete resource type (its
    /// `AclEntry.supportedOperations`); empty for `Unknown` and `Any`.
    pub fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Unknown | ResourceType::Any => &[],
        }
    }

    /// A resource type a binding can name (not `Unknown`, not the filter value `Any`).
    pub fn is_concrete(self) -> bool {
        !matches!(self, ResourceType::Unknown | ResourceType::Any)
    }
}

/// Who is asking or who an ACL names: Kafka's `KafkaPrincipal`, written `type:name`
/// (`User:alice`). Two principals are equal when type and name are (case-sensitive).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Principal {
    pub kind: String,
    pub name: String,
}

impl Principal {
    /// Kafka's principal type for users.
    pub const USER_TYPE: &'static str = "User";

    pub fn user(name: impl Into<String>) -> Principal {
        Principal {
            kind: Principal::USER_TYPE.to_string(),
            name: name.into(),
        }
    }

    /// `User:ANONYMOUS`, who every unauthenticated connection is.
    pub fn anonymous() -> Principal {
        Principal::user("ANONYMOUS")
    }

    /// `User:*`, the principal an ACL names to apply to everyone.
    pub fn wildcard() -> Principal {
        Principal::user(WILDCARD)
    }

    /// Parse `type:name`, splitting at the first colon (the name may contain more). `None`
    /// when there is no colon.
    pub fn parse(text: &str) -> Option<Principal> {
        let (kind, name) = text.split_once(':')?;
        Some(Principal {
            kind: kind.to_string(),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

/// Which resources a binding applies to: Kafka's `ResourcePattern`. In a stored binding the
/// pattern type is LITERAL or PREFIXED (see [`crate::validate`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    pub fn new(
        resource_type: ResourceType,
        name: impl Into<String>,
        pattern_type: PatternType,
    ) -> ResourcePattern {
        ResourcePattern {
            resource_type,
            name: name.into(),
            pattern_type,
        }
    }

    /// Does this pattern cover the resource `name` of its own type? LITERAL: the same name,
    /// or the pattern is the wildcard `*`; PREFIXED: the name starts with the pattern's name.
    pub fn covers(&self, name: &str) -> bool {
        match self.pattern_type {
            PatternType::Literal => self.name == name || self.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(self.name.as_str()),
            _ => false,
        }
    }
}

/// Who may or may not do what from where: Kafka's `AccessControlEntry`. The principal and the
/// host are kept as the strings the client sent, as Kafka stores and echoes them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AccessControlEntry {
    pub principal: String,
    pub host: String,
    pub operation: AclOperation,
    pub permission_type: PermissionType,
}

impl AccessControlEntry {
    pub fn new(
        principal: impl Into<String>,
        host: impl Into<String>,
        operation: AclOperation,
        permission_type: PermissionType,
    ) -> AccessControlEntry {
        AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation,
            permission_type,
        }
    }
}

/// One ACL: a pattern and an entry (Kafka's `AclBinding`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AclBinding {
    pub pattern: ResourcePattern,
    pub entry: AccessControlEntry,
}

impl AclBinding {
    pub fn new(pattern: ResourcePattern, entry: AccessControlEntry) -> AclBinding {
        AclBinding { pattern, entry }
    }
}

impl fmt::Display for AclBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} on {}:{}:{} from host {}",
            self.entry.principal,
            self.entry.permission_type,
            self.entry.operation,
            self.pattern.resource_type,
            self.pattern.pattern_type,
            self.pattern.name,
            self.entry.host
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wire_codes_are_kafkas() {
        let rt: Vec<(i8, &str)> = ResourceType::ALL_VALUES
            .iter()
            .map(|v| (v.code(), v.name()))
            .collect();
        assert_eq!(
            rt,
            [
                (0, "UNKNOWN"),
                (1, "ANY"),
                (2, "TOPIC"),
                (3, "GROUP"),
                (4, "CLUSTER"),
                (5, "TRANSACTIONAL_ID"),
                (6, "DELEGATION_TOKEN"),
                (7, "USER")
            ]
        );
        let pt: Vec<i8> = [
            PatternType::Unknown,
            PatternType::Any,
            PatternType::Match,
            PatternType::Literal,
            PatternType::Prefixed,
        ]
        .iter()
        .map(|p| p.code())
        .collect();
        assert_eq!(pt, [0, 1, 2, 3, 4]);
        use AclOperation::*;
        let ops = [
            (All, 2),
            (Read, 3),
            (Write, 4),
            (Create, 5),
            (Delete, 6),
            (Alter, 7),
            (Describe, 8),
            (ClusterAction, 9),
            (DescribeConfigs, 10),
            (AlterConfigs, 11),
            (IdempotentWrite, 12),
            (CreateTokens, 13),
            (DescribeTokens, 14),
        ];
        for (op, code) in ops {
            assert_eq!(op.code(), code, "{op}");
            assert_eq!(AclOperation::from_code(code), op);
        }
        assert_eq!(PermissionType::Allow.code(), 3);
        assert_eq!(PermissionType::Deny.code(), 2);
        assert_eq!(PermissionType::Any.code(), 1);
    }

    #[test]
    fn undefined_codes_are_unknown() {
        assert_eq!(ResourceType::from_code(8), ResourceType::Unknown);
        assert_eq!(ResourceType::from_code(-1), ResourceType::Unknown);
        assert_eq!(PatternType::from_code(5), PatternType::Unknown);
        assert_eq!(AclOperation::from_code(15), AclOperation::Unknown);
        assert_eq!(PermissionType::from_code(4), PermissionType::Unknown);
    }

    #[test]
    fn names_parse_in_kafka_and_pascal_case() {
        assert_eq!(
            ResourceType::parse("TransactionalId"),
            Some(ResourceType::TransactionalId)
        );
        assert_eq!(
            ResourceType::parse("TRANSACTIONAL_ID"),
            Some(ResourceType::TransactionalId)
        );
        assert_eq!(
            AclOperation::parse("describeconfigs"),
            Some(AclOperation::DescribeConfigs)
        );
        assert_eq!(PermissionType::parse("Allow"), Some(PermissionType::Allow));
        assert_eq!(PatternType::parse("prefixed"), Some(PatternType::Prefixed));
        assert_eq!(AclOperation::parse("Reed"), None);
    }

    #[test]
    fn principals_split_at_the_first_colon() {
        let p = Principal::parse("User:CN=a,O=b:c").unwrap();
        assert_eq!(p.kind, "User");
        assert_eq!(p.name, "CN=a,O=b:c");
        assert_eq!(p.to_string(), "User:CN=a,O=b:c");
        assert_eq!(Principal::parse("alice"), None);
        assert_eq!(Principal::parse("User:"), Some(Principal::user("")));
        assert_eq!(Principal::wildcard().to_string(), "User:*");
        assert_eq!(Principal::anonymous().to_string(), "User:ANONYMOUS");
        assert_ne!(Principal::user("Alice"), Principal::user("alice"));
    }

    #[test]
    fn patterns_cover_names() {
        let lit = ResourcePattern::new(ResourceType::Topic, "foo", PatternType::Literal);
        assert!(lit.covers("foo"));
        assert!(!lit.covers("foobar"));
        assert!(!lit.covers("fo"));
        let any = ResourcePattern::new(ResourceType::Topic, "*", PatternType::Literal);
        assert!(any.covers("foo"));
        assert!(any.covers("*"));
        let pre = ResourcePattern::new(ResourceType::Topic, "foo", PatternType::Prefixed);
        assert!(pre.covers("foo"));
        assert!(pre.covers("foobar"));
        assert!(!pre.covers("fo"));
        assert!(!pre.covers("xfoo"));
        // A PREFIXED `*` is not a wildcard: it covers names that start with `*`.
        let star = ResourcePattern::new(ResourceType::Topic, "*", PatternType::Prefixed);
        assert!(!star.covers("foo"));
        assert!(star.covers("*x"));
    }

    #[test]
    fn supported_operations_are_kafkas() {
        let bits = |r: ResourceType| {
            r.supported_operations()
                .iter()
                .fold(0i32, |acc, op| acc | (1 << op.code()))
        };
        assert_eq!(bits(ResourceType::Topic), 3576);
        assert_eq!(bits(ResourceType::Group), 3400);
        assert_eq!(bits(ResourceType::Cluster), 8096);
        assert_eq!(bits(ResourceType::TransactionalId), (1 << 4) | (1 << 8));
        assert_eq!(bits(ResourceType::DelegationToken), 1 << 8);
        assert_eq!(bits(ResourceType::User), (1 << 13) | (1 << 14));
        assert!(ResourceType::Any.supported_operations().is_empty());
    }
}
