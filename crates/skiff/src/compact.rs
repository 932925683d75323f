//! `skiff compact`: the compaction controls of a running broker through its HTTP API
//! (`skiff.http.listener`, docs/http-api.md). `--dry-run` prints what a pass would do now,
//! one row per partition; without it the pass is asked for (compact now) and each ticket is
//! polled until it ends, then its figures are printed. Exit status 1 when a ticket failed.
//!
//! The HTTP exchange is [`crate::scrape::send`]; this module only builds paths, reads the
//! JSON answers and formats them.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use serde_json::Value;

use crate::scrape::{self, Tls};

/// Connect and read timeout of each request (a dry run reads the partition's segments).
const TIMEOUT: Duration = Duration::from_secs(120);
/// Pause between two polls of a ticket.
const POLL: Duration = Duration::from_millis(200);

/// What the command line asked for.
pub struct Options {
    pub http: String,
    pub topic: String,
    pub partition: Option<i32>,
    pub dry_run: bool,
    /// https, trusting this CA.
    pub ca_file: Option<PathBuf>,
    /// Basic authentication; the password comes from `SKIFF_HTTP_PASSWORD`.
    pub user: Option<String>,
    pub password: Option<String>,
    /// Longest wait for the tickets.
    pub wait: Duration,
}

pub fn run(o: &Options) -> Result<()> {
    if o.topic.is_empty()
        || !o
            .topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        bail!("`{}` is not a Kafka topic name", o.topic);
    }
    let tls = o
        .ca_file
        .as_deref()
        .map(|ca| Tls::new(ca, &o.http))
        .transpose()?;
    let auth = match (&o.user, &o.password) {
        (Some(u), Some(p)) => Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
        )),
        (Some(_), None) => bail!("--user needs the password in SKIFF_HTTP_PASSWORD"),
        _ => None,
    };
    let client = Client {
        addr: &o.http,
        tls: tls.as_ref(),
        auth: auth.as_deref(),
    };
    let query = o
        .partition
        .map(|p| format!("?partition={p}"))
        .unwrap_or_default();
    if o.dry_run {
        let v = client.call(
            "GET",
            &format!("/v1/topics/{}/compaction/dry-run{query}", o.topic),
            200,
        )?;
        print!("{}", dry_run_table(&v)?);
        return Ok(());
    }
    let v = client.call(
        "POST",
        &format!("/v1/topics/{}/compaction{query}", o.topic),
        202,
    )?;
    let tickets = v["tickets"]
        .as_array()
        .ok_or_else(|| anyhow!("the answer has no tickets: {v}"))?;
    let deadline = Instant::now() + o.wait;
    let mut finished = Vec::new();
    for t in tickets {
        let url = t["url"]
            .as_str()
            .ok_or_else(|| anyhow!("a ticket has no url: {t}"))?;
        let mut last = t.clone();
        while matches!(last["state"].as_str(), Some("queued" | "running")) {
            if Instant::now() >= deadline {
                bail!(
                    "ticket {} (partition {}) is still {} after {:?}; follow it with GET {url}",
                    last["id"],
                    last["partition"],
                    last["state"],
                    o.wait
                );
            }
            std::thread::sleep(POLL);
            last = client.call("GET", url, 200)?;
        }
        finished.push(last);
    }
    print!("{}", tickets_table(&finished));
    if finished.iter().any(|t| t["state"] == "failed") {
        bail!("compaction failed on some partition (see the table)");
    }
    Ok(())
}

struct Client<'a> {
    addr: &'a str,
    tls: Option<&'a Tls>,
    auth: Option<&'a str>,
}

impl Client<'_> {
    /// One request; the JSON body when the status is `expect`, else the API's error as text.
    fn call(&self, method: &str, path: &str, expect: u16) -> Result<Value> {
        let a = scrape::send(self.addr, self.tls, method, path, self.auth, TIMEOUT)?;
        let v: Value = serde_json::from_slice(&a.body).with_context(|| {
            format!(
                "{method} {path} answered {} with a body that is not JSON; is {} a Skiff HTTP API listener?",
                a.status, self.addr
            )
        })?;
        if a.status != expect {
            let code = v["error"]["code"].as_str().unwrap_or("?");
            let message = v["error"]["message"].as_str().unwrap_or("");
            bail!("{method} {path}: HTTP {} {code}: {message}", a.status);
        }
        Ok(v)
    }
}

