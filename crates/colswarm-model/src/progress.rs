//! A progress line on stderr for long work: position, rate, ETA.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a progress line is rewritten on a terminal.
const TERMINAL_INTERVAL: Duration = Duration::from_millis(500);
/// How often a line is added where stderr is a log file or a pipe: often enough to see that a
/// long run moves, seldom enough that a day's log stays readable.
const LOG_INTERVAL: Duration = Duration::from_secs(30);

/// Where the lines go, as stderr was when the progress began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Nothing is printed.
    Off,
    /// One line, rewritten in place (`\r`, erase to the end).
    Terminal,
    /// Plain lines, one per [`LOG_INTERVAL`], and the last.
    Log,
}

/// Prints `label pos/total (pct) rate ETA message`: on a terminal one line rewritten at most
/// every half second, in a log file or pipe a plain line every 30 seconds; and a final line.
#[derive(Debug)]
pub struct Progress {
    label: String,
    total: usize,
    position: usize,
    started: Instant,
    last_print: Option<Instant>,
    mode: Mode,
}

impl Progress {
    /// A progress line over `total` units; `enabled = false` prints nothing (tests, `--quiet`).
    /// Where stderr is not a terminal (a log file, a pipe, a notebook), the lines are plain
    /// and sparse instead of rewritten in place.
    pub fn new(label: impl Into<String>, total: usize, enabled: bool) -> Self {
        let mode = match (enabled, std::io::stderr().is_terminal()) {
            (false, _) => Mode::Off,
            (true, true) => Mode::Terminal,
            (true, false) => Mode::Log,
        };
        Progress::with_mode(label, total, mode)
    }

    /// A progress line that prints only when stderr is a terminal: a person watching sees
    /// it, a log file or a pipeline does not.
    pub fn on_terminal(label: impl Into<String>, total: usize) -> Self {
        let mode = if std::io::stderr().is_terminal() {
            Mode::Terminal
        } else {
            Mode::Off
        };
        Progress::with_mode(label, total, mode)
    }

    fn with_mode(label: impl Into<String>, total: usize, mode: Mode) -> Self {
        Progress {
            label: label.into(),
            total,
            position: 0,
            started: Instant::now(),
            last_print: None,
            mode,
        }
    }

    /// Sets the position (units done) and prints when due.
    pub fn set(&mut self, position: usize, message: &str) {
        if let Some(text) = self.update(position, message) {
            eprint!("{text}");
            let _ = std::io::stderr().flush();
        }
    }

    /// Ends the line.
    pub fn finish(&mut self, message: &str) {
        if let Some(text) = self.last(message) {
            eprint!("{text}");
        }
    }

    /// What [`Progress::set`] writes, if anything is due.
    fn update(&mut self, position: usize, message: &str) -> Option<String> {
        self.position = position.min(self.total);
        let interval = match self.mode {
            Mode::Off => return None,
            Mode::Terminal => TERMINAL_INTERVAL,
            Mode::Log => LOG_INTERVAL,
        };
        let due = self.last_print.is_none_or(|t| t.elapsed() >= interval);
        // A terminal shows the end at once; a log gets it from `finish`, once.
        let at_end = self.mode == Mode::Terminal && self.position == self.total;
        if !(due || at_end) {
            return None;
        }
        self.last_print = Some(Instant::now());
        Some(match self.mode {
            Mode::Terminal => format!("\r{}\x1b[K", self.line(message)),
            _ => format!("{}\n", self.line(message)),
        })
    }

    /// What [`Progress::finish`] writes.
    fn last(&self, message: &str) -> Option<String> {
        match self.mode {
            Mode::Off => None,
            Mode::Terminal => Some(format!("\r{}\x1b[K\n", self.line(message))),
            Mode::Log => Some(format!("{}\n", self.line(message))),
        }
    }

    /// The text of the line (without the carriage return).
    pub fn line(&self, message: &str) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let rate = self.position as f64 / elapsed.max(1e-9);
        let eta = if self.position == 0 {
            "?".to_string()
        } else {
            format_duration((self.total - self.position) as f64 / rate)
        };
        format!(
            "{} {}/{} ({:.0}%) {:.1}/s elapsed {} ETA {} {}",
            self.label,
            self.position,
            self.total,
            100.0 * self.position as f64 / self.total.max(1) as f64,
            rate,
            format_duration(elapsed),
            eta,
            message
        )
    }
}

/// `1h02m03s`, `2m03s`, `3.4s`.
pub fn format_duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "?".into();
    }
    let s = seconds.round() as u64;
    match s {
        0..60 => format!("{seconds:.1}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(3.44), "3.4s");
        assert_eq!(format_duration(123.0), "2m03s");
        assert_eq!(format_duration(3723.0), "1h02m03s");
        assert_eq!(format_duration(f64::NAN), "?");
    }

    #[test]
    fn a_log_gets_plain_sparse_lines_and_a_terminal_one_line_rewritten() {
        let mut log = Progress::with_mode("epoch 1", 10, Mode::Log);
        let first = log.update(1, "").unwrap();
        assert!(
            first.starts_with("epoch 1 1/10") && first.ends_with('\n'),
            "{first:?}"
        );
        assert!(!first.contains(['\r', '\x1b']), "{first:?}");
        // Not again before the interval, not even at the end: `finish` writes that.
        assert_eq!(log.update(2, ""), None);
        assert_eq!(log.update(10, ""), None);
        let last = log.last("done").unwrap();
        assert!(last.starts_with("epoch 1 10/10 (100%)"), "{last:?}");
        assert!(last.ends_with("done\n") && !last.contains('\r'), "{last:?}");

        let mut terminal = Progress::with_mode("epoch 1", 10, Mode::Terminal);
        let first = terminal.update(1, "").unwrap();
        assert!(
            first.starts_with('\r') && first.ends_with("\x1b[K"),
            "{first:?}"
        );
        assert_eq!(terminal.update(2, ""), None);
        assert!(terminal.update(10, "").unwrap().contains("10/10"));

        let mut off = Progress::with_mode("epoch 1", 10, Mode::Off);
        assert_eq!((off.update(10, ""), off.last("")), (None, None));
    }

    #[test]
    fn line_shows_position_and_eta() {
        let mut p = Progress::new("epoch 1", 10, false);
        p.set(5, "loss 1.0");
        let line = p.line("loss 1.0");
        assert!(line.starts_with("epoch 1 5/10 (50%)"), "{line}");
        assert!(line.contains("ETA") && line.ends_with("loss 1.0"), "{line}");
    }
}
