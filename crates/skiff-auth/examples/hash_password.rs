//! Prints a salted PLAIN password hash for Skiff's config, reading the password from the first
//! line of standard input (never from the command line, where it would land in shell history):
//!
//! ```text
//! printf '%s\n' 'alice-secret' | cargo run -p skiff-auth --example hash_password
//! printf '%s\n' 'alice-secret' | cargo run -p skiff-auth --example hash_password -- SCRAM-SHA-256 16384
//! ```
//!
//! Arguments (optional): the mechanism (SCRAM-SHA-512 by default) and the iteration count
//! (8192 by default, 4096..=16384). `skiff hash-password` does the same.

use std::io::BufRead;

use skiff_auth::password_hash::{hash_password, DEFAULT_HASH_ITERATIONS};
use skiff_auth::scram::ScramMechanism;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mechanism = match args.next() {
        Some(name) => ScramMechanism::from_name(&name).ok_or(format!(
            "unknown mechanism '{name}': use SCRAM-SHA-256 or SCRAM-SHA-512"
        ))?,
        None => ScramMechanism::Sha512,
    };
    let iterations = match args.next() {
        Some(n) => n
            .parse::<u32>()
            .map_err(|_| format!("'{n}' is not an iteration count"))?,
        None => DEFAULT_HASH_ITERATIONS,
    };
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let password = line.trim_end_matches(['\r', '\n']);
    if password.is_empty() {
        return Err("no password on standard input".into());
    }
    println!("{}", hash_password(mechanism, password, iterations)?);
    Ok(())
}
