//! The client quota entities and their values, and the durable store that keeps them.
//!
//! An entity is a user, a client id, or both, each either named or the default (Kafka's
//! `ClientQuotaEntity` with a null name). Values are keyed by Kafka's quota names
//! (`producer_byte_rate`, `consumer_byte_rate`, `request_percentage`,
//! `controller_mutation_rate`).
//!
//! On disk: `client-quotas.json` in the data dir,
//! `{"version":1,"entities":[{"entity":{"user":"alice","client-id":null},"quotas":{"producer_byte_rate":1024.0}}]}`
//! (an entity type that is absent is not in the object; `null` is the default entity), kept
//! by [`DocumentFile`]: replaced whole and durably before a change is answered, read at start.
//! Kafka keeps these as `ClientQuotaRecord`s in its metadata log; Skiff has no metadata log and
//! the set is small.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::broker::StartError;
use crate::document_file::DocumentFile;

/// The file name in the data dir.
pub const FILE: &str = "client-quotas.json";
const VERSION: u32 = 1;

pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

/// A quota entity: `None` = the type is not part of it; `Some(None)` = the default entity of
/// that type; `Some(Some(name))` = that name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuotaEntity {
    pub user: Option<Option<String>>,
    pub client_id: Option<Option<String>>,
}

impl QuotaEntity {
    /// The name given for `entity_type` (`Some(None)`: the default), `None` when absent.
    pub fn get(&self, entity_type: &str) -> Option<Option<&str>> {
        let part = match entity_type {
            USER => &self.user,
            CLIENT_ID => &self.client_id,
            _ => return None,
        };
        part.as_ref().map(|n| n.as_deref())
    }

    /// The (type, name) pairs, user first.
    pub fn parts(&self) -> Vec<(&'static str, Option<&str>)> {
        let mut out = Vec::with_capacity(2);
        if let Some(u) = &self.user {
            out.push((USER, u.as_deref()));
        }
        if let Some(c) = &self.client_id {
            out.push((CLIENT_ID, c.as_deref()));
        }
        out
    }

    pub fn user(name: Option<&str>) -> QuotaEntity {
        QuotaEntity {
            user: Some(name.map(str::to_string)),
            client_id: None,
        }
    }

    pub fn client(name: Option<&str>) -> QuotaEntity {
        QuotaEntity {
            user: None,
            client_id: Some(name.map(str::to_string)),
        }
    }

    pub fn user_client(user: Option<&str>, client: Option<&str>) -> QuotaEntity {
        QuotaEntity {
            user: Some(user.map(str::to_string)),
            client_id: Some(client.map(str::to_string)),
        }
    }
}

/// Kafka's `ClientQuotaEntity.toString` form, used in messages.
impl fmt::Display for QuotaEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .parts()
            .iter()
            .map(|(t, n)| format!("{t}={}", n.unwrap_or("null")))
            .collect();
        write!(f, "ClientQuotaEntity(entries={{{}}})", parts.join(", "))
    }
}

/// One entity's quota values, by key.
pub type QuotaValues = BTreeMap<String, f64>;
/// Every entity with at least one value.
pub type Quotas = BTreeMap<QuotaEntity, QuotaValues>;

#[derive(Serialize, Deserialize)]
struct StoredEntry {
    entity: BTreeMap<String, Option<String>>,
    quotas: QuotaValues,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    version: u32,
    #[serde(default)]
    entities: Vec<StoredEntry>,
}

pub struct QuotaStore(DocumentFile<Quotas>);

impl QuotaStore {
    /// Reads the file in `root` (if any).
    pub fn open(root: &Path) -> Result<QuotaStore, StartError> {
        DocumentFile::open(root, FILE, parse).map(QuotaStore)
    }

    /// The quotas in force.
    pub fn snapshot(&self) -> Arc<Quotas> {
        self.0.snapshot()
    }

    /// Held by whoever changes the store, from validating against the current set to applying
    /// the new one.
    pub fn lock_updates(&self) -> MutexGuard<'_, ()> {
        self.0.lock_updates()
    }

    /// Writes `next` durably, then makes it current. The caller holds
    /// [`Self::lock_updates`]. Blocking (fsync): call from a blocking thread.
    pub fn commit(&self, next: Quotas) -> Result<(), skiff_log::LogError> {
        let bytes = render(&next);
        self.0.replace(next, &bytes)
    }
}

fn render(quotas: &Quotas) -> Vec<u8> {
    let stored = Stored {
        version: VERSION,
        entities: quotas
            .iter()
            .map(|(entity, values)| StoredEntry {
                entity: entity
                    .parts()
                    .into_iter()
                    .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                    .collect(),
                quotas: values.clone(),
            })
            .collect(),
    };
    serde_json::to_vec_pretty(&stored).unwrap_or_default()
}

fn parse(bytes: &[u8]) -> Result<Quotas, String> {
    let stored: Stored = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if stored.version != VERSION {
        return Err(format!("unknown version {}", stored.version));
    }
    let mut quotas = Quotas::new();
    for entry in stored.entities {
        let mut entity = QuotaEntity::default();
        for (t, n) in entry.entity {
            match t.as_str() {
                USER => entity.user = Some(n),
                CLIENT_ID => entity.client_id = Some(n),
                other => return Err(format!("unknown entity type {other}")),
            }
        }
        if entity.user.is_none() && entity.client_id.is_none() {
            return Err("an entry without entity".into());
        }
        if !entry.quotas.is_empty() {
            quotas.insert(entity, entry.quotas);
        }
    }
    Ok(quotas)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survives_a_reopen_and_keeps_defaults_apart_from_names() {
        let dir = tempfile::tempdir().unwrap();
        let store = QuotaStore::open(dir.path()).unwrap();
        assert!(store.snapshot().is_empty());
        let mut next = Quotas::new();
        next.insert(
            QuotaEntity::user(Some("alice")),
            [("producer_byte_rate".to_string(), 1024.0)].into(),
        );
        next.insert(
            QuotaEntity::user_client(None, Some("app")),
            [("request_percentage".to_string(), 12.5)].into(),
        );
        next.insert(
            QuotaEntity::client(None),
            [("consumer_byte_rate".to_string(), 2048.0)].into(),
        );
        let _g = store.lock_updates();
        store.commit(next.clone()).unwrap();
        let reopened = QuotaStore::open(dir.path()).unwrap();
        assert_eq!(*reopened.snapshot(), next);
        assert_eq!(
            QuotaEntity::user_client(None, Some("app")).to_string(),
            "ClientQuotaEntity(entries={user=null, client-id=app})"
        );
    }

    #[test]
    fn a_damaged_file_stops_the_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), b"{not json").unwrap();
        assert!(QuotaStore::open(dir.path()).is_err());
    }
}
