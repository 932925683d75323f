//! Group administration: DescribeGroups, ListGroups and DeleteGroups.

use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::group::{Group, GroupState};
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

    /// Every group (ListGroups).
    pub fn list(&self) -> Result<Vec<Listed>, ResponseError> {
        let groups = self.ready()?;
        let mut v: Vec<Listed> = groups
            .values()
            .map(|g| Listed {
                id: g.id.clone(),
                protocol_type: if g.is_consumer_group() {
                    "consumer".to_string()
                } else {
                    g.protocol_type.clone().unwrap_or_default()
                },
                state: g.state_name(),
                group_type: if g.is_consumer_group() {
                    "consumer"
                } else {
                    "classic"
                },
            })
            .collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(v)
    }

    /// DeleteGroups: empty groups only; tombstones are durable before the answer.
    pub async fn delete_groups(&self, ids: &[String]) -> Vec<Result<(), ResponseError>> {
        let now = self.now();
        let mut waits = Vec::new();
        let mut results = Vec::new();
        {
            let mut groups = match self.ready() {
                Ok(g) => g,
                Err(e) => return vec![Err(e); ids.len()],
            };
            for id in ids {
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
        results
    }
}
