//! Network tests: raw bytes over TCP to a real in-process server on port 0.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
    RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use skiff_broker::Broker;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

struct Server {
    addr: std::net::SocketAddr,
    _stop: watch::Sender<bool>,
    _dir: tempfile::TempDir,
    _broker: Arc<Broker>,
}

async fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let sets = vec![format!("log.dirs={}", dir.path().display())];
    let (config, _) = skiff_config::load(None, &sets, Vec::<(String, String)>::new()).unwrap();
    let broker = tokio::task::spawn_blocking(move || Broker::start(config))
        .await
        .unwrap()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = watch::channel(false);
    tokio::spawn(skiff_broker::serve(listener, broker.clone(), rx));
    Server {
        addr,
        _stop: stop,
        _dir: dir,
        _broker: broker,
    }
}

fn frame<R: Encodable>(key: ApiKey, version: i16, correlation_id: i32, body: &R) -> Bytes {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("net-test")));
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    header
        .encode(&mut buf, key.request_header_version(version))
        .unwrap();
    body.encode(&mut buf, version).unwrap();
    let size = i32::try_from(buf.len() - 4).unwrap();
    buf[..4].copy_from_slice(&size.to_be_bytes());
    buf.freeze()
}

async fn read_response(stream: &mut TcpStream) -> Option<Bytes> {
    let mut size = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut size))
        .await
        .ok()?
        .ok()?;
    let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(size)).ok()?];
    stream.read_exact(&mut body).await.ok()?;
    Some(Bytes::from(body))
}

/// True when the server closed the connection (EOF) within a few seconds.
async fn closed(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

#[tokio::test]
async fn api_versions_v3_has_no_trailing_tagged_fields_and_v0_works() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    for version in [0i16, 3] {
        s.write_all(&frame(
            ApiKey::ApiVersions,
            version,
            7,
            &ApiVersionsRequest::default(),
        ))
        .await
        .unwrap();
        let mut body = read_response(&mut s).await.unwrap();
        let header = ResponseHeader::decode(&mut body, 0).unwrap();
        assert_eq!(header.correlation_id, 7);
        let response = ApiVersionsResponse::decode(&mut body, version).unwrap();
        assert_eq!(response.error_code, 0);
        assert!(
            body.is_empty(),
            "v{version}: {} bytes left over",
            body.len()
        );
        let keys: Vec<i16> = response.api_keys.iter().map(|k| k.api_key).collect();
        for (key, _, _) in skiff_protocol::SUPPORTED {
            assert!(keys.contains(&(*key as i16)), "{key:?} not advertised");
        }
    }
}

#[tokio::test]
async fn api_versions_above_max_gets_v0_fallback() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    // v4 body layout is the newest the crate knows; announce v9.
    let mut f =
        BytesMut::from(&frame(ApiKey::ApiVersions, 3, 9, &ApiVersionsRequest::default())[..]);
    f[6..8].copy_from_slice(&9i16.to_be_bytes());
    s.write_all(&f).await.unwrap();
    let mut body = read_response(&mut s).await.unwrap();
    let header = ResponseHeader::decode(&mut body, 0).unwrap();
    assert_eq!(header.correlation_id, 9);
    let response = ApiVersionsResponse::decode(&mut body, 0).unwrap();
    assert_eq!(response.error_code, 35);
    assert!(!response.api_keys.is_empty());
}

#[tokio::test]
async fn oversized_and_negative_frames_close_the_connection() {
    let server = start().await;
    for size in [i32::MAX, -1, 104_857_601] {
        let mut s = TcpStream::connect(server.addr).await.unwrap();
        s.write_all(&size.to_be_bytes()).await.unwrap();
        assert!(closed(&mut s).await, "size {size} did not close");
    }
}

#[tokio::test]
async fn hostile_array_count_closes_connection_and_broker_survives() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    // Metadata v1: header then a topics array claiming i32::MAX entries.
    let mut f = BytesMut::new();
    f.put_i32(0);
    f.put_i16(ApiKey::Metadata as i16);
    f.put_i16(1);
    f.put_i32(1);
    f.put_i16(-1);
    f.put_i32(i32::MAX);
    let size = i32::try_from(f.len() - 4).unwrap();
    f[..4].copy_from_slice(&size.to_be_bytes());
    s.write_all(&f).await.unwrap();
    assert!(closed(&mut s).await);
    // Short header: 2 bytes.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&[0, 0, 0, 2, 0, 3]).await.unwrap();
    assert!(closed(&mut s).await);
    // Still serving.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&frame(
        ApiKey::ApiVersions,
        0,
        1,
        &ApiVersionsRequest::default(),
    ))
    .await
    .unwrap();
    assert!(read_response(&mut s).await.is_some());
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    let mut all = BytesMut::new();
    for cid in 0..20 {
        if cid % 2 == 0 {
            all.extend_from_slice(&frame(
                ApiKey::ApiVersions,
                3,
                cid,
                &ApiVersionsRequest::default(),
            ));
        } else {
            all.extend_from_slice(&frame(
                ApiKey::Metadata,
                12,
                cid,
                &MetadataRequest::default(),
            ));
        }
    }
    s.write_all(&all).await.unwrap();
    for cid in 0..20 {
        let mut body = read_response(&mut s).await.unwrap();
        let header_version = if cid % 2 == 0 { 0 } else { 1 };
        let header = ResponseHeader::decode(&mut body, header_version).unwrap();
        assert_eq!(header.correlation_id, cid);
        if cid % 2 == 1 {
            MetadataResponse::decode(&mut body, 12).unwrap();
        }
    }
}
