//! Encodings: compressed batches with headers, binary keys and values in base64, and keys
//! placed by both librdkafka partitioners (escaped keys too).

use crate::tables_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_decode_any_record_of_compressed_batches_with_headers() {
    use rdkafka::message::{Header, OwnedHeaders};
    let (b, http) = start(&[]);
    let topic = table_topic(&b, "tables-codecs", 1, &[]).await;
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let p = producer(
            &b,
            &[
                ("acks", "all"),
                ("compression.type", codec),
                ("linger.ms", "50"),
                ("batch.num.messages", "1000"),
            ],
        )
        .unwrap();
        // 40 records sent together, so they share a (compressed) batch or a few; values
        // long and repetitive enough to compress.
        let mut futs = Vec::new();
        for i in 0..40 {
            let key = format!("{codec}-{i}");
            let value = format!("{codec}-value-{i}-{}", "abc".repeat(20 + i));
            let headers = OwnedHeaders::new()
                .insert(Header {
                    key: "i",
                    value: Some(&i.to_string()),
                })
                .insert(Header::<&str> {
                    key: "none",
                    value: None,
                });
            let rec = FutureRecord::to(&topic)
                .partition(0)
                .key(&key)
                .payload(&value)
                .headers(headers);
            let f = p.send_result(rec).map_err(|(e, _)| e).unwrap();
            futs.push((key, value, i, f));
        }
        for (key, value, i, f) in futs {
            let d = await_delivery(f).await;
            let r = get_ready(&http, &key_path(&topic, &key, "partition=0"), None);
            assert_lookup(&r, &key, Some((0, d.offset, &value)), codec);
            let h = r.json().get("headers").clone();
            assert_eq!(h.as_arr().len(), 2, "{codec}: {}", r.body);
            assert_eq!(h.at(0).get("key").as_str(), Some("i"));
            assert_eq!(h.at(0).get("value").as_str(), Some(i.to_string().as_str()));
            assert_eq!(h.at(1).get("key").as_str(), Some("none"));
            assert!(h.at(1).get("value").is_null(), "{codec}: {}", r.body);
        }
    }
    // The snapshot holds the same 200 records.
    let snap = get(&http, &format!("/v1/topics/{topic}/snapshot"));
    assert_eq!(snap.status, 200, "{}", snap.body);
    let (rows, _) = parse_snapshot(&snap.body);
    assert_eq!(rows.len(), 200);
    assert!(rows.iter().all(|(k, r)| r
        .value
        .starts_with(&format!("{}-value-", k.split('-').next().unwrap()))));
}

