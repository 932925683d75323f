//! Tests of the authorizer, against the rules of Kafka's StandardAuthorizer.

use super::*;
use crate::model::{AccessControlEntry, ResourcePattern};
use AclOperation::*;
use PermissionType::{Allow, Deny};
use ResourceType::{Cluster, Group, Topic, TransactionalId};

const HOST: &str = "192.168.0.1";

fn acl(
    rt: ResourceType,
    name: &str,
    pt: PatternType,
    principal: &str,
    host: &str,
    op: AclOperation,
    perm: PermissionType,
) -> AclBinding {
    AclBinding::new(
        ResourcePattern::new(rt, name, pt),
        AccessControlEntry::new(principal, host, op, perm),
    )
}

fn lit(
    rt: ResourceType,
    name: &str,
    who: &str,
    op: AclOperation,
    perm: PermissionType,
) -> AclBinding {
    acl(rt, name, PatternType::Literal, who, "*", op, perm)
}

fn pre(
    rt: ResourceType,
    name: &str,
    who: &str,
    op: AclOperation,
    perm: PermissionType,
) -> AclBinding {
    acl(rt, name, PatternType::Prefixed, who, "*", op, perm)
}

fn authz(bindings: Vec<AclBinding>) -> Authorizer {
    Authorizer::with_bindings(AuthorizerConfig::default(), bindings)
}

fn alice() -> Principal {
    Principal::user("alice")
}

fn can(a: &Authorizer, who: &Principal, op: AclOperation, rt: ResourceType, name: &str) -> bool {
    a.authorize(who, HOST, op, rt, name) == Decision::Allowed
}

#[test]
fn no_acls_follows_the_default() {
    let a = authz(vec![]);
    assert!(!can(&a, &alice(), Read, Topic, "t"));
    let cfg = AuthorizerConfig::parse(None, Some(" TRUE ")).unwrap();
    let a = Authorizer::new(cfg);
    assert!(can(&a, &alice(), Read, Topic, "t"));
}

#[test]
fn literal_prefixed_and_wildcard_allow() {
    let a = authz(vec![
        lit(Topic, "orders", "User:alice", Read, Allow),
        pre(Topic, "logs-", "User:alice", Write, Allow),
        lit(Group, "*", "User:alice", Read, Allow),
    ]);
    assert!(can(&a, &alice(), Read, Topic, "orders"));
    assert!(!can(&a, &alice(), Read, Topic, "orders2"));
    assert!(!can(&a, &alice(), Write, Topic, "orders"));
    assert!(can(&a, &alice(), Write, Topic, "logs-app"));
    assert!(can(&a, &alice(), Write, Topic, "logs-"));
    assert!(!can(&a, &alice(), Write, Topic, "logs"));
    assert!(can(&a, &alice(), Read, Group, "any-group"));
    assert!(!can(&a, &Principal::user("bob"), Read, Topic, "orders"));
}

#[test]
fn deny_wins_over_allow_from_any_pattern() {
    let a = authz(vec![
        lit(Topic, "*", "User:alice", All, Allow),
        pre(Topic, "secret", "User:alice", Read, Deny),
        lit(Topic, "public", "User:*", Write, Deny),
    ]);
    assert!(can(&a, &alice(), Read, Topic, "orders"));
    assert!(!can(&a, &alice(), Read, Topic, "secret-plans"));
    assert!(can(&a, &alice(), Write, Topic, "secret-plans"));
    assert!(!can(&a, &alice(), Write, Topic, "public"));
    assert!(can(&a, &alice(), Read, Topic, "public"));
    // A DENY on the wildcard denies every name.
    let a = authz(vec![
        lit(Topic, "t", "User:alice", Read, Allow),
        lit(Topic, "*", "User:alice", Read, Deny),
    ]);
    assert!(!can(&a, &alice(), Read, Topic, "t"));
}

#[test]
fn acls_for_others_still_close_the_default() {
    // Kafka: once any ACL applies to the resource, the no-ACL default no longer decides.
    let cfg = AuthorizerConfig::parse(None, Some("true")).unwrap();
    let a = Authorizer::with_bindings(cfg, vec![lit(Topic, "t", "User:bob", Read, Allow)]);
    assert!(!can(&a, &alice(), Read, Topic, "t"));
    assert!(can(&a, &alice(), Read, Topic, "other"));
    // An ACL for another operation applies too.
    assert!(!can(&a, &Principal::user("bob"), Write, Topic, "t"));
}

