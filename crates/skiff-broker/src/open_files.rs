//! The open-file budget of new partitions. An open partition holds three files (its active
//! segment's log, offset index and time index), so creating more partitions than the
//! process's open-file limit allows used to fail part way with "Too many open files"
//! (KAFKA_STORAGE_ERROR, which clients retry). CreateTopics, CreatePartitions and the
//! internal topics check the budget first and are refused with a message that names the
//! limit, before anything is created.
//!
//! Owns: [`check`]. Reads `/proc/self/limits` and counts `/proc/self/fd` (Linux); where those
//! cannot be read the check passes and creation fails as before if the limit is hit.

/// Files one open partition holds.
pub const FILES_PER_PARTITION: usize = 3;

/// Files kept free for everything else (connections, segment rolls, the cleaner's outputs,
/// snapshots): a tenth of the limit, at least 64.
fn reserve(limit: usize) -> usize {
    (limit / 10).max(64)
}

/// Whether `new_partitions` more partitions fit under the open-file limit; why not if not.
pub fn check(new_partitions: usize) -> Result<(), String> {
    let Some(limit) = soft_limit() else {
        return Ok(());
    };
    let open = open_now().unwrap_or(0);
    budget(new_partitions, limit, open)
}

fn budget(new_partitions: usize, limit: usize, open: usize) -> Result<(), String> {
    let needed = new_partitions.saturating_mul(FILES_PER_PARTITION);
    let kept = reserve(limit);
    let free = limit.saturating_sub(open).saturating_sub(kept);
    if needed <= free {
        return Ok(());
    }
    Err(format!(
        "{new_partitions} more partition(s) need {needed} open files ({FILES_PER_PARTITION} each) \
         but only {free} are free under this broker's limit of {limit} open files \
         ({open} open, {kept} kept for connections); raise the limit (ulimit -n) or use fewer partitions"
    ))
}

/// The soft RLIMIT_NOFILE, from `/proc/self/limits` ("Max open files  SOFT  HARD  files");
/// `None` when unlimited or unreadable.
fn soft_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_soft_limit(&limits)
}

fn parse_soft_limit(limits: &str) -> Option<usize> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn open_now() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_read_from_proc_limits() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             63704                63704                processes \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(parse_soft_limit(limits), Some(1024));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_soft_limit(unlimited), None);
        assert_eq!(parse_soft_limit(""), None);
    }

    #[test]
    fn partitions_fit_while_three_files_each_stay_under_the_limit_less_the_reserve() {
        // 1,000 files, 100 open, 100 kept: 800 free, 266 partitions.
        assert!(budget(266, 1_000, 100).is_ok());
        let e = budget(267, 1_000, 100).unwrap_err();
        assert!(e.contains("801 open files"), "{e}");
        assert!(e.contains("limit of 1000 open files"), "{e}");
        assert!(budget(1, 10, 0).is_err(), "the reserve is at least 64");
        assert!(budget(usize::MAX, 20_000, 0).is_err());
    }

    #[test]
    fn this_process_has_a_readable_budget() {
        assert!(open_now().unwrap() > 0);
        assert!(check(0).is_ok());
    }
}
