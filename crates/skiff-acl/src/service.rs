//! The ACLs a broker serves: the authorizer in memory plus the file that makes it durable,
//! with the three operations of CreateAcls, DescribeAcls and DeleteAcls as Kafka's controller
//! performs them. Handlers do the parse-time checks and the CLUSTER authorization (see
//! [`crate::validate`]) first, then call these.
//!
//! - [`Acls::create`]: each creation is validated on its own; every valid one is added (a
//!   duplicate of a stored binding succeeds and is stored once); the new set is written to the
//!   file *before* it is applied or answered. If the write fails, every creation that would
//!   have succeeded answers UNKNOWN_SERVER_ERROR and nothing changes.
//! - [`Acls::delete`]: every filter is matched against the set as it was before the request
//!   (a binding two filters match is reported under both, removed once); the reduced set is
//!   written before it is applied; a failed write answers UNKNOWN_SERVER_ERROR for every
//!   filter and nothing changes.
//! - Kafka's controller refuses more than [`MAX_CHANGES_PER_REQUEST`] record changes in one
//!   request (its `MAX_RECORDS_PER_USER_OP`); a CreateAcls adding more new bindings, or a
//!   DeleteAcls removing more, answers UNKNOWN_SERVER_ERROR for every creation / filter and
//!   changes nothing. (Kafka fails only the filter that crosses the limit and still removes
//!   what earlier filters matched; Skiff keeps the request all-or-nothing.)
//! - [`Acls::describe`]: the bindings a filter matches, grouped by pattern as DescribeAcls
//!   answers them.
//!
//! Thread safety: readers take the current authorizer ([`Acls::snapshot`]) under a short
//! `RwLock` and keep it as long as they like; writers serialise on a std `Mutex` held across
//! the file write and the swap (never across an `.await`; the write fsyncs, so callers on an
//! async runtime run it on a blocking thread).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use crate::authorizer::{Authorizer, AuthorizerConfig};
use crate::filter::AclBindingFilter;
use crate::model::{AccessControlEntry, AclBinding, ResourcePattern};
use crate::store::AclStore;
use crate::validate::{validate_creation, ApiError, ErrorCode};
use crate::AclError;

/// The broker's ACLs (see the module docs).
pub struct Acls {
    store: AclStore,
    /// Serialises changes: held from reading the current set to swapping in the new one.
    update: Mutex<()>,
    current: RwLock<Arc<Authorizer>>,
}

/// Kafka's `QuorumController.MAX_RECORDS_PER_USER_OP`: the most ACL records one request may
/// add or remove, which also bounds the work and the file rewrite one request can cause.
pub const MAX_CHANGES_PER_REQUEST: usize = 10_000;

fn write_failed() -> ApiError {
    ApiError {
        code: ErrorCode::UnknownServerError,
        message: None,
    }
}

impl Acls {
    /// Load the ACL file of `data_dir` (see [`AclStore::load`] for what stops a start).
    pub fn open(data_dir: &Path, config: AuthorizerConfig) -> Result<Acls, AclError> {
        let store = AclStore::new(data_dir);
        let bindings = store.load()?;
        Ok(Acls {
            store,
            update: Mutex::new(()),
            current: RwLock::new(Arc::new(Authorizer::with_bindings(config, bindings))),
        })
    }

    /// The authorizer in force.
    pub fn snapshot(&self) -> Arc<Authorizer> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Write `next` durably, then make it current. The caller holds `update`.
    fn commit(&self, next: Authorizer) -> Result<(), AclError> {
        let bindings: Vec<AclBinding> = next.bindings().cloned().collect();
        self.store.save(&bindings)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
        Ok(())
    }