/// Standard base64 with padding (RFC 4648 §4).
fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_keys_and_values_round_trip_in_base64() {
    let (b, http) = start(&[]);
    let topic = table_topic(&b, "tables-binary", 4, &[]).await;
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let mut seen_parts = std::collections::BTreeSet::new();
    for i in 0u8..24 {
        let key = vec![0xfb, 0xff, 0x00, i, 0x80];
        let value = vec![0xff, 0x00, i, 0xc3];
        let d = p
            .send(
                FutureRecord::<[u8], [u8]>::to(&topic)
                    .key(&key[..])
                    .payload(&value[..]),
                T,
            )
            .await
            .map_err(|(e, _)| e)
            .unwrap();
        seen_parts.insert(d.partition);
        // URL-safe, unpadded key in the path; CRC-32 over the raw bytes finds the partition.
        let url_key = b64(&key)
            .replace('+', "-")
            .replace('/', "_")
            .replace('=', "");
        let path = format!(
            "/v1/topics/{topic}/keys/{url_key}?key_encoding=base64&partitioner=consistent_random"
        );
        // Text answers flag fields that are not UTF-8 and give them in base64.
        let r = get_ready(&http, &path, None);
        assert_eq!(r.status, 200, "{}", r.body);
        let j = r.json();
        assert_eq!(j.get("offset").as_i64(), Some(d.offset));
        assert_eq!(j.get("partition").as_i64(), Some(i64::from(d.partition)));
        assert_eq!(
            j.get("key").as_str(),
            Some(b64(&key).as_str()),
            "{}",
            r.body
        );
        assert_eq!(j.get("key_encoding").as_str(), Some("base64"), "{}", r.body);
        assert_eq!(
            j.get("value").as_str(),
            Some(b64(&value).as_str()),
            "{}",
            r.body
        );
        assert_eq!(
            j.get("value_encoding").as_str(),
            Some("base64"),
            "{}",
            r.body
        );
        // The standard alphabet, padded, percent-encoded ('+', '/', '=') works too.
        let std_path = format!(
            "/v1/topics/{topic}/keys/{}?key_encoding=base64&partition={}",
            pct(&b64(&key)),
            d.partition
        );
        let r = get_ready(&http, &std_path, None);
        assert_eq!(r.status, 200, "{std_path}: {}", r.body);
        assert_eq!(r.json().get("offset").as_i64(), Some(d.offset));
        // encoding=base64: always base64, never flagged.
        let r = get_ready(&http, &format!("{path}&encoding=base64"), None);
        assert_eq!(r.status, 200, "{}", r.body);
        let j = r.json();
        assert_eq!(
            j.get("value").as_str(),
            Some(b64(&value).as_str()),
            "{}",
            r.body
        );
        assert!(j.get("value_encoding").is_null(), "{}", r.body);
    }
    assert!(seen_parts.len() > 1);
    let snap = get(
        &http,
        &format!("/v1/topics/{topic}/snapshot?encoding=base64"),
    );
    assert_eq!(snap.status, 200, "{}", snap.body);
    let (rows, _) = parse_snapshot(&snap.body);
    assert_eq!(rows.len(), 24);
    for i in 0u8..24 {
        let row = &rows[&b64(&[0xfb, 0xff, 0x00, i, 0x80])];
        assert_eq!(row.value, b64(&[0xff, 0x00, i, 0xc3]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_find_keys_of_both_client_partitioners_and_escaped_keys() {
    let (b, http) = start(&[]);
    let topic = table_topic(&b, "tables-parts", 5, &[]).await;
    // librdkafka's murmur2_random is the Java client's partitioner: the route's default.
    let java_like = producer(&b, &[("acks", "all"), ("partitioner", "murmur2_random")]).unwrap();
    let rdkafka_default = producer(&b, &[("acks", "all")]).unwrap();
    let mut murmur_parts = std::collections::BTreeSet::new();
    for i in 0..60 {
        let key = format!("murmur-{i}");
        let (p, o) = send(&java_like, &topic, &key, Some("m")).await;
        murmur_parts.insert(p);
        let r = get_ready(&http, &key_path(&topic, &key, ""), None);
        assert_lookup(&r, &key, Some((p, o, "m")), "murmur2 (default partitioner)");
        let r = get_ready(&http, &key_path(&topic, &key, "partitioner=murmur2"), None);
        assert_lookup(&r, &key, Some((p, o, "m")), "partitioner=murmur2");
    }
    assert_eq!(murmur_parts.len(), 5);
    // Keys that need escaping in a path, written by librdkafka's default (CRC-32) partitioner.
    for key in [
        "with space",
        "slash/inside",
        "q?x=1&y",
        "100%",
        "ünïcödé ✓",
        "hash#frag",
        "plus+sign",
        "..",
    ] {
        let (p, o) = send(&rdkafka_default, &topic, key, Some("e")).await;
        for partitioner in ["consistent_random", "consistent", "crc32"] {
            let path = format!(
                "/v1/topics/{topic}/keys/{}?partitioner={partitioner}",
                pct(key)
            );
            let r = get_ready(&http, &path, None);
            assert_lookup(
                &r,
                key,
                Some((p, o, "e")),
                &format!("escaped key, {partitioner}"),
            );
        }
    }
}
