//! The durable ACL store: every binding in one file, `acls.json`, in the data dir.
//!
//! On disk: a JSON object `{"version":1,"acls":[{"pattern":{"resource_type":"TOPIC",
//! "name":"t","pattern_type":"LITERAL"},"entry":{"principal":"User:alice","host":"*",
//! "operation":"READ","permission_type":"ALLOW"}}, ...]}`, enum values by Kafka's names. The
//! file is replaced as a whole on every change, before the change is applied or answered,
//! with the same discipline as `dynamic-configs.json` (`skiff_log::write_atomically`): write
//! `acls.json.tmp`, fsync it, rename it over `acls.json`, fsync the directory — so after a
//! crash the file holds the old or the new set, never a mix. The code is repeated here
//! rather than depending on skiff-log, to keep this crate free of the storage engine.
//!
//! At load, a leftover `acls.json.tmp` (a save torn by a crash before its rename) is
//! ignored and removed; a missing `acls.json` means no ACLs; an unreadable one, one of
//! another version, or one holding a binding CreateAcls would refuse is an error, and the
//! broker must not start (the next save would silently drop what it could not read).
//!
//! Kafka keeps ACLs as records in its metadata log; Skiff has no metadata log, and the set is
//! small and rarely changed, so one file is the simplest durable place.
//!
//! Thread safety: `load` and `save` are plain file operations; callers serialise saves (and
//! the in-memory change that goes with each) themselves, e.g. under one `Mutex`.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::AclBinding;
use crate::validate::validate_creation;
use crate::AclError;

/// The file name in the data dir.
pub const FILE: &str = "acls.json";
/// The temp file a save writes before renaming it into place.
pub const TMP_FILE: &str = "acls.json.tmp";
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    #[serde(default)]
    acls: Vec<AclBinding>,
}

/// The ACL file of one data dir.
#[derive(Clone, Debug)]
pub struct AclStore {
    dir: PathBuf,
}

impl AclStore {
    pub fn new(data_dir: &Path) -> AclStore {
        AclStore {
            dir: data_dir.to_path_buf(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// Every stored binding (empty when there is no file yet).
    pub fn load(&self) -> Result<Vec<AclBinding>, AclError> {
        let tmp = self.dir.join(TMP_FILE);
        match fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(AclError::Io {
                    context: "removing the torn save",
                    path: tmp,
                    source: e,
                })
            }
        }
        let path = self.path();
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(AclError::Io {
                    context: "reading",
                    path,
                    source: e,
                })
            }
        };
        let corrupt = |reason: String| AclError::Corrupt {
            path: path.clone(),
            reason,
        };
        let stored: OnDisk = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if stored.version != VERSION {
            return Err(corrupt(format!(
                "version {}; this Skiff reads version {VERSION}",
                stored.version
            )));
        }
        for b in &stored.acls {
            if let Err(e) = validate_creation(b) {
                return Err(corrupt(format!(
                    "binding `{b}` is invalid: {}",
                    e.message.unwrap_or_default()
                )));
            }
        }
        Ok(stored.acls)
    }

    /// Replace the file with `bindings` (see the module docs).
    pub fn save(&self, bindings: &[AclBinding]) -> Result<(), AclError> {
        let on_disk = OnDisk {
            version: VERSION,
            acls: bindings.to_vec(),
        };
        let bytes = serde_json::to_vec_pretty(&on_disk).map_err(|e| AclError::Corrupt {
            path: self.path(),
            reason: format!("cannot serialise: {e}"),
        })?;
        let tmp = self.dir.join(TMP_FILE);
        let io = |context: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| AclError::Io {
                context,
                path,
                source,
            }
        };
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)
                .map_err(io("creating", &tmp))?;
            f.write_all(&bytes).map_err(io("writing", &tmp))?;
            f.sync_all().map_err(io("fsyncing", &tmp))?;
        }
        let path = self.path();
        fs::rename(&tmp, &path).map_err(io("renaming into place", &path))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io("fsyncing directory", &self.dir))?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{
        AccessControlEntry, AclOperation, PatternType, PermissionType, ResourcePattern,
        ResourceType,
    };

    fn sample() -> Vec<AclBinding> {
        vec![
            AclBinding::new(
                ResourcePattern::new(ResourceType::Topic, "orders", PatternType::Literal),
                AccessControlEntry::new(
                    "User:alice",
                    "*",
                    AclOperation::Read,
                    PermissionType::Allow,
                ),
            ),
            AclBinding::new(
                ResourcePattern::new(ResourceType::TransactionalId, "tx-", PatternType::Prefixed),
                AccessControlEntry::new(
                    "User:*",
                    "10.0.0.1",
                    AclOperation::DescribeConfigs,
                    PermissionType::Deny,
                ),
            ),
        ]
    }

    #[test]
    fn missing_file_is_empty_and_save_load_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let store = AclStore::new(dir.path());
        assert_eq!(store.load().unwrap(), vec![]);
        store.save(&sample()).unwrap();
        assert_eq!(store.load().unwrap(), sample());
        let text = fs::read_to_string(store.path()).unwrap();
        assert!(text.contains("\"TRANSACTIONAL_ID\""), "{text}");
        assert!(text.contains("\"DESCRIBE_CONFIGS\""), "{text}");
        store.save(&[]).unwrap();
        assert_eq!(store.load().unwrap(), vec![]);
        assert!(!dir.path().join(TMP_FILE).exists());
    }

    #[test]
    fn a_torn_temp_file_is_ignored_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = AclStore::new(dir.path());
        store.save(&sample()).unwrap();
        // A crash in the middle of the next save leaves half a temp file beside the old one.
        fs::write(
            dir.path().join(TMP_FILE),
            b"{\"version\":1,\"acls\":[{\"pat",
        )
        .unwrap();
        assert_eq!(store.load().unwrap(), sample());
        assert!(!dir.path().join(TMP_FILE).exists());
        // Also when the crash came before the first save ever completed.
        let fresh = tempfile::tempdir().unwrap();
        fs::write(fresh.path().join(TMP_FILE), b"garbage").unwrap();
        assert_eq!(AclStore::new(fresh.path()).load().unwrap(), vec![]);
    }

    #[test]
    fn unusable_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let store = AclStore::new(dir.path());
        fs::write(store.path(), b"{not json").unwrap();
        assert!(matches!(store.load(), Err(AclError::Corrupt { .. })));
        fs::write(store.path(), b"{\"version\":2,\"acls\":[]}").unwrap();
        let e = store.load().unwrap_err().to_string();
        assert!(e.contains("version 2"), "{e}");
        let mut bad = sample();
        bad[0].pattern.resource_type = ResourceType::Cluster;
        store.save(&bad).unwrap();
        let e = store.load().unwrap_err().to_string();
        assert!(e.contains("kafka-cluster"), "{e}");
    }
}