    /// CreateAcls: one result per creation, in order.
    pub fn create(&self, creations: &[AclBinding]) -> Vec<Result<(), ApiError>> {
        let _guard = self.update.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = (*self.snapshot()).clone();
        let mut results: Vec<Result<(), ApiError>> = Vec::with_capacity(creations.len());
        let mut added = 0;
        for c in creations {
            let r = validate_creation(c);
            if r.is_ok() && next.add(c.clone()) {
                added += 1;
            }
            results.push(r);
        }
        if added > MAX_CHANGES_PER_REQUEST {
            return creations.iter().map(|_| Err(write_failed())).collect();
        }
        if added > 0 {
            if let Err(e) = self.commit(next) {
                log_write_failure(&e);
                for r in results.iter_mut().filter(|r| r.is_ok()) {
                    *r = Err(write_failed());
                }
            }
        }
        results
    }

    /// DeleteAcls: per filter, the bindings it removed, in order.
    pub fn delete(&self, filters: &[AclBindingFilter]) -> Vec<Result<Vec<AclBinding>, ApiError>> {
        let _guard = self.update.lock().unwrap_or_else(|e| e.into_inner());
        let before = self.snapshot();
        let matched: Vec<Vec<AclBinding>> = filters.iter().map(|f| before.describe(f)).collect();
        if matched.iter().all(Vec::is_empty) {
            return matched.into_iter().map(Ok).collect();
        }
        let mut next = (*before).clone();
        for f in filters {
            next.remove_matching(f);
        }
        if before.len() - next.len() > MAX_CHANGES_PER_REQUEST {
            return filters.iter().map(|_| Err(write_failed())).collect();
        }
        match self.commit(next) {
            Ok(()) => matched.into_iter().map(Ok).collect(),
            Err(e) => {
                log_write_failure(&e);
                filters.iter().map(|_| Err(write_failed())).collect()
            }
        }
    }

    /// DescribeAcls: the matching bindings grouped by pattern, patterns and entries in a
    /// stable order.
    pub fn describe(
        &self,
        filter: &AclBindingFilter,
    ) -> Vec<(ResourcePattern, Vec<AccessControlEntry>)> {
        group_by_pattern(self.snapshot().describe(filter))
    }
}

/// Group bindings by their pattern, as DescribeAcls responses list them.
pub fn group_by_pattern(
    bindings: impl IntoIterator<Item = AclBinding>,
) -> Vec<(ResourcePattern, Vec<AccessControlEntry>)> {
    let mut by: BTreeMap<ResourcePattern, Vec<AccessControlEntry>> = BTreeMap::new();
    for b in bindings {
        let entries = by.entry(b.pattern).or_default();
        if !entries.contains(&b.entry) {
            entries.push(b.entry);
        }
    }
    by.into_iter().collect()
}