#[test]
fn principal_and_host_matching() {
    let a = authz(vec![
        acl(
            Topic,
            "t",
            PatternType::Literal,
            "User:*",
            "10.0.0.1",
            Read,
            Allow,
        ),
        acl(
            Topic,
            "u",
            PatternType::Literal,
            "User:alice",
            HOST,
            Read,
            Allow,
        ),
    ]);
    assert_eq!(
        a.authorize(&Principal::user("x"), "10.0.0.1", Read, Topic, "t"),
        Decision::Allowed
    );
    assert_eq!(
        a.authorize(&Principal::user("x"), "10.0.0.2", Read, Topic, "t"),
        Decision::Denied
    );
    assert!(can(&a, &alice(), Read, Topic, "u"));
    assert_eq!(
        a.authorize(&alice(), "10.0.0.1", Read, Topic, "u"),
        Decision::Denied
    );
    // The principal type matters: Group:alice is not User:alice.
    let g = Principal {
        kind: "Group".into(),
        name: "alice".into(),
    };
    assert!(!can(&a, &g, Read, Topic, "u"));
}

#[test]
fn implied_operations_only_for_allow() {
    for granted in [Read, Write, Delete, Alter] {
        let a = authz(vec![lit(Topic, "t", "User:alice", granted, Allow)]);
        assert!(
            can(&a, &alice(), Describe, Topic, "t"),
            "{granted} implies DESCRIBE"
        );
        assert!(!can(&a, &alice(), DescribeConfigs, Topic, "t"));
    }
    for granted in [Create, AlterConfigs, DescribeConfigs] {
        let a = authz(vec![lit(Topic, "t", "User:alice", granted, Allow)]);
        assert!(
            !can(&a, &alice(), Describe, Topic, "t"),
            "{granted} does not imply DESCRIBE"
        );
    }
    let a = authz(vec![lit(Topic, "t", "User:alice", AlterConfigs, Allow)]);
    assert!(can(&a, &alice(), DescribeConfigs, Topic, "t"));
    let a = authz(vec![lit(Topic, "t", "User:alice", All, Allow)]);
    for op in Topic.supported_operations() {
        assert!(can(&a, &alice(), *op, Topic, "t"), "ALL implies {op}");
    }
    // DENY READ does not deny DESCRIBE; DENY ALL denies everything.
    let a = authz(vec![
        lit(Topic, "t", "User:alice", All, Allow),
        lit(Topic, "t", "User:alice", Read, Deny),
    ]);
    assert!(can(&a, &alice(), Describe, Topic, "t"));
    assert!(!can(&a, &alice(), Read, Topic, "t"));
    let a = authz(vec![
        lit(Topic, "t", "User:alice", Read, Allow),
        lit(Topic, "t", "User:alice", All, Deny),
    ]);
    assert!(!can(&a, &alice(), Describe, Topic, "t"));
}

#[test]
fn super_users_bypass_denies() {
    let cfg = AuthorizerConfig::parse(Some(" User:admin ; ;User:ANONYMOUS"), None).unwrap();
    assert_eq!(cfg.super_users.len(), 2);
    let a = Authorizer::with_bindings(cfg, vec![lit(Topic, "*", "User:*", All, Deny)]);
    assert!(can(&a, &Principal::user("admin"), Write, Topic, "t"));
    assert!(can(
        &a,
        &Principal::anonymous(),
        Alter,
        Cluster,
        "kafka-cluster"
    ));
    assert!(!can(&a, &alice(), Read, Topic, "t"));
    assert!(AuthorizerConfig::parse(Some("User:a;admin"), None).is_err());
}

#[test]
fn authorized_operations_bitfield() {
    let a = authz(vec![
        lit(Topic, "t", "User:alice", Read, Allow),
        lit(Topic, "t", "User:alice", AlterConfigs, Allow),
        lit(Group, "g", "User:alice", All, Allow),
    ]);
    let ops = a.authorized_operations(&alice(), HOST, Topic, "t");
    // READ(3), DESCRIBE(8) implied, ALTER_CONFIGS(11), DESCRIBE_CONFIGS(10) implied.
    assert_eq!(ops, (1 << 3) | (1 << 8) | (1 << 10) | (1 << 11));
    assert_eq!(a.authorized_operations(&alice(), HOST, Group, "g"), 3400);
    assert_eq!(a.authorized_operations(&alice(), HOST, Topic, "other"), 0);
    let open = Authorizer::new(AuthorizerConfig::parse(None, Some("true")).unwrap());
    assert_eq!(
        open.authorized_operations(&alice(), HOST, Cluster, "kafka-cluster"),
        8096
    );
}

