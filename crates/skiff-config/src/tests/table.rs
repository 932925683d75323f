//! The key table itself: every key marked implemented is read by another crate (the guard),
//! `docs/configuration.md` is what the table generates, defaults parse and agree with the
//! struct, and the two tables (`keys.rs`, `names.rs`) do not overlap.

use std::path::Path;

use super::*;
use crate::names::KeyStatus;
use crate::types::{parse_value, Validator};

/// The non-test source of every crate but skiff-config: `crates/*/src/**/*.rs`, each file cut
/// at its first `#[cfg(test)]` (unit tests sit at the end of a file and do not count as the
/// broker acting on a key).
fn other_crates_sources() -> Vec<(String, String)> {
    fn collect(dir: &Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                collect(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
                out.push((path.display().to_string(), code));
            }
        }
    }
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        if dir.file_name().is_some_and(|n| n != "skiff-config") {
            collect(&dir.join("src"), &mut out);
        }
    }
    out
}

/// `ident` used as a field or method (`.ident`) or called as a function (`ident(`), as a whole
/// word.
fn uses(text: &str, ident: &str) -> bool {
    text.match_indices(ident).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + ident.len()..].chars().next();
        let whole = !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_');
        whole && (before == Some('.') || after == Some('('))
    })
}

#[test]
fn guard_matches_reads_and_calls_only() {
    assert!(uses("let x = cfg.node_id;", "node_id"));
    assert!(uses(
        "validate_group_configs(&o, &b)",
        "validate_group_configs"
    ));
    assert!(!uses("cfg.node_id_x", "node_id"));
    assert!(!uses("BrokerConfig { node_id: 1 }", "node_id"));
    assert!(!uses("a.xnode_id", "node_id"));
}

#[test]
fn implemented_keys_are_read_outside_skiff_config() {
    let sources = other_crates_sources();
    assert!(
        sources.len() > 20,
        "found only {} source files of other crates",
        sources.len()
    );
    let mut unread = Vec::new();
    for d in broker_config_names().iter().filter(|d| d.implemented()) {
        let read = d
            .reads
            .iter()
            .any(|r| sources.iter().any(|(_, text)| uses(text, r)));
        if !read {
            unread.push(format!("{} (reads: {:?})", d.name, d.reads));
        }
    }
    assert!(
        unread.is_empty(),
        "keys marked implemented in crates/skiff-config/src/keys.rs that no other crate \
         reads: {unread:?}. Wire them, or mark them `Recognised` (accepted, not acted on) \
         with an honest doc line."
    );
    // And the guard can fail: a name used nowhere is reported.
    assert!(!sources.iter().any(|(_, t)| uses(t, "no_such_config_field")));
}

#[test]
fn keys_not_acted_on_name_no_reads_and_are_not_live() {
    for d in broker_config_names().iter().filter(|d| !d.implemented()) {
        assert!(d.reads.is_empty() || d.field.is_some(), "{}", d.name);
        assert!(!d.live, "{}", d.name);
    }
    for d in broker_config_names().iter().filter(|d| d.implemented()) {
        assert!(!d.reads.is_empty(), "{}", d.name);
        assert!(!d.doc.is_empty(), "{} has no doc line", d.name);
    }
}

#[test]
fn the_two_tables_do_not_overlap() {
    let keys: Vec<&str> = crate::keys::KEYS.iter().map(|d| d.name).collect();
    let all = broker_config_names();
    assert_eq!(
        all.len(),
        all.iter()
            .map(|d| d.name)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        "a key is declared twice"
    );
    // Every key Skiff acts on is declared in keys.rs, not among the accepted-only keys.
    for d in all.iter().filter(|d| d.implemented()) {
        assert!(keys.contains(&d.name), "{} is not in keys.rs", d.name);
    }
}

#[test]
fn every_scalar_default_parses_and_passes_its_validator() {
    for d in crate::keys::KEYS {
        let Some(default) = d.default else { continue };
        let v = crate::broker::broker_validator(d.name);
        if let Err(e) = parse_value(d.name, d.kind, default, v) {
            panic!("default of {}: {}", d.name, e.message);
        }
        assert!(parse_value(d.name, d.kind, default, Validator::None).is_ok());
    }
}

#[test]
fn setting_every_key_to_its_default_changes_nothing() {
    let sets: Vec<String> = crate::keys::KEYS
        .iter()
        // broker.id's Kafka default -1 means "take node.id"; Skiff refuses it when set.
        .filter(|d| d.name != "broker.id")
        .filter_map(|d| d.default.map(|v| format!("{}={v}", d.name)))
        .collect();
    assert!(sets.len() > 60, "{}", sets.len());
    let (mut cfg, _) = load_str("", Path::new("defaults.toml"), &sets, no_env()).unwrap();
    cfg.explicit.clear();
    assert_eq!(cfg, BrokerConfig::default());
}

#[test]
fn dynamic_keys_are_implemented_and_live() {
    for d in broker_config_names() {
        if broker_key_dynamic(d.name) == DynamicKey::Applied {
            assert!(d.live && d.status == KeyStatus::Implemented, "{}", d.name);
        }
    }
}

#[test]
fn configuration_doc_matches_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let want = configuration_reference();
    if std::env::var_os("SKIFF_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/configuration.md differs from what the key tables generate; regenerate it with \
         `{REGENERATE}`"
    );
    assert!(want.lines().next().unwrap().contains(REGENERATE));
    for d in broker_config_names() {
        assert!(want.contains(&format!("| `{}` |", d.name)), "{}", d.name);
    }
}

#[test]
fn typed_defaults_are_parsed_exactly() {
    let d = BrokerConfig::default();
    assert_eq!(d.node_id, 1);
    assert_eq!(d.message_max_bytes, 1_048_588);
    assert_eq!(d.max_connections, i32::MAX);
    assert_eq!(d.log_flush_scheduler_interval_ms, i64::MAX);
    assert_eq!(d.log_cleaner_io_max_bytes_per_second, f64::MAX);
    assert_eq!(d.log_cleaner_io_buffer_load_factor, 0.9);
    assert_eq!(d.producer_id_expiration_ms, 86_400_000);
    assert_eq!(d.default_replication_factor, 1);
    assert!(d.transaction_partition_verification_enable);
    assert_eq!(d.listeners[0].to_string(), "PLAINTEXT://127.0.0.1:9092");
    assert_eq!(d.advertised_listeners, d.listeners);
    assert_eq!(d.log_dirs, vec![PathBuf::from("./data")]);
    assert_eq!(
        (d.cluster_id.clone(), d.metrics_listener.clone()),
        (None, None)
    );
}
