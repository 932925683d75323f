//! The metrics HTTP listener (`metrics.listener`): a deliberately small HTTP/1.1 server that
//! answers `GET /metrics` with Prometheus text, 404 for other paths, 405 for other methods on
//! `/metrics`, 400 for a malformed request head and 431 for one over [`MAX_HEAD`].
//!
//! One request per connection (`Connection: close`), so there is no keep-alive state to get
//! wrong; Prometheus opens a connection per scrape interval anyway. Hand-written rather than a
//! framework: it serves one read-only resource, and this keeps the broker's dependency tree
//! (and its attack surface) unchanged.
//!
//! Thread safety: each connection is its own task; rendering runs on a blocking thread.
//! Concurrency is bounded by [`MAX_SCRAPES`]; every read and write has a deadline.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tracing::{debug, info};

use super::text::CONTENT_TYPE;
use crate::broker::Broker;
use crate::net::listener::accept_bounded;

/// Largest request head accepted: a scraper's GET is a few hundred bytes.
pub const MAX_HEAD: usize = 8 * 1024;
/// Scrapes served at once; more wait in the accept queue.
const MAX_SCRAPES: usize = 16;
/// Time a client has to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Time to write the response (a scrape of thousands of partitions is a few MB).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    Metrics,
    NotFound,
    MethodNotAllowed,
    BadRequest(&'static str),
}

/// Routes a complete request head (request line and headers, without the body).
pub fn route(head: &[u8]) -> Route {
    let Ok(head) = std::str::from_utf8(head) else {
        return Route::BadRequest("request head is not UTF-8");
    };
    let line = head.split("\r\n").next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Route::BadRequest("request line is not METHOD TARGET VERSION");
    };
    if !version.starts_with("HTTP/1.") {
        return Route::BadRequest("only HTTP/1.x is spoken here");
    }
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Route::BadRequest("bad method");
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    if path != "/metrics" {
        return Route::NotFound;
    }
    if method != "GET" {
        return Route::MethodNotAllowed;
    }
    Route::Metrics
}

/// Position just past the blank line ending the head, if the buffer holds it.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Serves until `shutdown` turns true.
pub async fn serve(listener: TcpListener, broker: Arc<Broker>, shutdown: watch::Receiver<bool>) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "metrics listening (GET /metrics)");
    }
    let accept = "metrics accept failed";
    accept_bounded(
        listener,
        crate::net::quotas::ConnectionQuotas::bounded(MAX_SCRAPES),
        shutdown,
        accept,
        move |stream, peer| {
            let broker = broker.clone();
            async move {
                if let Err(e) = handle(stream, &broker).await {
                    debug!(%peer, error = %e, "metrics connection ended");
                }
            }
        },
    )
    .await;
}

async fn handle(mut stream: TcpStream, broker: &Arc<Broker>) -> std::io::Result<()> {
    let head = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await;
    let (status, body) = match head {
        Err(_) => return Ok(()), // too slow: just close
        Ok(Err(e)) => return Err(e),
        Ok(Ok(None)) => (431, "request head too large\n".to_string()),
        Ok(Ok(Some(head))) => match route(&head) {
            Route::Metrics => {
                let b = broker.clone();
                match crate::dispatch::blocking(move || super::render::render(&b)).await {
                    Ok(text) => (200, text),
                    Err(e) => (500, format!("{e}\n")),
                }
            }
            Route::NotFound => (404, "not found; metrics are at /metrics\n".to_string()),
            Route::MethodNotAllowed => (405, "only GET is allowed\n".to_string()),
            Route::BadRequest(why) => (400, format!("{why}\n")),
        },
    };
    let response = response(status, &body);
    tokio::time::timeout(WRITE_TIMEOUT, async {
        stream.write_all(&response).await?;
        stream.shutdown().await
    })
    .await
    .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "metrics write timed out"))?
}

/// Reads until the end of the request head; `None` when it exceeds [`MAX_HEAD`]. A client
/// that closes early is an error.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed before the end of the request head",
            ));
        }
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        if let Some(end) = head_end(&buf) {
            buf.truncate(end);
            return Ok(Some(buf));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

fn response(status: u16, body: &str) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    };
    let content_type = if status == 200 {
        CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    let allow = if status == 405 { "Allow: GET\r\n" } else { "" };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let r = |s: &str| route(s.as_bytes());
        assert_eq!(
            r("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Route::Metrics
        );
        assert_eq!(r("GET /metrics?name[]=x HTTP/1.0\r\n\r\n"), Route::Metrics);
        assert_eq!(r("GET / HTTP/1.1\r\n\r\n"), Route::NotFound);
        assert_eq!(r("POST /other HTTP/1.1\r\n\r\n"), Route::NotFound);
        assert_eq!(r("POST /metrics HTTP/1.1\r\n\r\n"), Route::MethodNotAllowed);
        assert_eq!(r("HEAD /metrics HTTP/1.1\r\n\r\n"), Route::MethodNotAllowed);
        assert!(matches!(r("GET /metrics\r\n\r\n"), Route::BadRequest(_)));
        assert!(matches!(
            r("GET /metrics HTTP/2\r\n\r\n"),
            Route::BadRequest(_)
        ));
        assert!(matches!(
            r("get /metrics HTTP/1.1\r\n\r\n"),
            Route::BadRequest(_)
        ));
        assert!(matches!(
            route(b"GET /\xff HTTP/1.1\r\n\r\n"),
            Route::BadRequest(_)
        ));
        assert!(matches!(r(""), Route::BadRequest(_)));
    }

    #[test]
    fn head_end_and_responses() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nbody"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
        let r = String::from_utf8(response(405, "no\n")).unwrap();
        assert!(r.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "{r}");
        assert!(r.contains("Allow: GET\r\n") && r.contains("Content-Length: 3\r\n"));
        assert!(r.ends_with("\r\n\r\nno\n"));
        let ok = String::from_utf8(response(200, "x 1\n")).unwrap();
        assert!(ok.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    }
}
