//! The configuration reference, `docs/configuration.md`, generated from the same tables the
//! broker runs with (`keys.rs`, `names.rs`, `topic.rs`, `group.rs`), so it cannot drift: a
//! test compares the file with [`configuration_reference`] and rewrites it when `SKIFF_BLESS=1`.
//!
//! Pure string building; no I/O.

use std::fmt::Write as _;

use crate::dynamic::{broker_key_dynamic, DynamicKey};
use crate::group::group_config_defs;
use crate::load::env_var_name;
use crate::names::{broker_config_names, BrokerConfigDef, KeyStatus};
use crate::topic::topic_config_defs;
use crate::types::ConfigType;

/// The command that regenerates `docs/configuration.md`.
pub const REGENERATE: &str = "SKIFF_BLESS=1 cargo test -p skiff-config configuration_doc";

const INTRO: &str = "\
# Configuration reference

Skiff takes Apache Kafka's broker config names, so a Kafka `server.properties` translates
line by line. They are read from three places, each overriding the one before:

1. the TOML file (`--config`, or `SKIFF_CONFIG`): keys under `[broker]`, topics to create at
   start as `[[topic]]` entries (`name`, `partitions`, `config`); see the commented example in
   [`config/skiff.toml`](../config/skiff.toml), which a test parses;
2. `--set key=value` on the command line;
3. environment variables `SKIFF_<KEY>`: the key upper-cased with `.` and `-` turned into `_`
   (`SKIFF_LOG_DIRS` sets `log.dirs`).

An unknown key in the file or in `--set` stops the broker with an error naming it (and the
closest known key); an unknown `SKIFF_*` variable is only a warning, since the environment
is shared with other programs. Values are checked with Kafka's rules and messages.
Kafka keys Skiff accepts but does not act on are listed in one warning at start.

*Dynamic* keys can be changed at runtime with AlterConfigs / IncrementalAlterConfigs (per
broker or as the cluster-wide `<default>`), and Skiff applies the change live; Skiff refuses a
dynamic change of any other key, even where Kafka would accept it.
";

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn default_cell(d: Option<&str>) -> String {
    match d {
        Some("") => "\"\"".to_string(),
        Some(v) => format!("`{}`", cell(v)),
        None => "(unset)".to_string(),
    }
}

fn kind(k: ConfigType) -> String {
    k.kafka_name().to_ascii_lowercase()
}

fn key_row(out: &mut String, d: &BrokerConfigDef) {
    let dynamic = if broker_key_dynamic(d.name) == DynamicKey::Applied {
        "yes"
    } else {
        "no"
    };
    let _ = writeln!(
        out,
        "| `{}` | {} | {} | {} | `{}` | {} |",
        d.name,
        kind(d.kind),
        default_cell(d.default),
        dynamic,
        env_var_name(d.name),
        cell(d.doc)
    );
}

/// The whole of `docs/configuration.md`.
pub fn configuration_reference() -> String {
    let mut out = format!(
        "_Generated from `crates/skiff-config` (`keys.rs`, `names.rs`, `topic.rs`, `group.rs`); \
         do not edit by hand: regenerate with `{REGENERATE}`._\n\n"
    );
    out.push_str(INTRO);
    let header = "| Key | Type | Default | Dynamic | Environment | What it does |\n\
                  |---|---|---|---|---|---|\n";
    let all = broker_config_names();

    out.push_str("\n## Broker keys Skiff acts on\n\n");
    out.push_str(header);
    for d in all.iter().filter(|d| d.status == KeyStatus::Implemented) {
        key_row(&mut out, d);
    }

    out.push_str("\n## Skiff-only broker keys\n\nKafka has no such keys.\n\n");
    out.push_str(header);
    for d in all.iter().filter(|d| d.status == KeyStatus::Skiff) {
        key_row(&mut out, d);
    }

    out.push_str(
        "\n## Topic configs\n\nSet per topic (CreateTopics, AlterConfigs, `[[topic]]` \
         `config`); a topic without its own value takes the broker key listed (the first one \
         set, in that order), else the default. Configs Skiff does not act on are accepted, \
         validated and described.\n\n\
         | Topic config | Type | Default | Broker keys | Acted on | What it does |\n\
         |---|---|---|---|---|---|\n",
    );
    for t in topic_config_defs() {
        let brokers: Vec<String> = t
            .broker_synonyms
            .iter()
            .map(|s| format!("`{}`", s.name))
            .collect();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            t.name,
            kind(t.kind),
            default_cell(Some(t.default)),
            if brokers.is_empty() {
                "-".to_string()
            } else {
                brokers.join(", ")
            },
            if t.supported { "yes" } else { "no" },
            cell(t.doc)
        );
    }

    out.push_str(
        "\n## Group configs\n\nSet per group with IncrementalAlterConfigs on a GROUP \
         resource; the default is the broker key's value. The keys marked settable are checked \
         against their broker bounds with Kafka's messages; the others are described with \
         Kafka's defaults and refused with the reason shown. Kafka's internal keys \
         (`streams.task.offset.interval.ms`, `streams.acceptable.recovery.lag`, \
         `streams.num.warmup.replicas`, `streams.assignor.offload.enable`) are described only \
         once a group sets them.\n\n\
         | Group config | Type | Broker key | Settable | What it does |\n\
         |---|---|---|---|---|\n",
    );
    for g in group_config_defs() {
        let _ = writeln!(
            out,
            "| `{}` | {} | `{}` | {} | {} |",
            g.name,
            kind(g.kind),
            g.broker_synonym,
            if g.refused.is_none() { "yes" } else { "no" },
            cell(g.refused.unwrap_or(g.doc))
        );
    }

    out.push_str(
        "\n## Kafka broker keys accepted but not acted on\n\nThese are valid Kafka 4.x keys \
         (replication, TLS/SASL, quotas, KRaft controller, remote storage, share groups, \
         metrics reporters, ...). Skiff checks their values, lists them in DescribeConfigs \
         with Kafka's defaults (the replication throttles only once set dynamically, as \
         Kafka does), and ignores them.\n\n\
         | Key | Type | Default | Note |\n|---|---|---|---|\n",
    );
    for d in all
        .iter()
        .filter(|d| matches!(d.status, KeyStatus::Recognised | KeyStatus::DynamicOnly))
    {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            d.name,
            kind(d.kind),
            default_cell(d.default),
            cell(d.doc)
        );
    }
    out
}