#[test]
fn by_resource_type_idempotent_producer_rules() {
    let who = alice();
    let by = |a: &Authorizer| a.authorize_by_resource_type(&who, HOST, Write, Topic);
    assert_eq!(by(&authz(vec![])), Decision::Denied);
    let open = Authorizer::new(AuthorizerConfig::parse(None, Some("true")).unwrap());
    assert_eq!(
        by(&open),
        Decision::Allowed,
        "no ACLs and the default allows"
    );
    assert_eq!(
        by(&authz(vec![lit(Topic, "t", "User:alice", Write, Allow)])),
        Decision::Allowed
    );
    assert_eq!(
        by(&authz(vec![lit(Topic, "t", "User:alice", Read, Allow)])),
        Decision::Denied,
        "READ does not count for WRITE"
    );
    assert_eq!(
        by(&authz(vec![lit(Topic, "t", "User:*", All, Allow)])),
        Decision::Allowed
    );
    assert_eq!(
        by(&authz(vec![
            lit(Topic, "t", "User:alice", Write, Allow),
            lit(Topic, "t", "User:alice", Write, Deny),
        ])),
        Decision::Denied
    );
    assert_eq!(
        by(&authz(vec![
            lit(Topic, "team-a", "User:alice", Write, Allow),
            pre(Topic, "team", "User:alice", Write, Deny),
        ])),
        Decision::Denied,
        "a DENY on a prefix cancels the literal ALLOW"
    );
    assert_eq!(
        by(&authz(vec![
            pre(Topic, "team", "User:alice", Write, Allow),
            pre(Topic, "team-a", "User:alice", Write, Deny),
        ])),
        Decision::Allowed,
        "a longer DENY prefix leaves part of the ALLOW prefix"
    );
    assert_eq!(
        by(&authz(vec![
            pre(Topic, "team-a", "User:alice", Write, Allow),
            lit(Topic, "team-a", "User:alice", Write, Deny),
        ])),
        Decision::Allowed,
        "a literal DENY does not cancel a prefixed ALLOW"
    );
    assert_eq!(
        by(&authz(vec![
            lit(Topic, "*", "User:alice", Write, Allow),
            lit(Topic, "x", "User:alice", Write, Deny),
        ])),
        Decision::Allowed,
        "the wildcard ALLOW covers the made-up name `hardcode`"
    );
}

#[test]
fn by_resource_type_wildcards_and_hosts() {
    let who = alice();
    let a = authz(vec![
        lit(Topic, "t", "User:alice", Write, Allow),
        lit(Topic, "*", "User:alice", Write, Deny),
    ]);
    assert_eq!(
        a.authorize_by_resource_type(&who, HOST, Write, Topic),
        Decision::Denied
    );
    let a = authz(vec![acl(
        Topic,
        "t",
        PatternType::Literal,
        "User:alice",
        "10.9.9.9",
        Write,
        Allow,
    )]);
    assert_eq!(
        a.authorize_by_resource_type(&who, HOST, Write, Topic),
        Decision::Denied
    );
    assert_eq!(
        a.authorize_by_resource_type(&who, "10.9.9.9", Write, Topic),
        Decision::Allowed
    );
    let cfg = AuthorizerConfig::parse(Some("User:alice"), None).unwrap();
    let a = Authorizer::with_bindings(cfg, vec![lit(Topic, "*", "User:*", All, Deny)]);
    assert_eq!(
        a.authorize_by_resource_type(&who, HOST, Write, TransactionalId),
        Decision::Allowed,
        "super users pass through the hardcode probe"
    );
    assert_eq!(
        a.authorize_by_resource_type(&who, HOST, Any, Topic),
        Decision::Denied
    );
}

#[test]
fn add_describe_remove() {
    let mut a = authz(vec![]);
    let b1 = lit(Topic, "t", "User:alice", Read, Allow);
    let b2 = pre(Topic, "t", "User:bob", Write, Deny);
    assert!(a.add(b1.clone()));
    assert!(!a.add(b1.clone()), "duplicates are stored once");
    assert!(a.add(b2.clone()));
    assert_eq!(a.len(), 2);
    let mut f = AclBindingFilter::any();
    f.entry.principal = Some("User:bob".into());
    assert_eq!(a.describe(&f), vec![b2.clone()]);
    assert!(!can(&a, &Principal::user("bob"), Write, Topic, "tt"));
    assert_eq!(a.remove_matching(&f), vec![b2]);
    assert_eq!(a.remove_matching(&f), vec![]);
    assert_eq!(a.bindings().cloned().collect::<Vec<_>>(), vec![b1]);
    // Once the DENY is gone and no ACL applies to `tt`, the default (deny) decides.
    assert!(!can(&a, &Principal::user("bob"), Write, Topic, "tt"));
    assert!(can(&a, &alice(), Describe, Topic, "t"));
}

#[test]
fn host_address_is_javas_text() {
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert_eq!(host_address(ip("10.1.2.3")), "10.1.2.3");
    assert_eq!(host_address(ip("::1")), "0:0:0:0:0:0:0:1");
    assert_eq!(host_address(ip("fe80::a:b0c")), "fe80:0:0:0:0:0:a:b0c");
    assert_eq!(host_address(ip("::ffff:10.0.0.7")), "10.0.0.7");
}