/// A failed ACL write is logged here and answered as UNKNOWN_SERVER_ERROR (Kafka's answer to
/// an internal failure, message null so nothing internal leaks to the client).
fn log_write_failure(e: &AclError) {
    tracing::error!(error = %e, "writing the ACL file failed; the ACL change was not applied");
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::authorizer::Decision;
    use crate::model::{AclOperation, PatternType, PermissionType, Principal, ResourceType};

    fn b(name: &str, who: &str, op: AclOperation) -> AclBinding {
        AclBinding::new(
            ResourcePattern::new(ResourceType::Topic, name, PatternType::Literal),
            AccessControlEntry::new(who, "*", op, PermissionType::Allow),
        )
    }

    #[test]
    fn create_validates_each_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let acls = Acls::open(dir.path(), AuthorizerConfig::default()).unwrap();
        let good = b("t", "User:alice", AclOperation::Read);
        let bad = b("t", "alice", AclOperation::Read);
        let results = acls.create(&[good.clone(), bad, good.clone()]);
        assert_eq!(results[0], Ok(()));
        assert_eq!(
            results[1].as_ref().unwrap_err().code,
            ErrorCode::InvalidRequest
        );
        assert_eq!(results[2], Ok(()), "a duplicate succeeds");
        assert_eq!(acls.snapshot().len(), 1);
        let again = Acls::open(dir.path(), AuthorizerConfig::default()).unwrap();
        assert_eq!(
            again.snapshot().authorize(
                &Principal::user("alice"),
                "h",
                AclOperation::Read,
                ResourceType::Topic,
                "t"
            ),
            Decision::Allowed
        );
    }

    #[test]
    fn delete_reports_per_filter_against_the_old_set() {
        let dir = tempfile::tempdir().unwrap();
        let acls = Acls::open(dir.path(), AuthorizerConfig::default()).unwrap();
        let a = b("t", "User:alice", AclOperation::Read);
        let c = b("u", "User:carol", AclOperation::Write);
        acls.create(&[a.clone(), c.clone()]);
        let mut by_alice = AclBindingFilter::any();
        by_alice.entry.principal = Some("User:alice".into());
        let mut on_t = AclBindingFilter::any();
        on_t.pattern.name = Some("t".into());
        let mut nobody = AclBindingFilter::any();
        nobody.entry.principal = Some("User:nobody".into());
        let results = acls.delete(&[by_alice, on_t, nobody]);
        assert_eq!(results[0], Ok(vec![a.clone()]));
        assert_eq!(
            results[1],
            Ok(vec![a]),
            "both filters report the shared binding"
        );
        assert_eq!(results[2], Ok(vec![]));
        let reopened = Acls::open(dir.path(), AuthorizerConfig::default()).unwrap();
        assert_eq!(
            reopened.snapshot().bindings().cloned().collect::<Vec<_>>(),
            vec![c]
        );
    }

    #[test]
    fn a_failed_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let acls = Acls::open(&data, AuthorizerConfig::default()).unwrap();
        let a = b("t", "User:alice", AclOperation::Read);
        acls.create(std::slice::from_ref(&a));
        // A directory where the temp file must go makes the next write fail.
        std::fs::create_dir(data.join(crate::store::TMP_FILE)).unwrap();
        let r = acls.create(&[
            b("u", "User:bob", AclOperation::Read),
            b("", "User:x", AclOperation::Read),
        ]);
        assert_eq!(
            r[0].as_ref().unwrap_err().code,
            ErrorCode::UnknownServerError
        );
        assert_eq!(r[1].as_ref().unwrap_err().code, ErrorCode::InvalidRequest);
        assert_eq!(acls.snapshot().len(), 1);
        let r = acls.delete(&[AclBindingFilter::any()]);
        assert_eq!(
            r[0].as_ref().unwrap_err().code,
            ErrorCode::UnknownServerError
        );
        assert_eq!(acls.snapshot().len(), 1);
    }

    #[test]
    fn too_many_changes_in_one_request_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let acls = Acls::open(dir.path(), AuthorizerConfig::default()).unwrap();
        let many: Vec<AclBinding> = (0..=MAX_CHANGES_PER_REQUEST)
            .map(|i| b(&format!("t{i}"), "User:a", AclOperation::Read))
            .collect();
        let r = acls.create(&many);
        assert!(r
            .iter()
            .all(|r| r.as_ref().unwrap_err().code == ErrorCode::UnknownServerError));
        assert!(acls.snapshot().is_empty());
        assert!(acls.create(&many[1..]).iter().all(Result::is_ok));
        assert!(
            acls.create(&many).iter().all(Result::is_ok),
            "only one is new"
        );
        let r = acls.delete(&[AclBindingFilter::any()]);
        assert!(r[0].is_err());
        assert_eq!(acls.snapshot().len(), MAX_CHANGES_PER_REQUEST + 1);
    }

    #[test]
    fn describe_groups_by_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let acls = Acls::open(dir.path(), AuthorizerConfig::default()).unwrap();
        acls.create(&[
            b("t", "User:alice", AclOperation::Read),
            b("t", "User:bob", AclOperation::Read),
            b("u", "User:bob", AclOperation::Write),
        ]);
        let groups = acls.describe(&AclBindingFilter::any());
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].0.name, "t");
        assert_eq!(groups[0].1.len(), 2);
        assert_eq!(groups[1].0.name, "u");
        assert_eq!(groups[1].1.len(), 1);
    }
}
