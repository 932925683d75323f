//! One blocking Kafka protocol connection for the benchmarks that speak the protocol
//! themselves (share groups, fetch sessions): frames, correlation ids, and the bytes each
//! way. Every read and write has a timeout; an answer larger than [`MAX_FRAME`] is refused.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use bytes::{Buf, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// Largest answer read.
pub const MAX_FRAME: usize = 64 << 20;
/// Longest a read or write may block.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// One blocking connection with its correlation ids.
pub struct Conn {
    stream: TcpStream,
    correlation: i32,
    client_id: StrBytes,
    /// Bytes written and read, frames' size prefixes included.
    pub sent_bytes: u64,
    pub received_bytes: u64,
}

impl Conn {
    pub fn connect(bootstrap: &str) -> Result<Conn> {
        let addr = bootstrap.split(',').next().unwrap_or(bootstrap);
        let stream = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true).context("TCP_NODELAY")?;
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .context("socket read timeout")?;
        stream
            .set_write_timeout(Some(READ_TIMEOUT))
            .context("socket write timeout")?;
        Ok(Conn {
            stream,
            correlation: 0,
            client_id: StrBytes::from_static_str("skiff-bench"),
            sent_bytes: 0,
            received_bytes: 0,
        })
    }

    /// Sends `req` as `key` v`version` and decodes the answer, checking its correlation id.
    pub fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        req: &Req,
    ) -> Result<Resp> {
        self.correlation = self.correlation.wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(self.client_id.clone()));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, key.request_header_version(version))
            .with_context(|| format!("encoding the {key:?} header"))?;
        req.encode(&mut body, version)
            .with_context(|| format!("encoding {key:?} v{version}"))?;
        let len = i32::try_from(body.len()).context("request larger than 2 GiB")?;
        let mut frame = Vec::with_capacity(4 + body.len());
        frame.extend_from_slice(&len.to_be_bytes());
        frame.extend_from_slice(&body);
        self.stream
            .write_all(&frame)
            .with_context(|| format!("sending {key:?}"))?;
        self.sent_bytes += frame.len() as u64;

        let mut size = [0u8; 4];
        self.stream
            .read_exact(&mut size)
            .with_context(|| format!("reading the {key:?} answer's size"))?;
        let size = i32::from_be_bytes(size);
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| (4..=MAX_FRAME).contains(&s))
            .with_context(|| format!("{key:?} answer of {size} bytes is out of bounds"))?;
        let mut buf = vec![0u8; size];
        self.stream
            .read_exact(&mut buf)
            .with_context(|| format!("reading the {key:?} answer ({size} bytes)"))?;
        self.received_bytes += 4 + size as u64;
        let mut buf = bytes::Bytes::from(buf);
        let rh = ResponseHeader::decode(&mut buf, key.response_header_version(version))
            .with_context(|| format!("decoding the {key:?} answer's header"))?;
        ensure!(
            rh.correlation_id == self.correlation,
            "{key:?}: answer has correlation id {}, expected {}",
            rh.correlation_id,
            self.correlation
        );
        let resp = Resp::decode(&mut buf, version)
            .with_context(|| format!("decoding the {key:?} v{version} answer"))?;
        ensure!(
            !buf.has_remaining(),
            "{key:?}: {} bytes left after the answer",
            buf.remaining()
        );
        Ok(resp)
    }
}
