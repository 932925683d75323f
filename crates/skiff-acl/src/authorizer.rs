//! The ACL authorizer with the semantics of Kafka 4's `StandardAuthorizer`.
//!
//! [`Authorizer::authorize`] answers for one principal, client host, operation and LITERAL
//! resource:
//! - a principal named in `super.users` (compared as the string `type:name`) is allowed
//!   everything, whatever the ACLs say;
//! - the ACLs that *apply to the resource* are those of its type whose pattern covers its
//!   name (LITERAL equal, LITERAL `*`, PREFIXED prefix);
//! - among those, an ACL *matches the request* when its principal is the requester or `User:*`,
//!   its host is the client's address or `*`, and its operation is the requested one, or
//!   `ALL`, or — for ALLOW ACLs only — one that implies it (READ, WRITE, DELETE and ALTER
//!   imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS);
//! - a matching DENY wins over any ALLOW; else a matching ALLOW allows; else, if *some* ACL
//!   applies to the resource (for anyone, any operation), the answer is DENIED; only when no
//!   ACL applies at all does `allow.everyone.if.no.acl.found` decide.
//!
//! [`Authorizer::authorize_by_resource_type`] is Kafka's `Authorizer.authorizeByResourceType`
//! default method (StandardAuthorizer does not override it), used by InitProducerId for
//! idempotent producers without CLUSTER IDEMPOTENT_WRITE: allowed if `authorize` allows the
//! made-up resource name `hardcode` (this lets super users and the no-ACL default through),
//! else if some ALLOW for the requester (exact operation or ALL; no implied operations here)
//! on a resource of that type is not cancelled by a DENY on the same literal name or on a
//! prefix of it; a LITERAL `*` DENY denies outright, a LITERAL `*` ALLOW allows.
//!
//! Hosts: Kafka compares the ACL's host string with `InetAddress.getHostAddress()`, which
//! writes IPv6 uncompressed; [`host_address`] produces the same text from an `IpAddr`.
//!
//! Thread safety: a plain value; the broker is expected to keep it behind an `RwLock` (or
//! swap an `Arc`) and to serialise changes with the store's writes.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

use crate::filter::AclBindingFilter;
use crate::model::{
    AccessControlEntry, AclBinding, AclOperation, PatternType, PermissionType, Principal,
    ResourceType, WILDCARD,
};
use crate::AclError;

/// Kafka's config key listing the super users.
pub const SUPER_USERS_CONFIG: &str = "super.users";
/// Kafka's config key for the decision when no ACL applies to a resource.
pub const ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: &str = "allow.everyone.if.no.acl.found";
/// Kafka's config key that switches the authorizer on.
pub const AUTHORIZER_CLASS_NAME_CONFIG: &str = "authorizer.class.name";
/// The `authorizer.class.name` of Kafka 4's StandardAuthorizer, the one this module behaves
/// as; a broker accepts it (and the empty default, meaning no authorizer).
pub const STANDARD_AUTHORIZER_CLASS: &str =
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The result of an authorization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    Denied,
}

/// The resource name Kafka's `authorizeByResourceType` first authorizes against.
const HARDCODE_NAME: &str = "hardcode";

/// `super.users` and `allow.everyone.if.no.acl.found`, parsed as StandardAuthorizer does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// `type:name` strings.
    pub super_users: BTreeSet<String>,
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerConfig {
    /// `super_users`: Kafka's `super.users`, principals separated by `;`, each trimmed, empty
    /// ones skipped, each required to contain a colon. `allow_everyone`: true only for
    /// `true` in any case (surrounding blanks ignored), as Java's `Boolean.parseBoolean`.
    pub fn parse(
        super_users: Option<&str>,
        allow_everyone: Option<&str>,
    ) -> Result<AuthorizerConfig, AclError> {
        let mut users = BTreeSet::new();
        for part in super_users.unwrap_or("").split(';') {
            let p = part.trim();
            if p.is_empty() {
                continue;
            }
            if Principal::parse(p).is_none() {
                return Err(AclError::Config(format!(
                    "super.users: expected a principal as type:name, got `{p}`"
                )));
            }
            users.insert(p.to_string());
        }
        Ok(AuthorizerConfig {
            super_users: users,
            allow_everyone_if_no_acl_found: allow_everyone
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        })
    }
}

/// The ACLs of one resource type, indexed by pattern name.
#[derive(Clone, Debug, Default)]
struct TypeIndex {
    literal: BTreeMap<String, Vec<AccessControlEntry>>,
    prefixed: BTreeMap<String, Vec<AccessControlEntry>>,
}