#[test]
fn implication_table() {
    assert!(implies(All, ClusterAction));
    assert!(implies(Read, Describe));
    assert!(!implies(Describe, Read));
    assert!(!implies(Create, Describe));
    assert!(implies(AlterConfigs, DescribeConfigs));
    assert!(!implies(DescribeConfigs, AlterConfigs));
    assert!(!implies(Alter, DescribeConfigs));
}

/// The rules of the module docs, applied by scanning every binding: the indexed authorizer
/// must answer the same.
fn reference(
    bindings: &[AclBinding],
    cfg: &AuthorizerConfig,
    who: &Principal,
    host: &str,
    op: AclOperation,
    rt: ResourceType,
    name: &str,
) -> Decision {
    if cfg.super_users.contains(&who.to_string()) {
        return Decision::Allowed;
    }
    let applicable: Vec<&AclBinding> = bindings
        .iter()
        .filter(|b| b.pattern.resource_type == rt && b.pattern.covers(name))
        .collect();
    if applicable.is_empty() {
        return if cfg.allow_everyone_if_no_acl_found {
            Decision::Allowed
        } else {
            Decision::Denied
        };
    }
    let matching = |b: &&&AclBinding, perm: PermissionType| {
        let e = &b.entry;
        let who_ok = e.principal == who.to_string() || e.principal == "User:*";
        let host_ok = e.host == "*" || e.host == host;
        let op_ok = match perm {
            Deny => e.operation == op || e.operation == All,
            _ => implies(e.operation, op),
        };
        e.permission_type == perm && who_ok && host_ok && op_ok
    };
    if applicable.iter().any(|b| matching(&b, Deny)) {
        Decision::Denied
    } else if applicable.iter().any(|b| matching(&b, Allow)) {
        Decision::Allowed
    } else {
        Decision::Denied
    }
}

/// A small xorshift generator: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn index(&mut self, len: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % len as u64) as usize
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.index(from.len())]
    }
}

#[test]
fn indexed_authorizer_agrees_with_a_full_scan() {
    let names = ["a", "ab", "abc", "b", "ba", "*", "é", "éa"];
    let principals = ["User:alice", "User:bob", "User:*", "Group:alice"];
    let hosts = ["*", "h1", "h2"];
    let perms = [Allow, Deny];
    let types = [Topic, Group];
    let pts = [PatternType::Literal, PatternType::Prefixed];
    let ops: Vec<AclOperation> = AclOperation::ALL_VALUES
        .iter()
        .copied()
        .filter(|o| !matches!(o, Any | Unknown))
        .collect();
    let who_all = [
        Principal::user("alice"),
        Principal::user("bob"),
        Principal {
            kind: "Group".into(),
            name: "alice".into(),
        },
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut decisions = [0usize; 2];
    for round in 0..600 {
        let cfg = AuthorizerConfig {
            super_users: if round % 7 == 0 {
                ["User:bob".to_string()].into()
            } else {
                Default::default()
            },
            allow_everyone_if_no_acl_found: round % 2 == 0,
        };
        let n = round % 6;
        let bindings: Vec<AclBinding> = (0..n)
            .map(|_| {
                acl(
                    rng.pick(&types),
                    rng.pick(&names),
                    rng.pick(&pts),
                    rng.pick(&principals),
                    rng.pick(&hosts),
                    rng.pick(&ops),
                    rng.pick(&perms),
                )
            })
            .collect();
        let mut a = Authorizer::with_bindings(cfg.clone(), bindings.clone());
        for _ in 0..40 {
            let who = &who_all[rng.index(who_all.len())];
            let host = rng.pick(&["h1", "h2"]);
            let op = rng.pick(&ops);
            let rt = rng.pick(&types);
            let name = rng.pick(&names);
            let want = reference(&bindings, &cfg, who, host, op, rt, name);
            let got = a.authorize(who, host, op, rt, name);
            assert_eq!(
                got, want,
                "{who} {host} {op} {rt}:{name} with {bindings:#?}"
            );
            decisions[usize::from(got == Decision::Allowed)] += 1;
        }
        // Removing through a filter leaves an authorizer equal to one built from the rest.
        let mut f = AclBindingFilter::any();
        f.entry.principal = Some(rng.pick(&principals).to_string());
        let removed = a.remove_matching(&f);
        let rest: Vec<AclBinding> = bindings.iter().filter(|b| !f.matches(b)).cloned().collect();
        assert_eq!(removed.len() + a.len(), {
            let mut all = bindings.clone();
            all.sort();
            all.dedup();
            all.len()
        });
        for name in names {
            assert_eq!(
                a.authorize(&who_all[0], "h1", Read, Topic, name),
                reference(&rest, &cfg, &who_all[0], "h1", Read, Topic, name)
            );
        }
    }
    // Both answers occur often enough for the comparison to mean something.
    assert!(decisions[0] > 2000 && decisions[1] > 2000, "{decisions:?}");
}
