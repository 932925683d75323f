//! Shared helpers of the integration tests: a compacted log on a temp dir with a manual clock,
//! producing keyed records, reading everything back, and running one pass by hand.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use skiff_cleaner::{
    plan, run_pass, ArchiveSink, LogArchive, OffsetMap, PassContext, PassStats, SummaryStore,
    Throttler,
};
use skiff_log::{AppendValidation, Clock, Log, LogConfig, ManualClock, Recovery};
use skiff_records::{records, BatchBuilder, BatchHeader, Batches, Compression};

pub const T0: i64 = 1_700_000_000_000;

/// One record as a client sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Rec {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

pub fn compact_config(segment_bytes: i32, delete_retention_ms: i64) -> LogConfig {
    let mut c = LogConfig::default();
    c.cleanup_policy.compact = true;
    c.cleanup_policy.delete = false;
    c.segment_bytes = segment_bytes;
    c.segment_ms = 10_000;
    c.delete_retention_ms = delete_retention_ms;
    c.file_delete_delay_ms = 0;
    c.min_cleanable_dirty_ratio = 0.0;
    c
}

pub struct TestLog {
    pub dir: tempfile::TempDir,
    pub clock: Arc<ManualClock>,
    pub config: LogConfig,
    pub log: Option<Log>,
    /// Segment summaries the passes use and fill (`None`: every pass reads every segment, as
    /// before summaries existed).
    pub summaries: Option<SummaryStore>,
}

/// Summary memory of a [`TestLog`]: ample for test logs.
pub const SUMMARY_BYTES: u64 = 1 << 20;

impl TestLog {
    pub fn new(config: LogConfig) -> TestLog {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(T0));
        let mut t = TestLog {
            dir,
            clock,
            config,
            log: None,
            summaries: Some(SummaryStore::new(SUMMARY_BYTES)),
        };
        t.open(true);
        t
    }

    pub fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("topic-0")
    }

    pub fn open(&mut self, clean: bool) {
        let recovery = if clean {
            Recovery::Clean
        } else {
            Recovery::FromOffset(0)
        };
        let log = Log::open(
            &self.path(),
            self.config.clone(),
            self.clock.clone(),
            recovery,
        )
        .unwrap();
        self.log = Some(log);
    }

    /// Closes (or just drops, as a crash would) and reopens the log.
    pub fn reopen(&mut self, clean: bool) {
        if let Some(log) = self.log.take() {
            if clean {
                log.close().unwrap();
            }
        }
        self.open(clean);
    }

    pub fn log(&self) -> &Log {
        self.log.as_ref().unwrap()
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Appends one batch of (key, value) records at the current time; returns its offsets.
    pub fn produce(&self, recs: &[(&[u8], Option<&[u8]>)], codec: Compression) -> Vec<Rec> {
        let now = self.now();
        let mut b = BatchBuilder::new(0, codec);
        for (i, (k, v)) in recs.iter().enumerate() {
            let hv = format!("h{i}");
            b.push(now, Some(k), *v, &[(b"hk", Some(hv.as_bytes()))]);
        }
        let info = self
            .log()
            .append(&b.build().unwrap(), 0, &AppendValidation { now_ms: now })
            .unwrap();
        recs.iter()
            .enumerate()
            .map(|(i, (k, v))| Rec {
                offset: info.first_offset + i as i64,
                timestamp: now,
                key: Some(k.to_vec()),
                value: v.map(<[u8]>::to_vec),
                headers: vec![(b"hk".to_vec(), Some(format!("h{i}").into_bytes()))],
            })
            .collect()
    }

    /// Rolls the active segment by moving the clock past segment.ms.
    pub fn roll(&self) {
        self.clock.advance(self.config.segment_ms + 1);
        self.log().roll_if_due().unwrap();
    }

    /// Every batch header and record from the log start, as a consumer would fetch them.
    pub fn read_all(&self) -> (Vec<BatchHeader>, Vec<Rec>) {
        let log = self.log();
        let mut offset = log.log_start_offset();
        let (mut headers, mut out) = (Vec::new(), Vec::new());
        while offset < log.log_end_offset() {
            let info = log.read(offset, 1 << 20, true).unwrap();
            assert!(
                !info.records.is_empty(),
                "read at {offset} returned nothing"
            );
            for item in Batches::new(&info.records) {
                let (h, bytes) = item.unwrap();
                skiff_records::validate_batch(bytes).unwrap();
                for r in records(bytes, 1 << 26).unwrap() {
                    out.push(Rec {
                        offset: h.base_offset + i64::from(r.offset_delta),
                        timestamp: h.base_timestamp + r.timestamp_delta,
                        key: r.key.map(|k| k.to_vec()),
                        value: r.value.map(|v| v.to_vec()),
                        headers: r
                            .headers
                            .into_iter()
                            .map(|(k, v)| (k.to_vec(), v.map(|v| v.to_vec())))
                            .collect(),
                    });
                }
                offset = h.next_offset();
                headers.push(h);
            }
        }
        (headers, out)
    }

    /// Plans and runs one pass by hand with a map of `map_bytes`, whatever the dirty ratio.
    pub fn clean(&self, checkpoint: Option<i64>, map_bytes: u64) -> PassStats {
        self.try_clean(checkpoint, map_bytes, &AtomicBool::new(false))
            .unwrap()
    }

    pub fn try_clean(
        &self,
        checkpoint: Option<i64>,
        map_bytes: u64,
        abort: &AtomicBool,
    ) -> skiff_cleaner::Result<PassStats> {
        self.try_clean_archiving("topic", checkpoint, map_bytes, abort, None)
    }

    /// [`TestLog::try_clean`] with an archive partition (`skiff.compaction.archive.topic`).
    pub fn try_clean_archiving(
        &self,
        topic: &str,
        checkpoint: Option<i64>,
        map_bytes: u64,
        abort: &AtomicBool,
        archive: Option<&dyn skiff_cleaner::ArchiveSink>,
    ) -> skiff_cleaner::Result<PassStats> {
        let log = self.log();
        let view = log.cleaner_view();
        let p = plan(&view, checkpoint, self.now(), log.last_stable_offset());
        let mut map = OffsetMap::new(map_bytes, 0.9);
        let throttler = Throttler::new(f64::MAX);
        let ctx = PassContext {
            topic,
            partition: 0,
            now_ms: self.now(),
            io_buffer_size: 256,
            abort,
            throttler: &throttler,
            consumer_hold: None,
            archive,
            summaries: self.summaries.as_ref(),
        };
        run_pass(log, &view, &p, &mut map, &ctx)
    }
}

