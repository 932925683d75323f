//! What must hold after every restart, and the model of what was acknowledged.
//!
//! The model only ever grows by acknowledgements ([`Model::absorb`]) and by what a check
//! read back from the restarted broker (which is durable from then on: the filesystem was
//! remounted from its durable image, so everything in it has been fsynced).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Context, Result};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::workload::{
    client_config, Acked, COMPACT, GROUP, PLAIN, PLAIN_PARTITIONS, TXN, TXN_RECORDS,
};

/// Upper bound for reading one partition back.
const READ_LIMIT: Duration = Duration::from_secs(20);

#[derive(Default)]
pub struct Model {
    /// `plain`: (partition, offset) → (key, value), acknowledged or read back.
    pub plain: BTreeMap<(i32, i64), (String, String)>,
    /// `compact`: key → (offset, value) of its latest acknowledged write.
    pub compact: HashMap<String, (i64, String)>,
    /// Highest acknowledged committed offset per `plain` partition for `pc-group`.
    pub commits: HashMap<i32, i64>,
    /// Transaction id → committed (true) or aborted (false), acknowledged.
    pub txns: HashMap<String, bool>,
    /// Topic → exists (true: creation acknowledged; false: deletion acknowledged).
    pub topics: BTreeMap<String, bool>,
}

/// Figures from one check, for the report (printed with `{:?}`).
#[derive(Default, Debug)]
#[allow(dead_code)] // read through Debug only
pub struct Checked {
    pub plain_records: usize,
    pub compact_keys: usize,
    pub txns: usize,
    pub seeks: usize,
    /// Acknowledged committed offsets checked (partition → offset).
    pub commits: BTreeMap<i32, i64>,
    pub topics: usize,
}

impl Model {
    pub fn absorb(&mut self, a: &Acked) {
        if let Ok(recs) = a.records.lock() {
            for r in recs.iter() {
                if r.topic == PLAIN {
                    self.plain
                        .insert((r.partition, r.offset), (r.key.clone(), r.value.clone()));
                } else if r.topic == COMPACT {
                    let e = self
                        .compact
                        .entry(r.key.clone())
                        .or_insert((r.offset, r.value.clone()));
                    if r.offset >= e.0 {
                        *e = (r.offset, r.value.clone());
                    }
                }
            }
        }
        if let Ok(c) = a.commits.lock() {
            for (p, o) in c.iter() {
                let e = self.commits.entry(*p).or_insert(*o);
                *e = (*e).max(*o);
            }
        }
        if let Ok(t) = a.txns.lock() {
            for (id, commit) in t.iter() {
                self.txns.insert(id.clone(), *commit);
            }
        }
    }
}

fn consumer(bootstrap: &str, read_committed: bool) -> Result<BaseConsumer> {
    let mut c = client_config(bootstrap);
    c.set("group.id", "pc-verify")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set(
            "isolation.level",
            if read_committed {
                "read_committed"
            } else {
                "read_uncommitted"
            },
        );
    c.create().context("creating a verifying consumer")
}

/// One consumed record.
struct Rec {
    offset: i64,
    key: String,
    value: String,
}

/// Reads `topic`/`partition` from `from` until the position reaches the high watermark.
fn read_partition(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    from: Offset,
    read_committed: bool,
    max: Option<usize>,
) -> Result<(Vec<Rec>, i64, i64)> {
    let c = consumer(bootstrap, read_committed)?;
    let (low, high) = c
        .fetch_watermarks(topic, partition, Duration::from_secs(10))
        .with_context(|| format!("ListOffsets {topic}-{partition}"))?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, from)?;
    c.assign(&tpl)?;
    let mut out = Vec::new();
    let deadline = Instant::now() + READ_LIMIT;
    let mut quiet_since = Instant::now();
    loop {
        if max.is_some_and(|m| out.len() >= m) {
            break;
        }
        let pos =
            c.position()
                .ok()
                .and_then(|t| match t.find_partition(topic, partition)?.offset() {
                    Offset::Offset(o) => Some(o),
                    _ => None,
                });
        if pos.is_some_and(|p| p >= high) || out.last().is_some_and(|r: &Rec| r.offset + 1 >= high)
        {
            break;
        }
        // read_committed: control records move the position without a message; if nothing
        // arrives for a while after the stable end, stop.
        if read_committed && quiet_since.elapsed() > Duration::from_secs(3) {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "reading {topic}-{partition}: only got to {:?} of high watermark {high} in {:?}",
                out.last().map(|r: &Rec| r.offset),
                READ_LIMIT
            );
        }
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                quiet_since = Instant::now();
                out.push(Rec {
                    offset: m.offset(),
                    key: String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned(),
                    value: String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
                });
            }
            Some(Err(e)) => bail!("fetching {topic}-{partition}: {e}"),
            None => {}
        }
    }
    Ok((out, low, high))
}