/// ACLs in memory plus the configuration.
#[derive(Clone, Debug, Default)]
pub struct Authorizer {
    config: AuthorizerConfig,
    bindings: BTreeSet<AclBinding>,
    index: HashMap<ResourceType, TypeIndex>,
}

impl Authorizer {
    pub fn new(config: AuthorizerConfig) -> Authorizer {
        Authorizer {
            config,
            ..Authorizer::default()
        }
    }

    /// An authorizer holding `bindings` (duplicates collapse).
    pub fn with_bindings(
        config: AuthorizerConfig,
        bindings: impl IntoIterator<Item = AclBinding>,
    ) -> Authorizer {
        let mut a = Authorizer::new(config);
        for b in bindings {
            a.add(b);
        }
        a
    }

    pub fn config(&self) -> &AuthorizerConfig {
        &self.config
    }

    /// Every binding, in a stable order.
    pub fn bindings(&self) -> impl Iterator<Item = &AclBinding> {
        self.bindings.iter()
    }

    pub fn len(&self) -> usize {
        self.bindings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty()
    }

    /// Add a (validated) binding; false when it was already there (Kafka answers success for
    /// a duplicate and stores it once).
    pub fn add(&mut self, binding: AclBinding) -> bool {
        if self.bindings.contains(&binding) {
            return false;
        }
        let ix = self.index.entry(binding.pattern.resource_type).or_default();
        let names = match binding.pattern.pattern_type {
            PatternType::Prefixed => &mut ix.prefixed,
            _ => &mut ix.literal,
        };
        names
            .entry(binding.pattern.name.clone())
            .or_default()
            .push(binding.entry.clone());
        self.bindings.insert(binding);
        true
    }

    /// The bindings `filter` matches (DescribeAcls).
    pub fn describe(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        self.bindings
            .iter()
            .filter(|b| filter.matches(b))
            .cloned()
            .collect()
    }

    /// Remove and return the bindings `filter` matches (one DeleteAcls filter).
    pub fn remove_matching(&mut self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let gone = self.describe(filter);
        if gone.is_empty() {
            return gone;
        }
        for b in &gone {
            self.bindings.remove(b);
        }
        self.rebuild_index();
        gone
    }

    fn rebuild_index(&mut self) {
        let bindings = std::mem::take(&mut self.bindings);
        self.index.clear();
        for b in bindings {
            self.add(b);
        }
    }

    fn is_super_user(&self, principal: &Principal) -> bool {
        self.config.super_users.contains(&principal.to_string())
    }