/// A transactional batch of one record from producer `pid` at sequence `seq`; its offset.
pub fn txn_append(t: &TestLog, pid: i64, seq: i32, key: &[u8], value: &[u8]) -> i64 {
    let mut b = BatchBuilder::new(0, Compression::None)
        .producer_id(pid)
        .producer_epoch(0)
        .base_sequence(seq)
        .transactional(true);
    b.push(t.now(), Some(key), Some(value), &[]);
    let v = AppendValidation { now_ms: t.now() };
    t.log()
        .append(&b.build().unwrap(), 0, &v)
        .unwrap()
        .first_offset
}

/// A COMMIT or ABORT marker of producer `pid` (epoch 0).
pub fn marker(t: &TestLog, pid: i64, control: skiff_log::ControlType) {
    t.log()
        .write_txn_marker(pid, 0, 0, control, 0, t.now())
        .unwrap();
}

/// [`LogArchive`] with a given per-pass bound (the archive tests' small bounds).
pub struct Bounded(pub LogArchive, pub u64);

impl ArchiveSink for Bounded {
    fn target(&self) -> (&str, i32) {
        self.0.target()
    }
    fn end_offset(&self) -> i64 {
        self.0.end_offset()
    }
    fn start_offset(&self) -> i64 {
        self.0.start_offset()
    }
    fn append(&self, batch: &[u8], now_ms: i64) -> skiff_cleaner::Result<()> {
        self.0.append(batch, now_ms)
    }
    fn sync(&self) -> skiff_cleaner::Result<()> {
        self.0.sync()
    }
    fn read(&self, offset: i64, max_bytes: usize) -> skiff_cleaner::Result<bytes::Bytes> {
        self.0.read(offset, max_bytes)
    }
    fn max_records_per_pass(&self) -> u64 {
        self.1
    }
}