fn n(v: &Value) -> String {
    match v {
        Value::Number(x) => x.to_string(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        _ => "-".to_string(),
    }
}

/// Right-aligns `rows` under `header` (the first column left-aligned).
fn layout(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: Vec<String>| {
        let mut out = String::new();
        for (i, (c, w)) in cells.iter().zip(&width).enumerate() {
            if i == 0 {
                out.push_str(&format!("{c:<w$}"));
            } else {
                out.push_str(&format!("  {c:>w$}"));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        out.push_str(&line(r.clone()));
    }
    out
}

/// The dry run's figures, one row per partition.
pub fn dry_run_table(v: &Value) -> Result<String> {
    let parts = v["partitions"]
        .as_array()
        .ok_or_else(|| anyhow!("the answer has no partitions: {v}"))?;
    let rows: Vec<Vec<String>> = parts
        .iter()
        .map(|p| {
            let f = &p["figures"];
            vec![
                n(&p["partition"]),
                format!(
                    "{}..{}",
                    n(&f["first_dirty_offset"]),
                    n(&f["first_uncleanable_offset"])
                ),
                n(&p["limited_by"]),
                format!(
                    "{:.3}/{}",
                    p["dirty_ratio"].as_f64().unwrap_or(0.0),
                    n(&p["min_cleanable_dirty_ratio"])
                ),
                n(&p["eligible_now"]),
                n(&p["keys_in_dirty_range"]),
                n(&f["records_read"]),
                n(&f["records_removed"]),
                n(&f["bytes_before"]),
                n(&f["bytes_after"]),
                n(&f["tombstones_removed"]),
                n(&f["tombstones_held_for_consumers"]),
            ]
        })
        .collect();
    let topic = v["topic"].as_str().unwrap_or("?");
    Ok(format!("dry run of topic {topic} (nothing was changed)\n")
        + &layout(
            &[
                "partition",
                "range",
                "limited_by",
                "dirty/min",
                "eligible",
                "keys",
                "read",
                "removed",
                "bytes_before",
                "bytes_after",
                "tombstones_removed",
                "tombstones_held",
            ],
            &rows,
        ))
}

/// The finished tickets, one row per partition.
pub fn tickets_table(tickets: &[Value]) -> String {
    let rows: Vec<Vec<String>> = tickets
        .iter()
        .map(|t| {
            let p = &t["pass"];
            vec![
                n(&t["partition"]),
                n(&t["id"]),
                n(&t["state"]),
                n(&p["records_read"]),
                n(&p["records_removed"]),
                n(&p["bytes_before"]),
                n(&p["bytes_after"]),
                n(&p["duration_ms"]),
                t["error"].as_str().unwrap_or("").to_string(),
            ]
        })
        .collect();
    layout(
        &[
            "partition",
            "ticket",
            "state",
            "read",
            "removed",
            "bytes_before",
            "bytes_after",
            "ms",
            "error",
        ],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_show_the_figures() {
        let v = json!({"topic": "t", "partitions": [{"partition": 0, "limited_by": "active_segment",
            "dirty_ratio": 1.0, "min_cleanable_dirty_ratio": 0.5, "eligible_now": true,
            "keys_in_dirty_range": 5, "figures": {"first_dirty_offset": 0,
            "first_uncleanable_offset": 50, "records_read": 50, "records_removed": 45,
            "bytes_before": 3000, "bytes_after": 300, "tombstones_removed": 0,
            "tombstones_held_for_consumers": 0}}]});
        let t = dry_run_table(&v).unwrap();
        let row = t.lines().nth(2).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "0",
                "0..50",
                "active_segment",
                "1.000/0.5",
                "true",
                "5",
                "50",
                "45",
                "3000",
                "300",
                "0",
                "0"
            ]
        );
        let t = tickets_table(&[
            json!({"partition": 1, "id": 7, "state": "failed", "pass": null,
            "error": "partition deleted"}),
        ]);
        assert!(
            t.lines().nth(1).unwrap().ends_with("partition deleted"),
            "{t}"
        );
        assert!(dry_run_table(&json!({})).is_err());
    }
}
