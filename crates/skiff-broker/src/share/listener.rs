//! The group coordinator's [`ShareGroupListener`] for the share-partition manager: a member
//! that leaves or expires has its records released, a deleted share group its share state
//! dropped.
//!
//! The coordinator calls the listener from a request's thread or its own thread and wants it
//! to return at once, while a release appends to `__share_group_state`; so each event is
//! handed to the tokio blocking pool when a runtime is at hand, else to a short-lived thread.
//!
//! Thread safety: holds only a weak reference to the manager (the broker owns both).

use std::sync::{Arc, Weak};

use skiff_coordinator::host::ShareGroupListener;

use super::ShareManager;

pub struct GroupListener {
    manager: Weak<ShareManager>,
}

impl GroupListener {
    pub fn new(manager: &Arc<ShareManager>) -> Arc<GroupListener> {
        Arc::new(GroupListener {
            manager: Arc::downgrade(manager),
        })
    }

    fn run(&self, what: &'static str, job: impl FnOnce(&ShareManager) + Send + 'static) {
        let Some(manager) = self.manager.upgrade() else {
            return;
        };
        let work = move || job(&manager);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn_blocking(work);
        } else if let Err(e) = std::thread::Builder::new()
            .name(format!("share-{what}"))
            .spawn(work)
        {
            tracing::error!(error = %e, "share {what}: no thread to run it");
        }
    }
}

impl ShareGroupListener for GroupListener {
    fn member_removed(&self, group_id: &str, member_id: &str) {
        let (group, member) = (group_id.to_string(), member_id.to_string());
        self.run("release", move |m| m.member_removed(&group, &member));
    }

    fn group_deleted(&self, group_id: &str) {
        let group = group_id.to_string();
        self.run("group-deleted", move |m| m.group_deleted(&group));
    }
}
