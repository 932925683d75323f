//! What the command-line tests share: the `skiff` binary with a clean environment, a free
//! loopback port, kcat runs bounded by `timeout`, raw Kafka frames ([`frames`]) and a
//! share group client over them ([`share_client`]).
#![allow(clippy::unwrap_used, dead_code)]

pub mod frames;
pub mod share_client;

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The `skiff` binary, without the caller's `SKIFF_*` variables (they would override the
/// test's settings).
pub fn skiff() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skiff"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SKIFF_") {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// A free loopback port outside the ephemeral range (see [`skiff_testkit::free_port`]).
pub fn free_port() -> u16 {
    skiff_testkit::free_port().unwrap()
}

/// Runs `cmd` to its end with `stdin` (if any) written and closed, capturing its output.
pub fn run(cmd: &mut Command, stdin: Option<&str>) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// kcat with `args`, killed after 30 s so a hung client fails the test instead of stalling it.
pub fn kcat(args: &[String], stdin: Option<&str>) -> Output {
    run(
        Command::new("timeout").arg("30").arg("kcat").args(args),
        stdin,
    )
}

/// `skiff dev-certs` into `dir` for localhost and 127.0.0.1; fails the test if it fails.
pub fn dev_certs(dir: &std::path::Path) -> Output {
    let out = skiff()
        .args(["dev-certs", "--dir"])
        .arg(dir)
        .args(["--host", "localhost", "--host", "127.0.0.1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
