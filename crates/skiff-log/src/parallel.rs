//! Running independent blocking jobs (opening logs, scanning segments, fsyncs) on a few scoped
//! threads, so the broker's fan-outs share one careful implementation: results keep the order
//! of the jobs, the calling thread works too, and a thread that cannot be started only means
//! fewer helpers, never an unfinished job.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Calls `f` on every item of `items` on up to `threads` threads (the caller's included) and
/// returns the results in the order of `items`. Items are taken one at a time from a shared
/// counter, so a slow item does not hold back a whole share of the others. A slot is `None`
/// only when the thread running that item panicked.
pub fn map_in_parallel<T, R, F>(items: &[T], threads: usize, name: &str, f: F) -> Vec<Option<R>>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(|item| Some(f(item))).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let run = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(i) else {
            return;
        };
        let r = f(item);
        if let Some(slot) = slots.lock().unwrap_or_else(|e| e.into_inner()).get_mut(i) {
            *slot = Some(r);
        }
    };
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| {
                let spawned = std::thread::Builder::new()
                    .name(name.to_string())
                    .spawn_scoped(scope, run);
                if let Err(e) = &spawned {
                    tracing::warn!(thread = name, error = %e,
                        "could not start a helper thread; fewer threads do the work");
                }
                spawned.ok()
            })
            .collect();
        run();
        for helper in helpers {
            if helper.join().is_err() {
                tracing::error!(
                    thread = name,
                    "a helper thread panicked; its job has no result"
                );
            }
        }
    });
    slots.into_inner().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_order_of_the_items_whatever_the_thread_count() {
        let items: Vec<u64> = (0..100).collect();
        for threads in [0, 1, 2, 7, 200] {
            let out = map_in_parallel(&items, threads, "test", |x| x * 3);
            let expected: Vec<Option<u64>> = items.iter().map(|x| Some(x * 3)).collect();
            assert_eq!(out, expected, "threads {threads}");
        }
        assert!(map_in_parallel(&[] as &[u8], 4, "test", |x| *x).is_empty());
    }

    #[test]
    fn jobs_run_on_more_than_one_thread() {
        let items: Vec<u32> = (0..8).collect();
        let barrier = std::sync::Barrier::new(2);
        // Two jobs wait for each other: this only finishes if two threads run them at once.
        let out = map_in_parallel(&items[..2], 2, "test", |x| {
            barrier.wait();
            *x
        });
        assert_eq!(out, vec![Some(0), Some(1)]);
    }
}
