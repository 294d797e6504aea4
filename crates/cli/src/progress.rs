//! Progress bars on standard error, drawn only when it is a terminal (so
//! scripts and tests see clean output).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a spinner redraws without being told.
const TICK: Duration = Duration::from_millis(100);

/// What a bar counts.
#[derive(Clone, Copy, Debug)]
pub enum Unit {
    /// Bytes, shown as sizes with a rate.
    Bytes,
    /// Things named by the string ("records", "tables").
    Items(&'static str),
}

/// A bar counting up to `total`.
pub fn bar(message: &str, total: u64, unit: Unit) -> ProgressBar {
    let counter = match unit {
        Unit::Bytes => "{bytes}/{total_bytes} ({bytes_per_sec})".to_owned(),
        Unit::Items(name) => format!("{{human_pos}}/{{human_len}} {name}"),
    };
    let template = format!("{{msg:>10}} [{{bar:32}}] {counter} {{eta}}");
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(&template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message.to_owned());
    bar
}

/// A spinner for work of unknown length.
pub fn spinner(message: &str) -> ProgressBar {
    let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    spinner.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    spinner.set_message(message.to_owned());
    spinner.enable_steady_tick(TICK);
    spinner
}

/// How often [`track`] reads the position.
const POLL: Duration = Duration::from_millis(100);

/// Runs `work` on a second thread while this one moves `bar` to
/// `position()` every [`POLL`], for work that reports no progress itself.
pub fn track<T: Send>(
    bar: &ProgressBar,
    work: impl FnOnce() -> T + Send,
    position: impl Fn() -> u64,
) -> T {
    std::thread::scope(|scope| {
        let worker = scope.spawn(work);
        while !worker.is_finished() {
            bar.set_position(position());
            std::thread::sleep(POLL);
        }
        bar.finish_and_clear();
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
