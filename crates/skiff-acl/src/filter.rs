//! Binding filters as DescribeAcls and DeleteAcls carry them (Kafka's `AclBindingFilter`):
//! a pattern filter and an entry filter, where a missing (null) string matches every value
//! and `ANY` matches every enum value.
//!
//! Pattern types in a filter: `ANY` matches every stored pattern type and then compares the
//! name exactly; `LITERAL` / `PREFIXED` match only that type, name compared exactly; `MATCH`
//! matches every stored binding that would apply to a resource of that name — the LITERAL
//! binding of the same name, the LITERAL wildcard `*`, and every PREFIXED binding whose name
//! is a prefix of it.
//!
//! Thread safety: plain values.

use crate::model::{
    AccessControlEntry, AclBinding, AclOperation, PatternType, PermissionType, ResourcePattern,
    ResourceType, WILDCARD,
};

/// Kafka's `ResourcePatternFilter`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePatternFilter {
    pub resource_type: ResourceType,
    /// `None` matches every name.
    pub name: Option<String>,
    pub pattern_type: PatternType,
}

/// Kafka's `AccessControlEntryFilter`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessControlEntryFilter {
    /// `None` matches every principal; otherwise compared as a string.
    pub principal: Option<String>,
    /// `None` matches every host; otherwise compared as a string (`*` matches only `*`).
    pub host: Option<String>,
    pub operation: AclOperation,
    pub permission_type: PermissionType,
}

/// Kafka's `AclBindingFilter`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclBindingFilter {
    pub pattern: ResourcePatternFilter,
    pub entry: AccessControlEntryFilter,
}

impl ResourcePatternFilter {
    /// Matches every pattern.
    pub fn any() -> ResourcePatternFilter {
        ResourcePatternFilter {
            resource_type: ResourceType::Any,
            name: None,
            pattern_type: PatternType::Any,
        }
    }

    pub fn matches(&self, pattern: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != pattern.resource_type {
            return false;
        }
        let type_filter = self.pattern_type;
        if !matches!(type_filter, PatternType::Any | PatternType::Match)
            && type_filter != pattern.pattern_type
        {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if type_filter != PatternType::Match {
            return *name == pattern.name;
        }
        // MATCH: would `pattern` apply to a resource called `name`?
        match pattern.pattern_type {
            PatternType::Literal => *name == pattern.name || pattern.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(pattern.name.as_str()),
            _ => false,
        }
    }

    /// Contains a value no request may carry (an `UNKNOWN` code).
    pub fn is_unknown(&self) -> bool {
        self.resource_type == ResourceType::Unknown || self.pattern_type == PatternType::Unknown
    }
}

impl AccessControlEntryFilter {
    /// Matches every entry.
    pub fn any() -> AccessControlEntryFilter {
        AccessControlEntryFilter {
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission_type: PermissionType::Any,
        }
    }

    pub fn matches(&self, entry: &AccessControlEntry) -> bool {
        if let Some(p) = &self.principal {
            if *p != entry.principal {
                return false;
            }
        }
        if let Some(h) = &self.host {
            if *h != entry.host {
                return false;
            }
        }
        if self.operation != AclOperation::Any && self.operation != entry.operation {
            return false;
        }
        self.permission_type == PermissionType::Any || self.permission_type == entry.permission_type
    }

    /// Contains a value no request may carry (an `UNKNOWN` code).
    pub fn is_unknown(&self) -> bool {
        self.operation == AclOperation::Unknown || self.permission_type == PermissionType::Unknown
    }
}

impl AclBindingFilter {
    /// Matches every binding.
    pub fn any() -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter::any(),
            entry: AccessControlEntryFilter::any(),
        }
    }

    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern.matches(&binding.pattern) && self.entry.matches(&binding.entry)
    }

    pub fn is_unknown(&self) -> bool {
        self.pattern.is_unknown() || self.entry.is_unknown()
    }
}

