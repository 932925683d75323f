//! The process control of [`Broker`], checked with small shell scripts standing in for the
//! binary (the real binary is covered by the suites that use this kit).
#![allow(clippy::unwrap_used)]

use super::*;
use std::os::unix::fs::PermissionsExt;
use std::sync::OnceLock;

/// Every script is written once, before any test spawns: writing an executable while
/// another thread forks can make its exec fail with ETXTBSY.
fn script(name: &str) -> PathBuf {
    static DIR: OnceLock<TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let scripts = [
            // Ready by log line; SIGTERM ends it (the shell's default action).
            (
                "ready",
                "echo \"$@\"; echo 'skiff is ready' >&2; exec sleep 60",
            ),
            // Fails at start with a message.
            ("fails", "echo 'boom: bad config' >&2; exit 3"),
            // Its first start finds the listener's port taken; later ones are ready.
            (
                "busy-once",
                "echo \"$@\"; d=$(echo \"$@\" | sed -n 's/.*log.dirs=\\([^ ]*\\).*/\\1/p'); \
                 if [ -e \"$d/tried\" ]; then echo 'skiff is ready' >&2; exec sleep 60; fi; \
                 touch \"$d/tried\"; echo 'binding listener: Address already in use (os error 98)' >&2; exit 1",
            ),
            // Never ready; ignores SIGTERM.
            ("stuck", "trap '' TERM; while :; do sleep 1; done"),
        ];
        for (name, body) in scripts {
            let path = dir.path().join(name);
            fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    });
    dir.path().join(name)
}

fn opts(name: &str) -> Options {
    Options::new()
        .bin(script(name))
        .ready(Ready::LogLine(READY_LINE.to_string()))
        .start_timeout(Duration::from_secs(5))
}

/// What free_port promises: a real port below the ephemeral range (where no outgoing
/// connection's source port can land), and never the same one twice in a process.
#[test]
fn free_ports_are_real_below_the_ephemeral_range_and_never_repeat_in_a_process() {
    let ports: Vec<u16> = (0..200).map(|_| free_port().unwrap()).collect();
    let (lo, hi) = super::ports_below_ephemeral_range();
    if hi > lo {
        assert!(ports.iter().all(|p| (lo..hi).contains(p)), "{ports:?}");
    } else {
        assert!(ports.iter().all(|p| *p != 0), "{ports:?}");
    }
    let mut distinct = ports.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), ports.len(), "a port was handed out twice");
}

#[test]
fn missing_binary_is_a_clear_error() {
    let err = Broker::start_opts(Options::new().bin("/nonexistent/skiff"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cargo build -p skiff"), "{err}");
}

#[test]
fn last_run_is_the_text_after_the_last_marker() {
    let logs = format!("{RUN_MARKER} a =====\none\n{RUN_MARKER} b =====\ntwo\nthree\n");
    assert_eq!(last_run(&logs), "two\nthree\n");
    assert_eq!(last_run("no marker"), "no marker");
}

#[test]
fn start_passes_listener_data_dir_and_settings_then_stop_and_restart() {
    let mut b = Broker::start_opts(opts("ready").set("node.id", "7")).unwrap();
    assert!(b.is_running());
    let run = b.last_run_logs();
    let listener = format!("--set listeners=PLAINTEXT://127.0.0.1:{}", b.port());
    assert!(run.contains(&listener), "{run}");
    let data = format!("--set log.dirs={}", b.data_dir().display());
    assert!(run.contains(&data) && b.data_dir().is_dir(), "{run}");
    assert!(run.contains("--set node.id=7"), "{run}");
    let st = b.stop().unwrap();
    assert!(!st.success(), "sleep ends by the signal: {st}");
    assert!(!b.is_running());
    let port = b.port();
    b.restart().unwrap();
    assert_eq!(b.port(), port);
    assert_eq!(b.logs().matches(RUN_MARKER).count(), 2);
    b.kill9().unwrap();
    assert!(!b.is_running());
    assert!(
        b.kill9().is_err(),
        "a stopped broker cannot be killed again"
    );
}

#[test]
fn caller_data_dir_is_used_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::start_opts(opts("ready").data_dir(dir.path())).unwrap();
    assert_eq!(b.data_dir(), dir.path());
    drop(b);
    assert!(dir.path().is_dir());
}

#[test]
fn exit_during_start_reports_the_output() {
    let err = Broker::start_opts(opts("fails")).err().unwrap().to_string();
    assert!(err.contains("exited during start"), "{err}");
    assert!(err.contains("boom: bad config"), "{err}");
}

#[test]
fn a_first_start_whose_port_is_taken_moves_to_another_port() {
    let b = Broker::start_opts(opts("busy-once")).unwrap();
    let logs = b.logs();
    assert_eq!(logs.matches(RUN_MARKER).count(), 2, "{logs}");
    let ports: Vec<&str> = logs
        .split("listeners=PLAINTEXT://127.0.0.1:")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    assert_eq!(ports.len(), 2, "{logs}");
    assert_ne!(ports[0], ports[1], "the second start must use another port");
    assert_eq!(ports[1], b.port().to_string());
    assert!(logs.contains(ADDR_IN_USE), "{logs}");
}

#[test]
fn start_timeout_kills_the_process_and_says_what_it_waited_for() {
    let started = Instant::now();
    let err = Broker::start_opts(opts("stuck").start_timeout(Duration::from_millis(300)))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("did not log \"skiff is ready\""), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn drop_kills_the_process() {
    let b = Broker::start_opts(opts("ready")).unwrap();
    let pid = b.pid().unwrap();
    drop(b);
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}
