//! A small HTTP/1.1 client over hyper for the HTTP API tests (`http_api.rs`,
//! `http_api_auth.rs`), and the API served in-process on 127.0.0.1:0.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{HeaderMap, AUTHORIZATION};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use skiff_broker::Broker;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A broker with the HTTP API served on 127.0.0.1:0.
pub struct Api {
    pub addr: SocketAddr,
    pub _stop: watch::Sender<bool>,
}

pub async fn serve_api(broker: Arc<Broker>) -> Api {
    let (router, tls) = skiff_broker::http::from_config(broker.clone()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = watch::channel(false);
    tokio::spawn(skiff_broker::http::server::serve(
        listener,
        "skiff.http.listener",
        router,
        tls,
        rx,
    ));
    Api { addr, _stop: stop }
}

/// A response as the tests look at it.
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn error_code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap().to_string()
    }

    pub fn lines(&self) -> Vec<Value> {
        std::str::from_utf8(&self.body)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

pub async fn send_over<S>(io: S, method: &str, path: &str, auth: Option<&str>) -> Reply
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost");
    if let Some(a) = auth {
        request = request.header(AUTHORIZATION, a);
    }
    let response = sender
        .send_request(request.body(Empty::<Bytes>::new()).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    Reply {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

pub async fn send(api: &Api, method: &str, path: &str, auth: Option<&str>) -> Reply {
    let stream = TcpStream::connect(api.addr).await.unwrap();
    send_over(stream, method, path, auth).await
}

pub async fn get(api: &Api, path: &str) -> Reply {
    send(api, "GET", path, None).await
}

/// `GET path` until it answers something other than 503 (a key index still being built), or
/// 20 s have passed; the last reply either way.
pub async fn get_ready(api: &Api, path: &str) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = get(api, path).await;
        if r.status != 503 || Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn basic(user: &str, password: &str) -> String {
    let creds = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {creds}")
}

/// POSTs an `application/x-www-form-urlencoded` body as a console form would: with an
/// `Origin` of the same host (`same_origin`) or of another site, and optional credentials.
pub async fn post_form(
    api: &Api,
    path: &str,
    fields: &[(&str, &str)],
    same_origin: bool,
    auth: Option<&str>,
) -> Reply {
    let stream = TcpStream::connect(api.addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let body: String = fields
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let origin = if same_origin {
        "http://localhost"
    } else {
        "http://evil.example"
    };
    let mut request = hyper::Request::builder()
        .method("POST")
        .uri(path)
        .header("host", "localhost")
        .header("origin", origin)
        .header("content-type", "application/x-www-form-urlencoded");
    if let Some(a) = auth {
        request = request.header(AUTHORIZATION, a);
    }
    let response = sender
        .send_request(
            request
                .body(http_body_util::Full::new(Bytes::from(body)))
                .unwrap(),
        )
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    Reply {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'*') {
            out.push(char::from(b));
        } else if b == b' ' {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Reply {
    /// The body as text (console pages).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}
