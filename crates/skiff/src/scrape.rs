//! A one-shot HTTP/1.1 client for `GET /metrics` on a broker's `metrics.listener`, with
//! errors that say what is wrong: nothing listening, a Kafka port given instead of the
//! metrics port, or an HTTP server that is not Skiff.
//!
//! Blocking std sockets with connect/read/write timeouts; the response is capped at
//! [`MAX_RESPONSE`]. No state.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

/// Larger than any scrape of a broker with tens of thousands of partitions.
const MAX_RESPONSE: u64 = 256 << 20;

/// Fetches `http://{addr}/metrics` and returns the body.
pub fn fetch_metrics(addr: &str, timeout: Duration) -> Result<String> {
    let hint = format!(
        "is the broker running with `metrics.listener = \"{addr}\"` in its [broker] config?"
    );
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .with_context(|| format!("`{addr}` is not a HOST:PORT address"))?
        .collect();
    let mut last = None;
    let mut stream = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let mut stream = match (stream, last) {
        (Some(s), _) => s,
        (None, Some(e)) => bail!("cannot reach the metrics listener at {addr}: {e}; {hint}"),
        (None, None) => bail!("`{addr}` resolves to no address"),
    };
    stream
        .set_read_timeout(Some(timeout))
        .context("set_read_timeout")?;
    stream
        .set_write_timeout(Some(timeout))
        .context("set_write_timeout")?;
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .with_context(|| format!("sending the request to {addr}"))?;
    let mut raw = Vec::new();
    let read = stream.take(MAX_RESPONSE).read_to_end(&mut raw);
    if raw.is_empty() {
        let why = read.err().map(|e| format!(" ({e})")).unwrap_or_default();
        bail!(
            "{addr} closed the connection without an HTTP answer{why}: that is probably a Kafka \
             listener, not the metrics listener; {hint}"
        );
    }
    if let Err(e) = read {
        bail!("reading the response from {addr}: {e}");
    }
    body_of(&raw).map_err(|e| anyhow!("{addr}: {e}"))
}

/// Checks the status line and framing of a complete HTTP/1.x response; returns its body.
pub fn body_of(raw: &[u8]) -> Result<String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            anyhow!("the answer is not HTTP (no header end); is this the metrics listener?")
        })?;
    let head = std::str::from_utf8(raw.get(..end).unwrap_or_default())
        .map_err(|_| anyhow!("the answer is not HTTP (head is not text)"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        bail!("bad HTTP status line {status_line:?}");
    };
    if !version.starts_with("HTTP/1.") {
        bail!("the answer is not HTTP/1.x ({status_line:?}); is this the metrics listener?");
    }
    match code {
        "200" => {}
        "404" => {
            bail!("GET /metrics answered 404: this HTTP server is not a Skiff metrics listener")
        }
        other => bail!("GET /metrics answered {other} ({status_line})"),
    }
    let mut length = None;
    for h in lines {
        if let Some((k, v)) = h.split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            if k == "transfer-encoding" && !v.trim().eq_ignore_ascii_case("identity") {
                bail!("chunked responses are not supported; is this a Skiff metrics listener?");
            }
            if k == "content-length" {
                length = Some(
                    v.trim()
                        .parse::<usize>()
                        .map_err(|_| anyhow!("bad Content-Length {v:?}"))?,
                );
            }
        }
    }
    let body = raw.get(end + 4..).unwrap_or_default();
    let body = match length {
        Some(n) => body
            .get(..n)
            .ok_or_else(|| anyhow!("response truncated: {} of {n} body bytes", body.len()))?,
        None => body,
    };
    String::from_utf8(body.to_vec()).map_err(|_| anyhow!("the metrics are not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_and_status_checks() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nx 1\nextra";
        assert_eq!(body_of(ok).unwrap(), "x 1\n");
        let e = body_of(b"HTTP/1.1 404 Not Found\r\n\r\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a Skiff metrics listener"), "{e}");
        let e = body_of(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nx")
            .unwrap_err()
            .to_string();
        assert!(e.contains("truncated"), "{e}");
        assert!(body_of(b"\x00\x00\x00\x10garbage").is_err());
        assert!(body_of(b"SSH-2.0\r\n\r\n").is_err());
    }

    #[test]
    fn nothing_listening_is_a_clear_error() {
        // Bind then drop: the port is (almost certainly) closed now.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let e = fetch_metrics(&addr, Duration::from_secs(2))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot reach the metrics listener"), "{e}");
        assert!(e.contains("metrics.listener"), "{e}");
        let e = fetch_metrics("no-port", Duration::from_secs(2))
            .unwrap_err()
            .to_string();
        assert!(e.contains("HOST:PORT"), "{e}");
    }
}
