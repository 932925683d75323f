//! Group administration: DescribeGroups, ListGroups and DeleteGroups, over classic, consumer,
//! streams and share groups (one namespace).

use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::group::{Group, GroupState};
use super::streams::STREAMS_GROUP_TYPE;
use super::{Coordinator, Listed};
use crate::host::Storage;

impl<S: Storage> Coordinator<S> {
    /// Read access to one group (DescribeGroups).
    pub fn with_group<R>(
        &self,
        group_id: &str,
        f: impl FnOnce(Option<&Group>) -> R,
    ) -> Result<R, ResponseError> {
        let groups = self.ready()?;
        Ok(f(groups.get(group_id)))
    }

    /// Every group (ListGroups), share groups included ("share" type and protocol type,
    /// state Empty or Stable, as Kafka lists them).
    pub fn list(&self) -> Result<Vec<Listed>, ResponseError> {
        let groups = self.ready()?;
        let mut v: Vec<Listed> = groups
            .values()
            .map(|g| Listed {
                id: g.id.clone(),
                protocol_type: if g.is_streams_group() {
                    STREAMS_GROUP_TYPE.to_string()
                } else if g.is_consumer_group() {
                    "consumer".to_string()
                } else {
                    g.protocol_type.clone().unwrap_or_default()
                },
                state: g.state_name(),
                group_type: if g.is_streams_group() {
                    STREAMS_GROUP_TYPE
                } else if g.is_consumer_group() {
                    "consumer"
                } else {
                    "classic"
                },
            })
            .collect();
        v.extend(self.list_share());
        drop(groups);
        v.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(v)
    }

    /// DeleteGroups: empty groups only; tombstones are durable before the answer. A deleted
    /// share group is then reported to the share group listener.
    pub async fn delete_groups(&self, ids: &[String]) -> Vec<Result<(), ResponseError>> {
        let now = self.now();
        let mut waits = Vec::new();
        let mut results = Vec::new();
        // (index in results, id) of the share groups deleted.
        let mut shares = Vec::new();
        {
            let mut groups = match self.ready() {
                Ok(g) => g,
                Err(e) => return vec![Err(e); ids.len()],
            };
            for id in ids {
                if let Some(deleted) = self.delete_share(id) {
                    results.push(deleted.map(|rx| {
                        waits.push((results.len(), rx));
                        shares.push((results.len(), id.clone()));
                    }));
                    continue;
                }
                let error = match groups.get_mut(id) {
                    None => Err(ResponseError::GroupIdNotFound),
                    Some(g) if g.state == GroupState::Dead => Err(ResponseError::GroupIdNotFound),
                    Some(g) if !g.is_empty() || g.state != GroupState::Empty => {
                        Err(ResponseError::NonEmptyGroup)
                    }
                    Some(g) => {
                        g.delete(now);
                        let (tx, rx) = oneshot::channel();
                        self.shared.drain(g, Some(tx));
                        groups.remove(id);
                        waits.push((results.len(), rx));
                        Ok(())
                    }
                };
                results.push(error);
            }
        }
        for (i, rx) in waits {
            if let Err(e) = self.wait_written(rx).await {
                results[i] = Err(e);
            }
        }
        for (i, id) in shares {
            // The group is gone from memory even if its tombstones failed to be written.
            if results[i].is_ok() {
                tracing::debug!(group = %id, "share group tombstones durable");
            }
            self.shared.tell_deleted(&id);
        }
        results
    }
}
