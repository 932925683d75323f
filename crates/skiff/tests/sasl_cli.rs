//! SASL from the command line: a broker with SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256/512),
//! SASL_SSL (SCRAM-SHA-512 over `skiff dev-certs` certificates) and PLAINTEXT listeners, and
//! Debian's kcat (librdkafka with SSL and SASL) producing and consuming over each; a PLAIN
//! user whose password is a `skiff hash-password` hash; a wrong password fails cleanly while
//! the broker keeps serving other clients.
//!
//! Skipped (with a message) when kcat is missing or built without SSL/SASL.
#![allow(clippy::unwrap_used)]

mod common;

use common::{dev_certs, free_port, kcat, run, skiff};
use std::process::Command;

fn kcat_has_sasl_and_ssl() -> bool {
    match Command::new("kcat").arg("-V").output() {
        Ok(out) => {
            let v = String::from_utf8_lossy(&out.stdout).to_string();
            v.contains("ssl") && v.contains("sasl_scram")
        }
        Err(_) => false,
    }
}

#[test]
fn hash_password_prints_a_usable_entry_and_needs_stdin() {
    let out = run(
        skiff().args(["hash-password", "--user", "erin"]),
        Some("erin-secret\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(line.starts_with("erin=SCRAM-SHA-512:salt="), "{line}");
    assert!(!line.contains("erin-secret"));
    let out = run(skiff().arg("hash-password"), Some(""));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no password"));
}

#[test]
fn kcat_over_sasl_plaintext_and_sasl_ssl() {
    if !kcat_has_sasl_and_ssl() {
        eprintln!("SKIPPED: kcat with SSL and SASL is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    dev_certs(&certs);
    let c = |f: &str| certs.join(f).display().to_string();
    let hashed = run(
        skiff().args(["hash-password", "--user", "erin"]),
        Some("erin-secret\n"),
    );
    let hashed = String::from_utf8_lossy(&hashed.stdout).trim().to_string();

    let (sasl, sasl_ssl, plain) = (free_port(), free_port(), free_port());
    let _broker = skiff_testkit::Broker::start_opts(
        skiff_testkit::Options::new()
            .set(
                "listeners",
                &format!(
                    "SASL_PLAINTEXT://127.0.0.1:{sasl},SASL_SSL://127.0.0.1:{sasl_ssl},PLAINTEXT://127.0.0.1:{plain}"
                ),
            )
            .set(
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
                "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            )
            .set(
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";",
            )
            .set("sasl.plain.hashed.users", &hashed)
            .set("listener.name.sasl_ssl.sasl.enabled.mechanisms", "SCRAM-SHA-512")
            .set(
                "sasl.scram.users",
                "SCRAM-SHA-256=[name=bob,password=bob-secret]\nSCRAM-SHA-512=[name=bob,password=bob-secret]",
            )
            .set("ssl.keystore.type", "PEM")
            .set("ssl.keystore.location", &c("server.pem"))
            .ready(skiff_testkit::Ready::LogLine(
                skiff_testkit::READY_LINE.to_string(),
            )),
    )
    .unwrap();
    let client =
        |port: u16, protocol: &str, mechanism: &str, user: &str, pw: &str, extra: &[&str]| {
            let mut v: Vec<String> = vec![
                "-b".into(),
                format!("127.0.0.1:{port}"),
                "-X".into(),
                format!("security.protocol={protocol}"),
                "-X".into(),
                format!("sasl.mechanisms={mechanism}"),
                "-X".into(),
                format!("sasl.username={user}"),
                "-X".into(),
                format!("sasl.password={pw}"),
            ];
            if protocol == "sasl_ssl" {
                v.extend(["-X".into(), format!("ssl.ca.location={}", c("ca.pem"))]);
            }
            v.extend(extra.iter().map(|s| s.to_string()));
            v
        };
    let cases = [
        (sasl, "sasl_plaintext", "PLAIN", "alice", "alice-secret"),
        (sasl, "sasl_plaintext", "PLAIN", "erin", "erin-secret"),
        (sasl, "sasl_plaintext", "SCRAM-SHA-256", "bob", "bob-secret"),
        (sasl, "sasl_plaintext", "SCRAM-SHA-512", "bob", "bob-secret"),
        (sasl_ssl, "sasl_ssl", "SCRAM-SHA-512", "bob", "bob-secret"),
    ];
    for (i, (port, protocol, mechanism, user, pw)) in cases.iter().enumerate() {
        let topic = format!("sasl-cli-{i}");
        let out = kcat(
            &client(*port, protocol, mechanism, user, pw, &["-P", "-t", &topic]),
            Some("one\ntwo\n"),
        );
        assert!(
            out.status.success(),
            "{mechanism} {protocol} produce: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = kcat(
            &client(
                *port,
                protocol,
                mechanism,
                user,
                pw,
                &["-C", "-t", &topic, "-o", "beginning", "-e", "-q"],
            ),
            None,
        );
        assert!(
            out.status.success(),
            "{mechanism} {protocol} consume: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "one\ntwo\n",
            "{mechanism} {protocol}"
        );
    }
    // A wrong password fails (kcat gives up), and the broker keeps serving others.
    let out = kcat(
        &client(
            sasl,
            "sasl_plaintext",
            "SCRAM-SHA-256",
            "bob",
            "wrong",
            &["-L", "-m", "5"],
        ),
        None,
    );
    assert!(!out.status.success(), "a wrong password must fail");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        err.contains("Authentication failed") || err.contains("SASL"),
        "{err}"
    );
    let out = kcat(
        &client(
            sasl,
            "sasl_plaintext",
            "PLAIN",
            "alice",
            "alice-secret",
            &["-L", "-m", "10"],
        ),
        None,
    );
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
