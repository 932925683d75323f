//! A minimal blocking HTTP/1.1 client for Skiff's HTTP API (`skiff.http.listener`): one
//! request per connection (`Connection: close`, as the server does), chunked bodies decoded,
//! plus a small JSON reader for the answers, so the suites need no HTTP or JSON crate.
//!
//! Every read has a timeout; a server that never answers fails the call.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

/// How long one HTTP exchange may take.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(20);

/// An answer: status, headers (names lower-cased) and the decoded body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Json {
        Json::parse(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: body is not JSON ({e}): {}",
                self.status, self.body
            )
        })
    }

    /// The `error.code` of a JSON error answer (empty when there is none).
    pub fn error_code(&self) -> String {
        Json::parse(&self.body)
            .ok()
            .and_then(|j| j.get("error").get("code").as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// One request; `auth` is a ready `Authorization` header value.
pub fn request(addr: &str, method: &str, path: &str, auth: Option<&str>) -> Result<Reply> {
    // Right after a (re)start the HTTP listener may not be bound yet: retry the connect.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut s = loop {
        match TcpStream::connect(addr) {
            Ok(s) => break s,
            Err(e) if Instant::now() > deadline => {
                return Err(e).with_context(|| format!("connect {addr}"))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    s.set_read_timeout(Some(HTTP_TIMEOUT))?;
    s.set_write_timeout(Some(HTTP_TIMEOUT))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(a) = auth {
        head.push_str(&format!("Authorization: {a}\r\n"));
    }
    if method == "POST" {
        head.push_str("Content-Length: 0\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .with_context(|| format!("{method} {path}: reading the answer"))?;
    parse_reply(&raw).with_context(|| format!("{method} {path}"))
}

pub fn get(addr: &str, path: &str) -> Reply {
    request(addr, "GET", path, None).unwrap()
}

pub fn post(addr: &str, path: &str) -> Reply {
    request(addr, "POST", path, None).unwrap()
}

/// `GET path` until it answers something other than `503 loading` (an index being built).
pub fn get_ready(addr: &str, path: &str, auth: Option<&str>) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = request(addr, "GET", path, auth).unwrap();
        if r.status != 503 || r.error_code() != "loading" {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "{path}: still 503 loading after 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn parse_reply(raw: &[u8]) -> Result<Reply> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| anyhow!("no end of head in {} bytes", raw.len()))?;
    let head = std::str::from_utf8(&raw[..split])?;
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .ok_or_else(|| anyhow!("bad status line {status_line:?}"))?
        .parse()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok(Reply {
        status,
        headers,
        body: String::from_utf8(body).context("body is not UTF-8")?,
    })
}

fn dechunk(mut b: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| anyhow!("chunked body cut short (no size line)"))?;
        let size_txt = std::str::from_utf8(&b[..eol])?;
        let size_txt = size_txt.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_txt, 16)
            .with_context(|| format!("bad chunk size {size_txt:?}"))?;
        b = &b[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if b.len() < size + 2 {
            bail!("chunked body cut short (chunk of {size}, {} left)", b.len());
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

/// A JSON value (numbers as f64 and, when integral, as i64 too).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(BTreeMap<String, Json>),
}

static NULL: Json = Json::Null;

impl Json {
    pub fn parse(s: &str) -> Result<Json> {
        let mut p = Parser {
            b: s.as_bytes(),
            i: 0,
        };
        let v = p.value()?;
        p.ws();
        if p.i != p.b.len() {
            bail!("trailing characters at {}", p.i);
        }
        Ok(v)
    }

    /// The member `k` of an object, `Null` otherwise.
    pub fn get(&self, k: &str) -> &Json {
        match self {
            Json::Obj(m) => m.get(k).unwrap_or(&NULL),
            _ => &NULL,
        }
    }

    pub fn at(&self, i: usize) -> &Json {
        match self {
            Json::Arr(a) => a.get(i).unwrap_or(&NULL),
            _ => &NULL,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            #[allow(clippy::cast_possible_truncation)]
            Json::Num(n) if n.fract() == 0.0 => Some(*n as i64),
            _ => None,
        }
    }

    pub fn as_arr(&self) -> &[Json] {
        match self {
            Json::Arr(a) => a,
            _ => &[],
        }
    }

    pub fn as_obj(&self) -> Option<&BTreeMap<String, Json>> {
        match self {
            Json::Obj(m) => Some(m),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        self.ws();
        if self.peek() != Some(c) {
            bail!("expected {:?} at {}", c as char, self.i);
        }
        self.i += 1;
        Ok(())
    }

    fn lit(&mut self, word: &str, v: Json) -> Result<Json> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            bail!("bad literal at {}", self.i)
        }
    }

    fn value(&mut self) -> Result<Json> {
        self.ws();
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let mut m = BTreeMap::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(m));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.expect(b':')?;
                    let v = self.value()?;
                    m.insert(k, v);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(m));
                        }
                        _ => bail!("bad object at {}", self.i),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Json::Arr(a));
                }
                loop {
                    a.push(self.value()?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(a));
                        }
                        _ => bail!("bad array at {}", self.i),
                    }
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') => self.lit("true", Json::Bool(true)),
            Some(b'f') => self.lit("false", Json::Bool(false)),
            Some(b'n') => self.lit("null", Json::Null),
            Some(_) => {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || b"+-.eE".contains(&c))
                {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.b[start..self.i])?;
                Ok(Json::Num(
                    t.parse().with_context(|| format!("bad number {t:?}"))?,
                ))
            }
            None => bail!("unexpected end"),
        }
    }

    fn string(&mut self) -> Result<String> {
        if self.peek() != Some(b'"') {
            bail!("expected a string at {}", self.i);
        }
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = self.peek().ok_or_else(|| anyhow!("unterminated string"))?;
            self.i += 1;
            match c {
                b'"' => return Ok(String::from_utf8(out)?),
                b'\\' => {
                    let e = self.peek().ok_or_else(|| anyhow!("bad escape"))?;
                    self.i += 1;
                    let ch = match e {
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'u' => {
                            let hex = std::str::from_utf8(
                                self.b
                                    .get(self.i..self.i + 4)
                                    .ok_or_else(|| anyhow!("bad \\u"))?,
                            )?;
                            self.i += 4;
                            let mut cp = u32::from_str_radix(hex, 16)?;
                            if (0xD800..0xDC00).contains(&cp)
                                && self.b[self.i..].starts_with(b"\\u")
                            {
                                let lo = u32::from_str_radix(
                                    std::str::from_utf8(&self.b[self.i + 2..self.i + 6])?,
                                    16,
                                )?;
                                self.i += 6;
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            }
                            char::from_u32(cp).unwrap_or('\u{FFFD}')
                        }
                        other => other as char,
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => out.push(c),
            }
        }
    }
}