impl From<&AclBinding> for AclBindingFilter {
    /// The filter that matches exactly this binding.
    fn from(b: &AclBinding) -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: b.pattern.resource_type,
                name: Some(b.pattern.name.clone()),
                pattern_type: b.pattern.pattern_type,
            },
            entry: AccessControlEntryFilter {
                principal: Some(b.entry.principal.clone()),
                host: Some(b.entry.host.clone()),
                operation: b.entry.operation,
                permission_type: b.entry.permission_type,
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn binding(rt: ResourceType, name: &str, pt: PatternType) -> AclBinding {
        AclBinding::new(
            ResourcePattern::new(rt, name, pt),
            AccessControlEntry::new("User:alice", "*", AclOperation::Read, PermissionType::Allow),
        )
    }

    fn pf(rt: ResourceType, name: Option<&str>, pt: PatternType) -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: rt,
                name: name.map(str::to_string),
                pattern_type: pt,
            },
            entry: AccessControlEntryFilter::any(),
        }
    }

    /// Every (filter pattern type × stored pattern) combination for the resource `foo`, with
    /// the answer Kafka's ResourcePatternFilter gives.
    #[test]
    fn pattern_type_and_name_matrix() {
        use PatternType::*;
        let t = ResourceType::Topic;
        let stored = [
            ("lit foo", binding(t, "foo", Literal)),
            ("lit foobar", binding(t, "foobar", Literal)),
            ("lit fo", binding(t, "fo", Literal)),
            ("lit *", binding(t, "*", Literal)),
            ("pre foo", binding(t, "foo", Prefixed)),
            ("pre fo", binding(t, "fo", Prefixed)),
            ("pre foobar", binding(t, "foobar", Prefixed)),
            ("pre *", binding(t, "*", Prefixed)),
            ("pre x", binding(t, "x", Prefixed)),
        ];
        let expect = |filter: AclBindingFilter, want: &[&str]| {
            let got: Vec<&str> = stored
                .iter()
                .filter(|(_, b)| filter.matches(b))
                .map(|(n, _)| *n)
                .collect();
            assert_eq!(got, want, "{filter:?}");
        };
        expect(pf(t, Some("foo"), Literal), &["lit foo"]);
        expect(pf(t, Some("*"), Literal), &["lit *"]);
        expect(pf(t, Some("foo"), Prefixed), &["pre foo"]);
        expect(pf(t, Some("*"), Prefixed), &["pre *"]);
        expect(pf(t, Some("foo"), Any), &["lit foo", "pre foo"]);
        expect(pf(t, Some("*"), Any), &["lit *", "pre *"]);
        expect(
            pf(t, Some("foo"), Match),
            &["lit foo", "lit *", "pre foo", "pre fo"],
        );
        expect(
            pf(t, Some("foobar"), Match),
            &["lit foobar", "lit *", "pre foo", "pre fo", "pre foobar"],
        );
        // MATCH on `*` is the wildcard binding plus prefixes of the literal text `*`.
        expect(pf(t, Some("*"), Match), &["lit *", "pre *"]);
        let all = [
            "lit foo",
            "lit foobar",
            "lit fo",
            "lit *",
            "pre foo",
            "pre fo",
            "pre foobar",
            "pre *",
            "pre x",
        ];
        // A null name matches every name; the pattern type still filters.
        expect(pf(t, None, Any), &all);
        expect(pf(t, None, Match), &all);
        expect(
            pf(t, None, Literal),
            &["lit foo", "lit foobar", "lit fo", "lit *"],
        );
        expect(
            pf(t, None, Prefixed),
            &["pre foo", "pre fo", "pre foobar", "pre *", "pre x"],
        );
        expect(pf(ResourceType::Any, None, Any), &all);
        expect(pf(ResourceType::Group, None, Any), &[]);
        expect(pf(ResourceType::Group, Some("foo"), Match), &[]);
    }

    #[test]
    fn entry_fields_null_and_any_match_all() {
        let b = AclBinding::new(
            ResourcePattern::new(ResourceType::Group, "g", PatternType::Literal),
            AccessControlEntry::new(
                "User:bob",
                "10.0.0.1",
                AclOperation::Read,
                PermissionType::Deny,
            ),
        );
        let mut f = AclBindingFilter::any();
        assert!(f.matches(&b));
        f.entry.principal = Some("User:bob".into());
        assert!(f.matches(&b));
        f.entry.principal = Some("User:*".into());
        assert!(!f.matches(&b), "a filter's User:* is a literal string");
        f.entry.principal = None;
        f.entry.host = Some("*".into());
        assert!(!f.matches(&b), "a filter's host * is a literal string");
        f.entry.host = Some("10.0.0.1".into());
        assert!(f.matches(&b));
        f.entry.operation = AclOperation::All;
        assert!(!f.matches(&b), "ALL in a filter matches only ALL bindings");
        f.entry.operation = AclOperation::Read;
        assert!(f.matches(&b));
        f.entry.permission_type = PermissionType::Allow;
        assert!(!f.matches(&b));
        f.entry.permission_type = PermissionType::Deny;
        assert!(f.matches(&b));
        assert!(AclBindingFilter::from(&b).matches(&b));
    }

    #[test]
    fn unknown_fields_are_flagged() {
        let mut f = AclBindingFilter::any();
        assert!(!f.is_unknown());
        f.entry.operation = AclOperation::Unknown;
        assert!(f.is_unknown());
        let mut f = AclBindingFilter::any();
        f.pattern.pattern_type = PatternType::Unknown;
        assert!(f.is_unknown());
    }
}
