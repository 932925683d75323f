//! The durable store of SCRAM credentials managed through AlterUserScramCredentials, read by
//! DescribeUserScramCredentials and (through [`ScramCredentialStore`]) by SASL SCRAM logins.
//!
//! On disk: `scram-credentials.json` in the data dir, a JSON object
//! `{"version":1,"users":{user:{"SCRAM-SHA-256":"salt=…,stored_key=…,server_key=…,iterations=…"}}}`.
//! Each credential is in Kafka's text form (`ScramCredential::to_kafka_string`): salt, stored
//! key, server key and iteration count; never a password, and not even the salted password
//! the client sent. The file is a [`DocumentFile`]: replaced whole and durably before a change
//! is answered, read at start. Kafka keeps these as records in its metadata log; Skiff has no
//! metadata log, and the set is small (a few users), so one file read at start is the simplest
//! durable place.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, MutexGuard};

use serde::{Deserialize, Serialize};
use skiff_auth::scram::credential::{ScramCredential, ScramCredentialStore};
use skiff_auth::scram::ScramMechanism;

use crate::broker::StartError;
use crate::document_file::DocumentFile;

/// The file name in the data dir.
pub const FILE: &str = "scram-credentials.json";
const VERSION: u32 = 1;

/// Every user's credentials, by user name then mechanism.
pub type Credentials = BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>;

/// The file's shape: mechanism names and Kafka's credential text.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    version: u32,
    #[serde(default)]
    users: BTreeMap<String, BTreeMap<String, String>>,
}

/// One change of an alteration.
#[derive(Clone, Debug)]
pub enum Change {
    Upsert {
        user: String,
        mechanism: ScramMechanism,
        credential: ScramCredential,
    },
    Delete {
        user: String,
        mechanism: ScramMechanism,
    },
}

pub struct ScramStore(DocumentFile<Credentials>);

impl ScramStore {
    /// Reads the file in `root` (if any).
    pub fn open(root: &Path) -> Result<ScramStore, StartError> {
        DocumentFile::open(root, FILE, parse).map(ScramStore)
    }

    /// The credentials in force.
    pub fn snapshot(&self) -> Arc<Credentials> {
        self.0.snapshot()
    }

    /// Held by whoever changes the store, from validating against the current set to applying
    /// the new one.
    pub fn lock_updates(&self) -> MutexGuard<'_, ()> {
        self.0.lock_updates()
    }

    /// Writes the current set with `changes` applied durably, then makes it current. The
    /// caller holds [`Self::lock_updates`]. Blocking (fsync): call from a blocking thread.
    pub fn commit(&self, changes: &[Change]) -> Result<(), skiff_log::LogError> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut next = (*self.snapshot()).clone();
        for change in changes {
            match change {
                Change::Upsert {
                    user,
                    mechanism,
                    credential,
                } => {
                    next.entry(user.clone())
                        .or_default()
                        .insert(*mechanism, credential.clone());
                }
                Change::Delete { user, mechanism } => {
                    if let Some(m) = next.get_mut(user) {
                        m.remove(mechanism);
                        if m.is_empty() {
                            next.remove(user);
                        }
                    }
                }
            }
        }
        let bytes = render(&next);
        self.0.replace(next, &bytes)
    }
}

impl ScramCredentialStore for ScramStore {
    fn credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential> {
        self.snapshot()
            .get(user)
            .and_then(|m| m.get(&mechanism))
            .cloned()
    }
}

fn render(credentials: &Credentials) -> Vec<u8> {
    let stored = Stored {
        version: VERSION,
        users: credentials
            .iter()
            .map(|(user, by_mechanism)| {
                let texts = by_mechanism
                    .iter()
                    .map(|(m, c)| (m.name().to_string(), c.to_kafka_string()))
                    .collect();
                (user.clone(), texts)
            })
            .collect(),
    };
    serde_json::to_vec_pretty(&stored).unwrap_or_default()
}

/// Parses the file. Errors name the user and mechanism, never the credential text.
fn parse(bytes: &[u8]) -> Result<Credentials, String> {
    let stored: Stored = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if stored.version != VERSION {
        return Err(format!(
            "version {}; this Skiff reads version {VERSION}",
            stored.version
        ));
    }
    let mut out = Credentials::new();
    for (user, texts) in stored.users {
        let mut by_mechanism = BTreeMap::new();
        for (name, text) in texts {
            let mechanism = ScramMechanism::from_name(&name)
                .ok_or_else(|| format!("user '{user}': unknown mechanism '{name}'"))?;
            let credential = ScramCredential::from_kafka_string(&text)
                .map_err(|e| format!("user '{user}', {name}: {e}"))?;
            by_mechanism.insert(mechanism, credential);
        }
        if !by_mechanism.is_empty() {
            out.insert(user, by_mechanism);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survives_reopen_and_rejects_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let store = ScramStore::open(dir.path()).unwrap();
        let c = ScramCredential::derive_with_salt(ScramMechanism::Sha256, "pw", b"salt", 4096);
        {
            let _u = store.lock_updates();
            store
                .commit(&[Change::Upsert {
                    user: "alice".into(),
                    mechanism: ScramMechanism::Sha256,
                    credential: c.clone(),
                }])
                .unwrap();
        }
        let again = ScramStore::open(dir.path()).unwrap();
        assert_eq!(
            again.credential(ScramMechanism::Sha256, "alice"),
            Some(c.clone())
        );
        assert_eq!(again.credential(ScramMechanism::Sha512, "alice"), None);
        {
            let _u = again.lock_updates();
            again
                .commit(&[Change::Delete {
                    user: "alice".into(),
                    mechanism: ScramMechanism::Sha256,
                }])
                .unwrap();
        }
        assert!(again.snapshot().is_empty());
        assert!(ScramStore::open(dir.path()).unwrap().snapshot().is_empty());
        std::fs::write(dir.path().join(FILE), b"{not json").unwrap();
        assert!(ScramStore::open(dir.path()).is_err());
        std::fs::write(
            dir.path().join(FILE),
            br#"{"version":1,"users":{"bob":{"SCRAM-SHA-1":"x"}}}"#,
        )
        .unwrap();
        assert!(ScramStore::open(dir.path()).is_err());
    }

    #[test]
    fn a_failed_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = ScramStore::open(dir.path()).unwrap();
        // A directory where the file should be makes the rename fail.
        std::fs::create_dir(dir.path().join(FILE)).unwrap();
        let c = ScramCredential::derive_with_salt(ScramMechanism::Sha512, "pw", b"salt", 4096);
        let _u = store.lock_updates();
        assert!(store
            .commit(&[Change::Upsert {
                user: "alice".into(),
                mechanism: ScramMechanism::Sha512,
                credential: c,
            }])
            .is_err());
        assert_eq!(store.credential(ScramMechanism::Sha512, "alice"), None);
    }
}
