//! Raw Kafka frames over one TCP connection, with kafka-protocol's message types: what the
//! tests that talk to the real binary without a client library share.
//!
//! Every read has a timeout, so a broker that never answers fails the test instead of hanging.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// How long one answer may take: a ShareFetch waits at most its `MaxWaitMs`, an
/// acknowledgement or an admin change waits for one group-commit flush; the margin is for a
/// loaded 2-core machine.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

pub fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One connection; requests go one at a time.
pub struct Conn {
    stream: TcpStream,
    correlation: i32,
}

impl Conn {
    pub fn connect(bootstrap: &str) -> Conn {
        let stream = TcpStream::connect(bootstrap).unwrap();
        stream.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
        Conn {
            stream,
            correlation: 0,
        }
    }

    /// Sends `body` as `key` at `version` and decodes the whole answer.
    pub fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        body: &Req,
    ) -> Resp {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(s("skiff-test")));
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        header
            .encode(&mut buf, key.request_header_version(version))
            .unwrap();
        body.encode(&mut buf, version).unwrap();
        let size = i32::try_from(buf.len() - 4).unwrap();
        buf[..4].copy_from_slice(&size.to_be_bytes());
        self.stream.write_all(&buf).unwrap();
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).unwrap();
        let mut frame = vec![0u8; usize::try_from(i32::from_be_bytes(size)).unwrap()];
        self.stream.read_exact(&mut frame).unwrap();
        let mut frame = Bytes::from(frame);
        let header =
            ResponseHeader::decode(&mut frame, key.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation, "{key:?}");
        let answer = Resp::decode(&mut frame, version).unwrap();
        assert_eq!(frame.remaining(), 0, "{key:?} answer has trailing bytes");
        answer
    }
}
