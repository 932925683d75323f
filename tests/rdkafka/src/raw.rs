//! A tiny raw Kafka client for the end-to-end suites: size-prefixed frames over one blocking
//! `TcpStream`, requests and responses encoded with the `kafka-protocol` crate, and record
//! batches built and decoded with `skiff-records`. It exists for what a client library hides:
//! several batches in one Produce, bad CRCs, control batches, keyless records, exact
//! `record_errors`, raw batch headers (codec, empty batches), DeleteRecords.
//!
//! Owns: one connection ([`RawClient`]) and its correlation counter. Not thread-safe by design
//! (`&mut self` per call); each test opens its own client.
//!
//! Nothing is stored on disk. Wire format: `size i32 | request header | body` out,
//! `size i32 | response header | body` in (Kafka's framing).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, CreateTopicsResponse, DeleteRecordsRequest,
    DeleteRecordsResponse, FetchRequest, FetchResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, ListOffsetsRequest, ListOffsetsResponse, ProduceRequest,
    ProduceResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use skiff_records::{records, BatchHeader, Batches, TimestampType};

/// Upper bound for one response; a fetch asks for at most [`FETCH_MAX_BYTES`].
const MAX_RESPONSE: usize = 256 << 20;
/// Bytes asked for per partition by [`RawClient::fetch`].
pub const FETCH_MAX_BYTES: i32 = 32 << 20;
/// Cap on decompressed batch size when decoding fetched records.
const MAX_DECOMPRESSED: usize = 64 << 20;

/// ListOffsets timestamp for the log end offset.
pub const LATEST: i64 = -1;
/// ListOffsets timestamp for the log start offset.
pub const EARLIEST: i64 = -2;

/// One connection to the broker.
pub struct RawClient {
    stream: TcpStream,
    correlation: i32,
}

/// One record as a reader sees it: absolute offset and timestamp, key, value, headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRecord {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// One fetched batch: its header and its decoded records.
#[derive(Clone, Debug)]
pub struct RawBatch {
    pub header: BatchHeader,
    pub records: Vec<RawRecord>,
    /// Whole batch size in bytes (header + records section).
    pub size: usize,
}

/// One partition's fetch answer.
#[derive(Clone, Debug)]
pub struct FetchResult {
    pub error_code: i16,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub batches: Vec<RawBatch>,
}

impl RawClient {
    pub fn connect(bootstrap: &str) -> Result<RawClient> {
        let stream =
            TcpStream::connect(bootstrap).with_context(|| format!("connect {bootstrap}"))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .context("set_read_timeout")?;
        stream.set_nodelay(true).context("set_nodelay")?;
        Ok(RawClient {
            stream,
            correlation: 0,
        })
    }

