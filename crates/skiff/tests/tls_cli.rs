//! TLS from the command line: `skiff dev-certs`, a broker with an SSL (mutual TLS) and a
//! PLAINTEXT listener, and kcat (librdkafka with OpenSSL) producing and consuming over SSL
//! with the client certificate; without one it is refused while the broker keeps serving.
//! Start-up errors for SASL listeners and unusable TLS files are one clear line.
//!
//! The kcat test is skipped (with a message) when kcat is missing or built without SSL.
#![allow(clippy::unwrap_used)]

mod common;

use common::{dev_certs, free_port, kcat, skiff};
use std::process::{Command, Output};

fn kcat_has_ssl() -> bool {
    match Command::new("kcat").arg("-V").output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout).contains("ssl"),
        Err(_) => false,
    }
}

#[test]
fn dev_certs_then_kcat_produces_and_consumes_over_mutual_tls() {
    if !kcat_has_ssl() {
        eprintln!("SKIPPED: kcat with SSL is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    let out = dev_certs(&certs);
    assert!(String::from_utf8_lossy(&out.stderr).contains("DO NOT USE IN PRODUCTION"));
    let lines = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(lines.contains("ssl.keystore.location"), "{lines}");

    let (ssl, plain) = (free_port(), free_port());
    let c = |f: &str| certs.join(f).display().to_string();
    // The kit's PLAINTEXT listener is replaced by ours (SSL + PLAINTEXT on ports chosen here).
    let _broker = skiff_testkit::Broker::start_opts(
        skiff_testkit::Options::new()
            .set(
                "listeners",
                &format!("SSL://127.0.0.1:{ssl},PLAINTEXT://127.0.0.1:{plain}"),
            )
            .set("ssl.keystore.type", "PEM")
            .set("ssl.keystore.location", &c("server.pem"))
            .set("ssl.truststore.type", "PEM")
            .set("ssl.truststore.location", &c("ca.pem"))
            .set("ssl.client.auth", "required")
            .ready(skiff_testkit::Ready::LogLine(
                skiff_testkit::READY_LINE.to_string(),
            )),
    )
    .unwrap();
    let tls = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "-b",
            &format!("127.0.0.1:{ssl}"),
            "-X",
            "security.protocol=ssl",
            "-X",
            &format!("ssl.ca.location={}", c("ca.pem")),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cert = format!("ssl.certificate.location={}", c("client.pem"));
    let key = format!("ssl.key.location={}", c("client-key.pem"));
    let mtls = |extra: &[&str]| {
        let mut v = tls(&["-X", &cert, "-X", &key]);
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let out = kcat(&mtls(&["-P", "-t", "tls-cli"]), Some("one\ntwo\nthree\n"));
    assert!(
        out.status.success(),
        "produce: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kcat(
        &mtls(&["-C", "-t", "tls-cli", "-o", "beginning", "-e", "-q"]),
        None,
    );
    assert!(
        out.status.success(),
        "consume: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "one\ntwo\nthree\n");
    // Without a client certificate: refused.
    let out = kcat(&tls(&["-L", "-m", "5"]), None);
    assert!(
        !out.status.success(),
        "no client certificate must be refused"
    );
    // The broker keeps serving, on both listeners.
    let out = kcat(&mtls(&["-L", "-m", "10"]), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kcat(
        &["-b".into(), format!("127.0.0.1:{plain}"), "-L".into()],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn one_line_error(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

#[test]
fn sasl_listeners_and_unusable_tls_files_fail_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("log.dirs={}", dir.path().display());
    let out = skiff()
        .args(["--set", &data, "--set", "listeners=SASL_SSL://127.0.0.1:0"])
        .output()
        .unwrap();
    let e = one_line_error(&out);
    assert!(
        e.contains("sasl.enabled.mechanisms") && e.contains("GSSAPI"),
        "{e}"
    );
    let out = skiff()
        .args([
            "--set",
            &data,
            "--set",
            "listeners=SSL://127.0.0.1:0",
            "--set",
            "ssl.keystore.type=PEM",
            "--set",
            "ssl.keystore.location=/nonexistent/server.pem",
        ])
        .output()
        .unwrap();
    let e = one_line_error(&out);
    assert!(e.contains("/nonexistent/server.pem"), "{e}");
    let out = skiff()
        .args([
            "--set",
            &data,
            "--set",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT",
            "--set",
            "listeners=SSL://127.0.0.1:0",
        ])
        .output()
        .unwrap();
    let e = one_line_error(&out);
    assert!(
        e.contains("listener.security.protocol.map does not define"),
        "{e}"
    );
}
