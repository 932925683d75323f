//! A minimal HTTP/1.1 client over `std::net::TcpStream` for Skiff's HTTP API (snapshot,
//! key lookup, `/metrics`): one GET per connection, because the API answers every request
//! with `Connection: close` (docs/http-api.md §1). Plain HTTP on loopback only; no TLS, no
//! redirects, no keep-alive, which is all the table rows need and keeps an HTTP stack out of
//! the bench's dependencies.
//!
//! Owns: writing the request, parsing the status line and headers, and de-framing the body
//! (chunked, `Content-Length`, or until the server closes). The body goes to a callback in
//! pieces as it arrives, so a snapshot of any size is read in constant memory.
//!
//! Thread-safety: free functions; each call owns its connection. Every read and write has a
//! socket timeout and the whole exchange a deadline, so a stuck server cannot hang the bench.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Longest wait for any single socket read or write.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response head accepted (the server's own limit for requests is 8 KiB).
const MAX_HEAD: usize = 16 * 1024;

/// How the response body is delimited.
enum Framing {
    Chunked,
    Length(u64),
    Close,
}

/// GETs `path` from `addr` and passes the body to `on_body` piece by piece; returns the
/// status. Fails when the exchange is not over by `deadline`.
pub fn get_streaming(
    addr: SocketAddr,
    path: &str,
    deadline: Instant,
    mut on_body: impl FnMut(&[u8]) -> Result<()>,
) -> Result<u16> {
    let timeout = deadline
        .saturating_duration_since(Instant::now())
        .clamp(Duration::from_millis(1), IO_TIMEOUT);
    let stream = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("connecting to http://{addr}"))?;
    stream.set_nodelay(true).context("TCP_NODELAY")?;
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .context("SO_RCVTIMEO")?;
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .context("SO_SNDTIMEO")?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    (&stream)
        .write_all(request.as_bytes())
        .with_context(|| format!("sending GET {path}"))?;
    let mut r = BufReader::with_capacity(256 * 1024, &stream);
    let (status, framing) = read_head(&mut r).with_context(|| format!("GET {path}"))?;
    let check = || {
        if Instant::now() > deadline {
            bail!("GET {path}: the body was not read before the deadline");
        }
        Ok(())
    };
    match framing {
        Framing::Chunked => loop {
            check()?;
            let mut line = String::new();
            read_line(&mut r, &mut line)?;
            let size = line.split(';').next().unwrap_or("").trim();
            let size = u64::from_str_radix(size, 16)
                .with_context(|| format!("bad chunk size line {line:?}"))?;
            if size == 0 {
                // Trailers (none expected) end with an empty line.
                loop {
                    line.clear();
                    read_line(&mut r, &mut line)?;
                    if line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            copy_exact(&mut r, size, &mut on_body)?;
            line.clear();
            read_line(&mut r, &mut line)?;
            if !line.trim().is_empty() {
                bail!("chunk not followed by CRLF");
            }
        },
        Framing::Length(n) => copy_exact(&mut r, n, &mut on_body)?,
        Framing::Close => loop {
            check()?;
            let buf = r.fill_buf().context("reading the body")?;
            if buf.is_empty() {
                break;
            }
            let n = buf.len();
            on_body(buf)?;
            r.consume(n);
        },
    }
    // Wait for the server's close, so TIME_WAIT stays on the server's side of the loopback
    // connection and thousands of lookups do not use up the client's ephemeral ports.
    let mut rest = [0u8; 64];
    while r.read(&mut rest).map(|n| n > 0).unwrap_or(false) {}
    Ok(status)
}

/// GETs `path` and returns the status and the whole body.
pub fn get(addr: SocketAddr, path: &str, deadline: Instant) -> Result<(u16, Vec<u8>)> {
    let mut body = Vec::new();
    let status = get_streaming(addr, path, deadline, |b| {
        body.extend_from_slice(b);
        Ok(())
    })?;
    Ok((status, body))
}

/// Waits until `addr` accepts TCP connections (the HTTP listener may bind after the Kafka
/// listener the broker's readiness probe uses).
pub fn wait_listening(addr: SocketAddr, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the HTTP listener {addr} did not accept connections within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_line(r: &mut impl BufRead, line: &mut String) -> Result<()> {
    let n = r
        .read_line(line)
        .context("reading a line of the response")?;
    if n == 0 {
        bail!("connection closed in the middle of the response");
    }
    Ok(())
}

fn read_head(r: &mut impl BufRead) -> Result<(u16, Framing)> {
    let mut line = String::new();
    read_line(r, &mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .with_context(|| format!("bad status line {line:?}"))?;
    let mut framing = Framing::Close;
    let mut seen = line.len();
    loop {
        line.clear();
        read_line(r, &mut line)?;
        seen += line.len();
        if seen > MAX_HEAD {
            bail!("response head over {MAX_HEAD} bytes");
        }
        let l = line.trim_end();
        if l.is_empty() {
            return Ok((status, framing));
        }
        let Some((name, value)) = l.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding")
            && value.to_ascii_lowercase().contains("chunked")
        {
            framing = Framing::Chunked;
        } else if name.eq_ignore_ascii_case("content-length")
            && !matches!(framing, Framing::Chunked)
        {
            framing = Framing::Length(value.parse().context("bad Content-Length")?);
        }
    }
}

fn copy_exact(
    r: &mut impl BufRead,
    mut n: u64,
    on_body: &mut impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    while n > 0 {
        let buf = r.fill_buf().context("reading the body")?;
        if buf.is_empty() {
            bail!("connection closed with {n} body bytes missing");
        }
        let take = buf.len().min(usize::try_from(n).unwrap_or(usize::MAX));
        on_body(&buf[..take])?;
        r.consume(take);
        n -= take as u64;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Serves one canned response to one connection.
    fn serve(resp: &'static [u8]) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).unwrap();
            s.write_all(resp).unwrap();
        });
        addr
    }

    #[test]
    fn chunked_and_length_bodies_are_deframed() {
        let deadline = Instant::now() + Duration::from_secs(10);
        let a = serve(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nab\nc\r\n3;x=1\r\nd\ne\r\n0\r\n\r\n");
        assert_eq!(get(a, "/", deadline).unwrap(), (200, b"ab\ncd\ne".to_vec()));
        let a = serve(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\n\r\nokEXTRA");
        assert_eq!(get(a, "/", deadline).unwrap(), (503, b"ok".to_vec()));
        let a = serve(b"HTTP/1.1 200 OK\r\n\r\nto the end");
        assert_eq!(
            get(a, "/", deadline).unwrap(),
            (200, b"to the end".to_vec())
        );
        let a = serve(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nshort");
        assert!(get(a, "/", deadline).is_err());
    }
}