    /// May `principal`, connected from `host` (see [`host_address`]), perform `operation` on
    /// the resource `name` of `resource_type`? A super user may do anything; a filter value
    /// (ANY/UNKNOWN) as operation or type is otherwise denied.
    pub fn authorize(
        &self,
        principal: &Principal,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> Decision {
        if self.is_super_user(principal) {
            return Decision::Allowed;
        }
        if !resource_type.is_concrete()
            || matches!(operation, AclOperation::Any | AclOperation::Unknown)
        {
            return Decision::Denied;
        }
        let Some(ix) = self.index.get(&resource_type) else {
            return self.default_decision();
        };
        let mut applies = false;
        let mut allowed = false;
        let mut consider = |entries: Option<&Vec<AccessControlEntry>>| -> bool {
            for e in entries.into_iter().flatten() {
                applies = true;
                match entry_result(e, principal, host, operation) {
                    Some(PermissionType::Deny) => return true,
                    Some(_) => allowed = true,
                    None => {}
                }
            }
            false
        };
        if consider(ix.literal.get(name)) {
            return Decision::Denied;
        }
        if name != WILDCARD && consider(ix.literal.get(WILDCARD)) {
            return Decision::Denied;
        }
        for (end, _) in name.char_indices().skip(1).chain([(name.len(), ' ')]) {
            if consider(ix.prefixed.get(&name[..end])) {
                return Decision::Denied;
            }
        }
        if allowed {
            Decision::Allowed
        } else if applies {
            Decision::Denied
        } else {
            self.default_decision()
        }
    }

    fn default_decision(&self) -> Decision {
        if self.config.allow_everyone_if_no_acl_found {
            Decision::Allowed
        } else {
            Decision::Denied
        }
    }

    /// Kafka's `authorizeByResourceType` (see the module docs). A filter value as operation
    /// or type is denied (Kafka rejects it as a programming error).
    pub fn authorize_by_resource_type(
        &self,
        principal: &Principal,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> Decision {
        if !resource_type.is_concrete()
            || matches!(operation, AclOperation::Any | AclOperation::Unknown)
        {
            return Decision::Denied;
        }
        if self.authorize(principal, host, operation, resource_type, HARDCODE_NAME)
            == Decision::Allowed
        {
            return Decision::Allowed;
        }
        let Some(ix) = self.index.get(&resource_type) else {
            return Decision::Denied;
        };
        let wildcard = Principal::wildcard().to_string();
        let relevant = |e: &AccessControlEntry| {
            (e.host == host || e.host == WILDCARD)
                && (principal_matches(&e.principal, principal) || e.principal == wildcard)
                && (e.operation == operation || e.operation == AclOperation::All)
        };
        let mut deny_literal = HashSet::new();
        let mut deny_prefixed = HashSet::new();
        let mut allow_literal = Vec::new();
        let mut allow_prefixed = Vec::new();
        let mut wildcard_allow = false;
        for (prefixed, names) in [(false, &ix.literal), (true, &ix.prefixed)] {
            for (name, entries) in names {
                for e in entries.iter().filter(|e| relevant(e)) {
                    let deny = e.permission_type == PermissionType::Deny;
                    match (prefixed, deny) {
                        (false, true) if name == WILDCARD => return Decision::Denied,
                        (false, true) => {
                            deny_literal.insert(name.as_str());
                        }
                        (true, true) => {
                            deny_prefixed.insert(name.as_str());
                        }
                        (false, false) if name == WILDCARD => wildcard_allow = true,
                        (false, false) => allow_literal.push(name.as_str()),
                        (true, false) => allow_prefixed.push(name.as_str()),
                    }
                }
            }
        }
        if wildcard_allow {
            return Decision::Allowed;
        }
        let denied_by_prefix = |name: &str| {
            name.char_indices()
                .skip(1)
                .map(|(i, _)| i)
                .chain([name.len()])
                .any(|end| deny_prefixed.contains(&name[..end]))
        };
        let literal_ok = allow_literal
            .iter()
            .any(|n| !deny_literal.contains(n) && !denied_by_prefix(n));
        let prefixed_ok = allow_prefixed.iter().any(|n| !denied_by_prefix(n));
        if literal_ok || prefixed_ok {
            Decision::Allowed
        } else {
            Decision::Denied
        }
    }

    /// The `*AuthorizedOperations` bit field (bit n: the operation with code n) of the
    /// operations `resource_type` supports that `principal` may perform on `name`.
    pub fn authorized_operations(
        &self,
        principal: &Principal,
        host: &str,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        resource_type
            .supported_operations()
            .iter()
            .filter(|op| {
                self.authorize(principal, host, **op, resource_type, name) == Decision::Allowed
            })
            .fold(0, |acc, op| acc | (1i32 << op.code()))
    }
}

/// Does the ACL principal string (`type:name`) name exactly `principal`?
fn principal_matches(acl_principal: &str, principal: &Principal) -> bool {
    acl_principal
        .split_once(':')
        .is_some_and(|(k, n)| k == principal.kind && n == principal.name)
}

/// What `e` says about the request: `None` when it does not match it (another principal,
/// host or operation), else its permission type.
fn entry_result(
    e: &AccessControlEntry,
    principal: &Principal,
    host: &str,
    operation: AclOperation,
) -> Option<PermissionType> {
    let principal_ok = principal_matches(&e.principal, principal)
        || principal_matches(&e.principal, &Principal::wildcard());
    if !principal_ok || (e.host != WILDCARD && e.host != host) {
        return None;
    }
    let op_ok = e.operation == AclOperation::All
        || e.operation == operation
        || (e.permission_type == PermissionType::Allow && implies(e.operation, operation));
    op_ok.then_some(e.permission_type)
}

/// Does an ALLOW of `granted` also allow `wanted`? (Kafka's implied operations.)
pub fn implies(granted: AclOperation, wanted: AclOperation) -> bool {
    use AclOperation::*;
    match (granted, wanted) {
        (All, _) => true,
        (g, w) if g == w => true,
        (Read | Write | Delete | Alter, Describe) => true,
        (AlterConfigs, DescribeConfigs) => true,
        _ => false,
    }
}

/// The text Java's `InetAddress.getHostAddress()` gives for a client address, which is what
/// Kafka compares ACL hosts with: IPv4 dotted; an IPv4-mapped IPv6 address as its IPv4 form
/// (Java turns those into `Inet4Address`); other IPv6 as eight lowercase hex groups without
/// leading zeros and without `::` compression.
pub fn host_address(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "authorizer_tests.rs"]
mod tests;
