//! Running one workload on several threads at once, timed from the
//! moment they are all released to the moment the last one finishes.

use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Runs `body(t)` for every `t` in `0..threads`, each on its own scoped
/// thread, all released together by a [`Barrier`], and returns the wall time
/// from the first release to the last thread's end.
///
/// With one thread, `body(0)` runs inline on the calling thread (no spawn,
/// no barrier) and `None` is returned: the caller times that call as it
/// always did, so `--threads 1` is the single-threaded harness unchanged.
///
/// A failing thread does not stop the others: every thread runs to its end,
/// then the error of the lowest-numbered failing thread is returned (a
/// panicking thread counts as failing).
pub fn together(
    threads: usize,
    body: impl Fn(u64) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Option<Duration>> {
    if threads <= 1 {
        return body(0).map(|()| None);
    }
    let barrier = Barrier::new(threads);
    let ends: Vec<anyhow::Result<(Instant, Instant)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|t| {
                let (barrier, body) = (&barrier, &body);
                scope.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    body(t)?;
                    Ok((start, Instant::now()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a reader or writer thread panicked")))
            })
            .collect()
    });
    let mut first_start: Option<Instant> = None;
    let mut last_end: Option<Instant> = None;
    for end in ends {
        let (start, end) = end?;
        first_start = Some(first_start.map_or(start, |s| s.min(start)));
        last_end = Some(last_end.map_or(end, |e| e.max(end)));
    }
    Ok(first_start
        .zip(last_end)
        .map(|(start, end)| end.saturating_duration_since(start)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn one_thread_runs_inline_and_is_timed_by_the_caller() -> anyhow::Result<()> {
        let caller = std::thread::current().id();
        let span = together(1, |t| {
            anyhow::ensure!(t == 0, "thread {t}");
            anyhow::ensure!(std::thread::current().id() == caller, "not inline");
            Ok(())
        })?;
        assert!(span.is_none());
        Ok(())
    }

    #[test]
    fn every_thread_runs_once_and_the_span_covers_the_slowest() -> anyhow::Result<()> {
        let seen = AtomicU64::new(0);
        let span = together(3, |t| {
            if t == 2 {
                std::thread::sleep(Duration::from_millis(50));
            }
            let before = seen.fetch_or(1 << t, Ordering::Relaxed);
            anyhow::ensure!(before & (1 << t) == 0, "thread {t} ran twice");
            Ok(())
        })?;
        assert_eq!(seen.into_inner(), 0b111);
        assert!(
            span.is_some_and(|s| s >= Duration::from_millis(50)),
            "{span:?}"
        );
        Ok(())
    }

    #[test]
    fn the_lowest_failing_thread_s_error_is_returned() {
        let result = together(4, |t| {
            anyhow::ensure!(t % 2 == 0, "thread {t} failed");
            Ok(())
        });
        let message = result.err().map(|e| format!("{e:#}"));
        assert_eq!(message.as_deref(), Some("thread 1 failed"));
    }
}
