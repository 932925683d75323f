//! `share.auto.offset.reset`: where a share partition starts when the group has no state for
//! it yet.

use super::error::ShareError;

/// The group config's value. Kafka's default is `latest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutoOffsetReset {
    Earliest,
    #[default]
    Latest,
    /// `by_duration:<ISO-8601 duration>`: the first record no older than this.
    ByDuration {
        duration_ms: i64,
    },
}

/// What the log answers, as ListOffsets would (read_uncommitted, as Kafka asks).
pub trait LogOffsets {
    fn log_start_offset(&self) -> i64;
    /// The latest offset: the high watermark (on a single node, the log end offset).
    fn latest_offset(&self) -> i64;
    /// The first offset whose record timestamp is at or after `timestamp_ms`, if any.
    fn offset_for_timestamp(&self, timestamp_ms: i64) -> Option<i64>;
}

/// The start offset for a partition without state. by_duration with no record recent
/// enough fails with OFFSET_NOT_AVAILABLE, as Kafka's lookup does.
pub fn initial_start_offset(
    reset: AutoOffsetReset,
    now_ms: i64,
    log: &impl LogOffsets,
) -> Result<i64, ShareError> {
    match reset {
        AutoOffsetReset::Earliest => Ok(log.log_start_offset()),
        AutoOffsetReset::Latest => Ok(log.latest_offset()),
        AutoOffsetReset::ByDuration { duration_ms } => {
            let timestamp = now_ms.saturating_sub(duration_ms);
            log.offset_for_timestamp(timestamp).ok_or_else(|| {
                ShareError::OffsetNotAvailable(format!(
                    "no record at or after timestamp {timestamp}"
                ))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records at offsets 10..20 with timestamps 1000, 1100, ... (offset 10 at 1000).
    struct Log;
    impl LogOffsets for Log {
        fn log_start_offset(&self) -> i64 {
            10
        }
        fn latest_offset(&self) -> i64 {
            20
        }
        fn offset_for_timestamp(&self, ts: i64) -> Option<i64> {
            (10..20).find(|o| 1000 + (o - 10) * 100 >= ts)
        }
    }

    #[test]
    fn earliest_latest_and_by_duration() {
        assert_eq!(
            initial_start_offset(AutoOffsetReset::Earliest, 0, &Log),
            Ok(10)
        );
        assert_eq!(
            initial_start_offset(AutoOffsetReset::Latest, 0, &Log),
            Ok(20)
        );
        let by = AutoOffsetReset::ByDuration { duration_ms: 500 };
        assert_eq!(initial_start_offset(by, 1_750, &Log), Ok(13));
        let err = initial_start_offset(by, 10_000, &Log).unwrap_err();
        assert_eq!(err.response_error().code(), 78);
    }
}
