//! A user error at start-up (bad config key, bad value, unreadable config file, bad log
//! filter) is one clear line on stderr and a non-zero exit, even with `RUST_BACKTRACE` set (as
//! on many developer machines and in CI): no Rust backtrace, which is for bugs.
#![allow(clippy::unwrap_used)]

use std::process::Output;

fn skiff(args: &[&str], env: &[(&str, &str)]) -> Output {
    // The kit's command drops the caller's SKIFF_* variables (config for the broker).
    let mut cmd = skiff_testkit::command(env!("CARGO_BIN_EXE_skiff"));
    cmd.args(args).env("RUST_BACKTRACE", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn assert_one_line_error(out: &Output, wanted: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected, got:\n{stderr}");
    assert!(lines[0].starts_with("skiff: error: "), "{stderr}");
    assert!(lines[0].contains(wanted), "{wanted:?} not in {stderr}");
    assert!(!stderr.contains("backtrace"), "{stderr}");
}

#[test]
fn config_typo_is_one_line_without_backtrace() {
    let out = skiff(&["--set", "num.partitons=3"], &[]);
    assert_one_line_error(
        &out,
        "unknown config key `num.partitons` (--set num.partitons); did you mean `num.partitions`?",
    );
}

#[test]
fn bad_env_value_is_one_line_without_backtrace() {
    let out = skiff(&[], &[("SKIFF_NUM_PARTITIONS", "many")]);
    assert_one_line_error(
        &out,
        "invalid value for `num.partitions` (environment variable SKIFF_NUM_PARTITIONS)",
    );
}

#[test]
fn missing_config_file_is_one_line_with_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.toml");
    let out = skiff(&["--config", path.to_str().unwrap()], &[]);
    assert_one_line_error(&out, "cannot read config file");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("No such file or directory"), "{stderr}");
}

#[test]
fn unusable_data_dir_is_one_line_without_backtrace() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let set = format!("log.dirs={}", file.display());
    let out = skiff(
        &["--set", &set, "--set", "listeners=PLAINTEXT://127.0.0.1:0"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("skiff: error: "), "{stderr}");
    assert!(last.contains("a-file"), "{stderr}");
    assert!(!stderr.contains("backtrace"), "{stderr}");
}
