//! "Has the broker served a request yet?": a hand-written ApiVersions v0 round trip over a
//! plain TCP connection, used to time start-up to the first served request independently of
//! any client library's own connect/back-off logic.
//!
//! Owns: [`api_versions`] (one attempt) and [`wait_served`] (poll until served or deadline).
//! Thread-safe: no shared state. Writes nothing to disk. The response is untrusted bytes:
//! only its length prefix, correlation id and error code are read, all bounds-checked.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The correlation id every probe sends; the response must echo it.
const CORRELATION_ID: i32 = 0x5b1f;
/// Largest ApiVersions v0 response accepted (a few hundred bytes in practice).
const MAX_RESPONSE: usize = 64 * 1024;

/// The request bytes: size, api_key 18, version 0, correlation id, client id "skiff-bench".
fn request() -> Vec<u8> {
    let client = b"skiff-bench";
    let mut body = Vec::with_capacity(32);
    body.extend_from_slice(&18i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&CORRELATION_ID.to_be_bytes());
    body.extend_from_slice(&(client.len() as i16).to_be_bytes());
    body.extend_from_slice(client);
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// Checks a response body (without the size prefix): correlation id and error code 0.
fn check_response(body: &[u8]) -> Result<()> {
    let (Some(corr), Some(err)) = (body.get(0..4), body.get(4..6)) else {
        bail!("ApiVersions response too short ({} bytes)", body.len());
    };
    let corr = i32::from_be_bytes([corr[0], corr[1], corr[2], corr[3]]);
    let err = i16::from_be_bytes([err[0], err[1]]);
    if corr != CORRELATION_ID {
        bail!("ApiVersions response has correlation id {corr}, sent {CORRELATION_ID}");
    }
    if err != 0 {
        bail!("ApiVersions answered with error code {err}");
    }
    Ok(())
}

/// One ApiVersions v0 round trip; `Ok` only for a well-formed answer with error code 0.
pub fn api_versions(addr: SocketAddr, timeout: Duration) -> Result<()> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).context("connect")?;
    s.set_read_timeout(Some(timeout))
        .context("set_read_timeout")?;
    s.set_write_timeout(Some(timeout))
        .context("set_write_timeout")?;
    s.write_all(&request()).context("sending ApiVersions")?;
    let mut size = [0u8; 4];
    s.read_exact(&mut size)
        .context("reading the response size")?;
    let size = i32::from_be_bytes(size);
    let size = usize::try_from(size).ok().filter(|&n| n <= MAX_RESPONSE);
    let Some(size) = size else {
        bail!("ApiVersions response size out of range");
    };
    let mut body = vec![0u8; size];
    s.read_exact(&mut body).context("reading the response")?;
    check_response(&body)
}

/// Polls [`api_versions`] every few milliseconds until it succeeds; returns the instant of
/// success. `alive` is asked between attempts so a broker that died is reported at once.
pub fn wait_served(
    addr: SocketAddr,
    deadline: Instant,
    mut alive: impl FnMut() -> Result<()>,
) -> Result<Instant> {
    loop {
        alive()?;
        let err = match api_versions(addr, Duration::from_secs(5)) {
            Ok(()) => return Ok(Instant::now()),
            Err(e) => e,
        };
        if Instant::now() > deadline {
            bail!("no ApiVersions answer from {addr} before the deadline (last: {err:#})");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn request_has_the_v0_layout() {
        let r = request();
        assert_eq!(
            i32::from_be_bytes(r[0..4].try_into().unwrap()) as usize,
            r.len() - 4
        );
        assert_eq!(&r[4..8], &[0, 18, 0, 0]);
    }

    #[test]
    fn responses_are_checked() {
        let mut ok = CORRELATION_ID.to_be_bytes().to_vec();
        ok.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        assert!(check_response(&ok).is_ok());
        let mut bad = CORRELATION_ID.to_be_bytes().to_vec();
        bad.extend_from_slice(&[0, 35]);
        assert!(check_response(&bad).is_err());
        assert!(check_response(&[0, 0]).is_err());
    }

    #[test]
    fn a_fake_server_is_probed_end_to_end() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut req = [0u8; 25];
            s.read_exact(&mut req).unwrap();
            let mut resp = 10i32.to_be_bytes().to_vec();
            resp.extend_from_slice(&req[8..12]);
            resp.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
            s.write_all(&resp).unwrap();
        });
        let at = wait_served(addr, Instant::now() + Duration::from_secs(5), || Ok(())).unwrap();
        assert!(at.elapsed() < Duration::from_secs(5));
        t.join().unwrap();
    }
}
