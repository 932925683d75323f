//! `skiff hash-password`: prints a salted hash of a PLAIN password for
//! `sasl.plain.hashed.users`, reading the password from the first line of standard input
//! (never from the command line, where it would land in shell history and `ps`).

use std::io::BufRead;

use anyhow::{bail, Context};
use skiff_auth::password_hash::{hash_password, DEFAULT_HASH_ITERATIONS};
use skiff_auth::scram::ScramMechanism;

/// Reads the password, prints `<hash>` (or `<user>=<hash>` with a user) on stdout.
pub fn run(mechanism: &str, iterations: Option<u32>, user: Option<&str>) -> anyhow::Result<()> {
    let Some(mechanism) = ScramMechanism::from_name(mechanism) else {
        bail!("--mechanism {mechanism}: use SCRAM-SHA-256 or SCRAM-SHA-512");
    };
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the password from standard input")?;
    let password = line.trim_end_matches(['\r', '\n']);
    if password.is_empty() {
        bail!("no password on standard input (e.g. printf '%s\\n' \"$PASSWORD\" | skiff hash-password)");
    }
    let hash = hash_password(
        mechanism,
        password,
        iterations.unwrap_or(DEFAULT_HASH_ITERATIONS),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    match user {
        Some(user) => println!("{user}={hash}"),
        None => println!("{hash}"),
    }
    Ok(())
}
