//! How many segment files the broker keeps open. Segment files go through skiff-log's
//! process-wide cache (`skiff_log::file_cache`), which closes the least recently used ones,
//! so the number of partitions is not bound by the open-file limit. This module sizes that
//! cache from `skiff.log.open.files.max` at start.
//!
//! Owns: [`configure`].

use skiff_log::file_cache;

/// Sizes the cache: `max_files` when set (> 0), else half the soft open-file limit. Warns
/// when the size leaves too little of the limit for connections.
pub fn configure(max_files: i32) -> usize {
    let wanted = usize::try_from(max_files).unwrap_or(0);
    let capacity = if wanted > 0 {
        wanted
    } else {
        file_cache::default_capacity()
    };
    file_cache::set_capacity(capacity);
    let capacity = file_cache::capacity();
    if let Some(limit) = file_cache::open_file_limit() {
        if capacity.saturating_mul(10) > limit.saturating_mul(9) {
            tracing::warn!(
                skiff.log.open.files.max = capacity,
                open_file_limit = limit,
                "the segment file cache may take more than 90% of the open-file limit, leaving \
                 little for connections; lower skiff.log.open.files.max or raise ulimit -n"
            );
        }
    }
    capacity
}