    /// Sends one request and decodes its response; the whole body must be consumed.
    pub fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        req: &Req,
    ) -> Result<Resp> {
        self.correlation += 1;
        let correlation = self.correlation;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation)
            .with_client_id(Some(StrBytes::from_static_str("skiff-e2e-raw")));
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        header
            .encode(&mut buf, key.request_header_version(version))
            .context("encode request header")?;
        req.encode(&mut buf, version)
            .with_context(|| format!("encode {key:?} v{version}"))?;
        let size = i32::try_from(buf.len() - 4).context("request too large")?;
        buf[..4].copy_from_slice(&size.to_be_bytes());
        self.stream.write_all(&buf).context("raw write")?;
        let mut len = [0u8; 4];
        self.stream
            .read_exact(&mut len)
            .with_context(|| format!("reading the {key:?} response size"))?;
        let len = usize::try_from(i32::from_be_bytes(len)).context("negative response size")?;
        if len > MAX_RESPONSE {
            bail!("response size {len} is implausible");
        }
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body).context("raw read body")?;
        let mut body = Bytes::from(body);
        let rh = ResponseHeader::decode(&mut body, key.response_header_version(version))
            .context("decode response header")?;
        if rh.correlation_id != correlation {
            bail!("correlation id {} != {correlation}", rh.correlation_id);
        }
        let resp = Resp::decode(&mut body, version)
            .with_context(|| format!("decode {key:?} v{version} response"))?;
        if body.has_remaining() {
            bail!(
                "{} trailing bytes after {key:?} v{version}",
                body.remaining()
            );
        }
        Ok(resp)
    }

    /// Produce (acks=-1) of `records` (one or more concatenated batches, or any bytes) to one
    /// partition; returns that partition's response.
    pub fn produce(
        &mut self,
        version: i16,
        topic: &str,
        partition: i32,
        records: Vec<u8>,
    ) -> Result<PartitionProduceResponse> {
        let req = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(topic_name(topic))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(Bytes::from(records)))])]);
        let resp: ProduceResponse = self.call(ApiKey::Produce, version, &req)?;
        resp.responses
            .into_iter()
            .flat_map(|t| t.partition_responses)
            .find(|p| p.index == partition)
            .ok_or_else(|| anyhow!("Produce response has no partition {partition}"))
    }

    /// Produces one batch and fails unless the broker accepted it; returns its base offset.
    pub fn produce_ok(&mut self, topic: &str, partition: i32, batch: Vec<u8>) -> Result<i64> {
        let r = self.produce(9, topic, partition, batch)?;
        if r.error_code != 0 {
            bail!(
                "produce to {topic}/{partition} failed: error {} ({:?}, record_errors {:?})",
                r.error_code,
                r.error_message,
                r.record_errors
            );
        }
        Ok(r.base_offset)
    }

    /// One Fetch v12 (READ_UNCOMMITTED, no wait) at `offset`, decoding every whole batch.
    pub fn fetch(&mut self, topic: &str, partition: i32, offset: i64) -> Result<FetchResult> {
        let req = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(FETCH_MAX_BYTES)
            .with_isolation_level(0)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(partition)
                    .with_current_leader_epoch(-1)
                    .with_fetch_offset(offset)
                    .with_last_fetched_epoch(-1)
                    .with_log_start_offset(-1)
                    .with_partition_max_bytes(FETCH_MAX_BYTES)])]);
        let resp: FetchResponse = self.call(ApiKey::Fetch, 12, &req)?;
        if resp.error_code != 0 {
            bail!("Fetch top-level error {}", resp.error_code);
        }
        let p = resp
            .responses
            .into_iter()
            .flat_map(|t| t.partitions)
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| anyhow!("Fetch response has no partition {partition}"))?;
        let batches = match &p.records {
            Some(b) => decode_batches(b)?,
            None => Vec::new(),
        };
        Ok(FetchResult {
            error_code: p.error_code,
            high_watermark: p.high_watermark,
            log_start_offset: p.log_start_offset,
            batches,
        })
    }

    /// Every batch from `from` up to the high watermark (several fetches if needed).
    pub fn fetch_all_batches(
        &mut self,
        topic: &str,
        partition: i32,
        from: i64,
    ) -> Result<Vec<RawBatch>> {
        let mut out = Vec::new();
        let mut next = from;
        loop {
            let r = self.fetch(topic, partition, next)?;
            if r.error_code != 0 {
                bail!(
                    "fetch {topic}/{partition} at {next}: error {}",
                    r.error_code
                );
            }
            let Some(last) = r.batches.last() else {
                if next < r.high_watermark {
                    bail!(
                        "fetch at {next} returned nothing below HW {}",
                        r.high_watermark
                    );
                }
                return Ok(out);
            };
            let after = last.header.next_offset();
            if after <= next {
                bail!("fetch at {next} did not advance (last batch ends at {after})");
            }
            next = after;
            out.extend(r.batches);
            if next >= r.high_watermark {
                return Ok(out);
            }
        }
    }

    /// Every record from `from` up to the high watermark, in log order (offsets below `from`
    /// inside the first batch are dropped, as a consumer does).
    pub fn read_all(&mut self, topic: &str, partition: i32, from: i64) -> Result<Vec<RawRecord>> {
        Ok(self
            .fetch_all_batches(topic, partition, from)?
            .into_iter()
            .flat_map(|b| b.records)
            .filter(|r| r.offset >= from)
            .collect())
    }

    /// ListOffsets v7 for one partition: `(error_code, offset)`.
    pub fn list_offset(&mut self, topic: &str, partition: i32, ts: i64) -> Result<(i16, i64)> {
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(0)
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_current_leader_epoch(-1)
                    .with_timestamp(ts)])]);
        let resp: ListOffsetsResponse = self.call(ApiKey::ListOffsets, 7, &req)?;
        let p = resp
            .topics
            .into_iter()
            .flat_map(|t| t.partitions)
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| anyhow!("ListOffsets response has no partition {partition}"))?;
        Ok((p.error_code, p.offset))
    }

    /// ListOffsets that must succeed.
    pub fn offset(&mut self, topic: &str, partition: i32, ts: i64) -> Result<i64> {
        let (err, off) = self.list_offset(topic, partition, ts)?;
        if err != 0 {
            bail!("ListOffsets {topic}/{partition} ts {ts}: error {err}");
        }
        Ok(off)
    }

    /// CreateTopics v7 for one topic with configs: `(error_code, error_message)`.
    pub fn create_topic(
        &mut self,
        name: &str,
        partitions: i32,
        configs: &[(&str, &str)],
    ) -> Result<(i16, Option<String>)> {
        let req = CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(topic_name(name))
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, v)| {
                            CreatableTopicConfig::default()
                                .with_name(StrBytes::from_string(k.to_string()))
                                .with_value(Some(StrBytes::from_string(v.to_string())))
                        })
                        .collect(),
                )]);
        let resp: CreateTopicsResponse = self.call(ApiKey::CreateTopics, 7, &req)?;
        let t = resp
            .topics
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("CreateTopics response has no topic"))?;
        Ok((t.error_code, t.error_message.map(|m| m.to_string())))
    }

    /// IncrementalAlterConfigs v1 SET (`Some`) or DELETE (`None`) on one topic:
    /// `(error_code, error_message)`.
    pub fn alter_topic(
        &mut self,
        topic: &str,
        configs: &[(&str, Option<&str>)],
    ) -> Result<(i16, Option<String>)> {
        let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_string(topic.to_string()))
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, v)| {
                            AlterableConfig::default()
                                .with_name(StrBytes::from_string(k.to_string()))
                                .with_config_operation(if v.is_some() { 0 } else { 1 })
                                .with_value(v.map(|v| StrBytes::from_string(v.to_string())))
                        })
                        .collect(),
                ),
        ]);
        let resp: IncrementalAlterConfigsResponse =
            self.call(ApiKey::IncrementalAlterConfigs, 1, &req)?;
        let r = resp
            .responses
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("IncrementalAlterConfigs response has no resource"))?;
        Ok((r.error_code, r.error_message.map(|m| m.to_string())))
    }

    /// DeleteRecords v2 below `offset`: `(error_code, low_watermark)`.
    pub fn delete_records(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<(i16, i64)> {
        let req = DeleteRecordsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![DeleteRecordsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![DeleteRecordsPartition::default()
                    .with_partition_index(partition)
                    .with_offset(offset)])]);
        let resp: DeleteRecordsResponse = self.call(ApiKey::DeleteRecords, 2, &req)?;
        let p = resp
            .topics
            .into_iter()
            .flat_map(|t| t.partitions)
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| anyhow!("DeleteRecords response has no partition {partition}"))?;
        Ok((p.error_code, p.low_watermark))
    }
}

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Decodes the whole batches of a fetched records section; a torn last batch (the fetch size
/// limit cut it) is dropped, as clients do.
pub fn decode_batches(buf: &[u8]) -> Result<Vec<RawBatch>> {
    let mut out = Vec::new();
    for item in Batches::new(buf) {
        let (header, bytes) = item.map_err(|e| anyhow!("fetched batch does not frame: {e}"))?;
        if header.magic != 2 {
            bail!(
                "fetched batch at {} has magic {}",
                header.base_offset,
                header.magic
            );
        }
        let recs = records(bytes, MAX_DECOMPRESSED)
            .map_err(|e| anyhow!("batch at {} does not decode: {e}", header.base_offset))?;
        let append_time = header.timestamp_type() == TimestampType::LogAppendTime;
        let records = recs
            .into_iter()
            .map(|r| RawRecord {
                offset: header.base_offset + i64::from(r.offset_delta),
                timestamp: if append_time {
                    header.max_timestamp
                } else {
                    header.base_timestamp + r.timestamp_delta
                },
                key: r.key.map(|k| k.to_vec()),
                value: r.value.map(|v| v.to_vec()),
                headers: r
                    .headers
                    .into_iter()
                    .map(|(k, v)| (k.to_vec(), v.map(|v| v.to_vec())))
                    .collect(),
            })
            .collect();
        out.push(RawBatch {
            header,
            records,
            size: bytes.len(),
        });
    }
    Ok(out)
}

/// A legacy magic-1 message set with one record (for the "magic 1 in Produce v3+" check):
/// `offset i64 | size i32 | crc u32 | magic i8 | attributes i8 | timestamp i64 | key | value`.
pub fn magic1_message(timestamp: i64, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.push(1u8); // magic
    body.push(0u8); // attributes
    body.extend_from_slice(&timestamp.to_be_bytes());
    body.extend_from_slice(&(key.len() as i32).to_be_bytes());
    body.extend_from_slice(key);
    body.extend_from_slice(&(value.len() as i32).to_be_bytes());
    body.extend_from_slice(value);
    let crc = crc32_ieee(&body);
    let mut out = Vec::new();
    out.extend_from_slice(&0i64.to_be_bytes());
    out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// CRC-32 (IEEE, reflected 0xEDB88320), the checksum of legacy magic 0/1 messages.
fn crc32_ieee(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use skiff_records::{BatchBuilder, Compression};

    #[test]
    fn crc32_matches_the_reference_check_value() {
        assert_eq!(crc32_ieee(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn decode_batches_gives_absolute_offsets_and_timestamps() {
        let mut b = BatchBuilder::new(40, Compression::None);
        b.push(1000, Some(b"k"), None, &[]);
        b.push_at(3, 1005, None, Some(b""), &[(b"h", Some(b"x"))]);
        let mut buf = b.build().unwrap();
        let full = buf.len();
        buf.extend_from_slice(&[0u8; 10]); // torn tail
        let batches = decode_batches(&buf).unwrap();
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].size, full);
        let r = &batches[0].records;
        assert_eq!(r[0].offset, 40);
        assert_eq!(r[0].value, None);
        assert_eq!(r[1].offset, 43);
        assert_eq!(r[1].timestamp, 1005);
        assert_eq!(r[1].value, Some(Vec::new()));
        assert_eq!(r[1].headers, vec![(b"h".to_vec(), Some(b"x".to_vec()))]);
    }

    #[test]
    fn magic1_message_frames_itself() {
        let m = magic1_message(5, b"k", b"v");
        let size = i32::from_be_bytes(m[8..12].try_into().unwrap()) as usize;
        assert_eq!(m.len(), 12 + size);
        assert_eq!(m[16], 1);
    }
}