/// Splits `x|round|a|b|…` into (round, a, b).
fn fields(v: &str) -> Result<(u32, String, u64)> {
    let f: Vec<&str> = v.splitn(5, '|').collect();
    ensure!(f.len() >= 4, "malformed value {v:.40}");
    Ok((f[1].parse()?, f[2].to_string(), f[3].parse()?))
}

/// Checks everything after a restart and folds what was read back into the model.
pub fn verify(
    bootstrap: &str,
    model: &mut Model,
    seek_rng: &mut impl FnMut(i64) -> i64,
) -> Result<Checked> {
    let mut out = Checked {
        commits: model.commits.iter().map(|(p, o)| (*p, *o)).collect(),
        topics: model.topics.len(),
        ..Checked::default()
    };
    check_topics(bootstrap, model)?;

    // plain: every acknowledged record at its offset; offsets contiguous from 0; per round and
    // partition the producer's sequence strictly increasing; rounds never go backwards.
    for p in 0..PLAIN_PARTITIONS {
        let (recs, low, high) =
            read_partition(bootstrap, PLAIN, p, Offset::Beginning, false, None)?;
        ensure!(
            low == 0,
            "{PLAIN}-{p}: log start {low}, expected 0 (no retention)"
        );
        let mut last: Option<(u32, u64)> = None;
        for (i, r) in recs.iter().enumerate() {
            ensure!(
                r.offset == i as i64,
                "{PLAIN}-{p}: offset {} at position {i}: offsets are not contiguous",
                r.offset
            );
            let (round, part, seq) = fields(&r.value)?;
            ensure!(
                part == p.to_string(),
                "{PLAIN}-{p}: record for partition {part}"
            );
            if let Some((lr, ls)) = last {
                ensure!(
                    round > lr || (round == lr && seq > ls),
                    "{PLAIN}-{p} offset {}: round {round} seq {seq} after round {lr} seq {ls}: out of order or duplicated",
                    r.offset
                );
            }
            last = Some((round, seq));
        }
        ensure!(
            high == recs.len() as i64,
            "{PLAIN}-{p}: high watermark {high} but {} records read",
            recs.len()
        );
        for ((mp, mo), (k, v)) in model.plain.range((p, 0)..(p + 1, 0)) {
            let got = recs.get(*mo as usize).ok_or_else(|| {
                anyhow!("{PLAIN}-{mp}: acknowledged offset {mo} is gone (log end {high})")
            })?;
            ensure!(
                &got.key == k && &got.value == v,
                "{PLAIN}-{mp} offset {mo}: acknowledged {k}={v:.30} but found {}={:.30}",
                got.key,
                got.value
            );
        }
        // The indexes: a fetch from a few offsets starts exactly there.
        if high > 0 {
            for _ in 0..3 {
                let at = seek_rng(high);
                let (one, _, _) =
                    read_partition(bootstrap, PLAIN, p, Offset::Offset(at), false, Some(1))?;
                let first = one
                    .first()
                    .ok_or_else(|| anyhow!("{PLAIN}-{p}: fetch at {at} returned nothing"))?;
                ensure!(
                    first.offset == at && first.value == recs[at as usize].value,
                    "{PLAIN}-{p}: fetch at {at} gave offset {} ({:.30})",
                    first.offset,
                    first.value
                );
                out.seeks += 1;
            }
        }
        for r in &recs {
            model
                .plain
                .insert((p, r.offset), (r.key.clone(), r.value.clone()));
        }
        out.plain_records += recs.len();
    }

    // compact: the latest acknowledged value of every key is there, or a later one.
    let (recs, _low, high) = read_partition(bootstrap, COMPACT, 0, Offset::Beginning, false, None)?;
    let mut latest: HashMap<String, (i64, String)> = HashMap::new();
    let mut per_key: HashMap<String, (u32, u64)> = HashMap::new();
    let mut prev = -1i64;
    for r in &recs {
        ensure!(
            r.offset > prev,
            "{COMPACT}: offset {} after {prev}",
            r.offset
        );
        prev = r.offset;
        let (round, key, seq) = fields(&r.value)?;
        ensure!(
            key == r.key,
            "{COMPACT} offset {}: key {} holds a value for {key}",
            r.offset,
            r.key
        );
        if let Some((lr, ls)) = per_key.get(&key) {
            ensure!(
                round > *lr || (round == *lr && seq > *ls),
                "{COMPACT} offset {}: {key} round {round} seq {seq} after round {lr} seq {ls}",
                r.offset
            );
        }
        per_key.insert(key.clone(), (round, seq));
        latest.insert(key, (r.offset, r.value.clone()));
    }
    for (k, (o, v)) in &model.compact {
        let (go, gv) = latest
            .get(k)
            .ok_or_else(|| anyhow!("{COMPACT}: key {k} (acknowledged at offset {o}) is gone"))?;
        ensure!(
            go > o || (go == o && gv == v),
            "{COMPACT}: key {k} acknowledged at offset {o} but latest is offset {go} ({gv:.30})"
        );
        ensure!(
            *o < high,
            "{COMPACT}: acknowledged offset {o} at or past log end {high}"
        );
    }
    out.compact_keys = latest.len();
    model.compact = latest;

    // Committed offsets: every acknowledged commit, or a later one.
    let c = consumer(bootstrap, false)?;
    let mut cfg = client_config(bootstrap);
    cfg.set("group.id", GROUP)
        .set("enable.auto.commit", "false");
    let gc: BaseConsumer = cfg.create()?;
    drop(c);
    let mut tpl = TopicPartitionList::new();
    for p in 0..PLAIN_PARTITIONS {
        tpl.add_partition(PLAIN, p);
    }
    let got = gc
        .committed_offsets(tpl, Duration::from_secs(10))
        .context("OffsetFetch for pc-group")?;
    for (p, o) in model.commits.clone() {
        let e = got
            .find_partition(PLAIN, p)
            .ok_or_else(|| anyhow!("OffsetFetch: no entry for {PLAIN}-{p}"))?;
        match e.offset() {
            Offset::Offset(g) if g >= o => {
                model.commits.insert(p, g);
            }
            other => {
                bail!("OffsetFetch {PLAIN}-{p}: acknowledged commit {o}, broker returns {other:?}")
            }
        }
    }

    // Transactions, read_committed: committed ones whole, aborted ones absent, the rest all
    // or nothing. The transactional producer is initialised first: that aborts a transaction
    // the cut left open, so the last stable offset can move past it.
    let _fence = super::workload::txn_producer(bootstrap)
        .ok_or_else(|| anyhow!("InitProducerId for the transactional id failed after restart"))?;
    let (recs, _, _) = read_partition(bootstrap, TXN, 0, Offset::Beginning, true, None)?;
    let mut seen: BTreeMap<String, HashSet<u64>> = BTreeMap::new();
    for r in &recs {
        let (round, n, i) = fields(&r.value)?;
        let id = format!("{round}|{n}");
        ensure!(
            seen.entry(id.clone()).or_default().insert(i),
            "{TXN}: record {i} of transaction {id} appears twice"
        );
    }
    for (id, is) in &seen {
        ensure!(
            is.len() == TXN_RECORDS as usize,
            "{TXN}: transaction {id} is visible with {} of {TXN_RECORDS} records",
            is.len()
        );
        ensure!(
            model.txns.get(id) != Some(&false),
            "{TXN}: transaction {id} was aborted (acknowledged) but is visible to read_committed"
        );
    }
    for (id, commit) in &model.txns {
        ensure!(
            !*commit || seen.contains_key(id),
            "{TXN}: transaction {id} was committed (acknowledged) but is not visible"
        );
    }
    for id in seen.keys() {
        model.txns.insert(id.clone(), true);
    }
    out.txns = seen.len();
    Ok(out)
}

fn check_topics(bootstrap: &str, model: &mut Model) -> Result<()> {
    let c = consumer(bootstrap, false)?;
    let md = c
        .fetch_metadata(None, Duration::from_secs(10))
        .context("Metadata after restart")?;
    let names: HashSet<String> = md.topics().iter().map(|t| t.name().to_string()).collect();
    for (t, exists) in &model.topics {
        ensure!(
            names.contains(t) == *exists,
            "topic {t}: {} was acknowledged but after the restart it {}",
            if *exists { "creation" } else { "deletion" },
            if *exists { "is missing" } else { "exists" }
        );
    }
    // A topic whose creation was not acknowledged but survived is durable from now on.
    for n in names.iter().filter(|n| n.starts_with("tmp-")) {
        model.topics.entry(n.clone()).or_insert(true);
    }
    Ok(())
}
