//! A one-shot HTTP/1.1 client for a broker's HTTP listeners: `GET /metrics` on
//! `metrics.listener` ([`fetch_metrics`]) and the JSON routes of `skiff.http.listener`
//! ([`send`], used by `skiff compact`), over plain TCP or TLS, with errors that say what is
//! wrong: nothing listening, a Kafka port given instead of an HTTP one, or an HTTP server
//! that is not Skiff.
//!
//! Blocking std sockets with connect/read/write timeouts; one request per connection
//! (`Connection: close`); the response is capped at [`MAX_RESPONSE`]; chunked answers are
//! refused (Skiff's metrics and JSON answers carry a length). No state.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

/// Larger than any scrape of a broker with tens of thousands of partitions.
const MAX_RESPONSE: u64 = 256 << 20;

/// Fetches `http://{addr}/metrics` and returns the body.
pub fn fetch_metrics(addr: &str, timeout: Duration) -> Result<String> {
    let hint = format!(
        "is the broker running with `metrics.listener = \"{addr}\"` in its [broker] config?"
    );
    let mut stream = connect(addr, timeout, "the metrics listener", &hint)?;
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .with_context(|| format!("sending the request to {addr}"))?;
    let raw = read_answer(&mut stream, addr, "the metrics listener", &hint)?;
    body_of(&raw).map_err(|e| anyhow!("{addr}: {e}"))
}

/// TLS for [`send`]: the CA that signed the listener's certificate and the name to check.
pub struct Tls {
    config: Arc<rustls::ClientConfig>,
    server_name: rustls::pki_types::ServerName<'static>,
}

impl Tls {
    /// Trusts the PEM certificates of `ca_file`; checks the server's certificate against the
    /// host part of `addr`.
    pub fn new(ca_file: &Path, addr: &str) -> Result<Tls> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::CertificateDer;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(ca_file)
            .with_context(|| format!("reading CA file {}", ca_file.display()))?
        {
            let cert = cert.with_context(|| format!("CA file {}", ca_file.display()))?;
            roots
                .add(cert)
                .with_context(|| format!("CA file {}", ca_file.display()))?;
        }
        if roots.is_empty() {
            bail!("CA file {} holds no certificate", ca_file.display());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS setup")?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let host = addr
            .rsplit_once(':')
            .map_or(addr, |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let server_name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|_| anyhow!("`{host}` is not a host name or address for TLS"))?;
        Ok(Tls {
            config: Arc::new(config),
            server_name,
        })
    }
}

/// A complete answer of [`send`].
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Sends `method path` to the HTTP API at `addr` (with `tls` when given, and an
/// `Authorization` header when `authorization` is) and returns the answer, whatever its
/// status.
pub fn send(
    addr: &str,
    tls: Option<&Tls>,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    timeout: Duration,
) -> Result<Answer> {
    let hint = format!("is the broker running with `skiff.http.listener = \"{addr}\"`?");
    let stream = connect(addr, timeout, "the HTTP API", &hint)?;
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let raw = match tls {
        None => {
            let mut stream = stream;
            stream
                .write_all(request.as_bytes())
                .with_context(|| format!("sending the request to {addr}"))?;
            read_answer(&mut stream, addr, "the HTTP API", &hint)?
        }
        Some(tls) => {
            let conn = rustls::ClientConnection::new(tls.config.clone(), tls.server_name.clone())
                .context("TLS setup")?;
            let mut stream = rustls::StreamOwned::new(conn, stream);
            stream
                .write_all(request.as_bytes())
                .with_context(|| format!("TLS with {addr}"))?;
            read_answer(&mut stream, addr, "the HTTP API", &hint)?
        }
    };
    let (status, _, body) = split(&raw).map_err(|e| anyhow!("{addr}: {e}"))?;
    Ok(Answer {
        status,
        body: body.to_vec(),
    })
}

/// Connects to the first address of `addr` that answers, with read and write timeouts.
fn connect(addr: &str, timeout: Duration, what: &str, hint: &str) -> Result<TcpStream> {
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
    let stream = match (stream, last) {
        (Some(s), _) => s,
        (None, Some(e)) => bail!("cannot reach {what} at {addr}: {e}; {hint}"),
        (None, None) => bail!("`{addr}` resolves to no address"),
    };
    stream
        .set_read_timeout(Some(timeout))
        .context("set_read_timeout")?;
    stream
        .set_write_timeout(Some(timeout))
        .context("set_write_timeout")?;
    Ok(stream)
}

/// Reads the whole answer (the server closes after it), at most [`MAX_RESPONSE`] bytes.
fn read_answer(stream: &mut impl Read, addr: &str, what: &str, hint: &str) -> Result<Vec<u8>> {
    let mut raw = Vec::new();
    let read = stream.take(MAX_RESPONSE).read_to_end(&mut raw);
    if raw.is_empty() {
        let why = read.err().map(|e| format!(" ({e})")).unwrap_or_default();
        bail!(
            "{addr} closed the connection without an HTTP answer{why}: that is probably a Kafka \
             listener, not {what}; {hint}"
        );
    }
    if let Err(e) = read {
        bail!("reading the response from {addr}: {e}");
    }
    Ok(raw)
}

/// Checks the status line and framing of a complete HTTP/1.x response: its status code,
/// status line and body.
fn split(raw: &[u8]) -> Result<(u16, &str, &[u8])> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            anyhow!("the answer is not HTTP (no header end); is this a Skiff HTTP listener?")
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
        bail!("the answer is not HTTP/1.x ({status_line:?}); is this a Skiff HTTP listener?");
    }
    let code: u16 = code
        .parse()
        .map_err(|_| anyhow!("bad HTTP status line {status_line:?}"))?;
    let mut length = None;
    for h in lines {
        if let Some((k, v)) = h.split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            if k == "transfer-encoding" && !v.trim().eq_ignore_ascii_case("identity") {
                bail!("chunked responses are not supported; is this a Skiff HTTP listener?");
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
    Ok((code, status_line, body))
}

/// The body of a complete `GET /metrics` answer, which must be a 200 with UTF-8 text.
pub fn body_of(raw: &[u8]) -> Result<String> {
    let (code, status_line, body) = split(raw)?;
    match code {
        200 => {}
        404 => {
            bail!("GET /metrics answered 404: this HTTP server is not a Skiff metrics listener")
        }
        other => bail!("GET /metrics answered {other} ({status_line})"),
    }
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
