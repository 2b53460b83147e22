//! A progress line on stderr for long work: position, rate, ETA.

use std::io::Write;
use std::time::{Duration, Instant};

/// Prints `label pos/total (pct) rate ETA message` at most every `interval`, and a final line.
#[derive(Debug)]
pub struct Progress {
    label: String,
    total: usize,
    position: usize,
    started: Instant,
    last_print: Option<Instant>,
    interval: Duration,
    enabled: bool,
}

impl Progress {
    /// A progress line over `total` units; `enabled = false` prints nothing (tests, `--quiet`).
    pub fn new(label: impl Into<String>, total: usize, enabled: bool) -> Self {
        Progress {
            label: label.into(),
            total,
            position: 0,
            started: Instant::now(),
            last_print: None,
            interval: Duration::from_millis(500),
            enabled,
        }
    }

    /// A progress line that prints only when stderr is a terminal: a person watching sees
    /// it, a log file or a pipeline does not.
    pub fn on_terminal(label: impl Into<String>, total: usize) -> Self {
        use std::io::IsTerminal;
        Progress::new(label, total, std::io::stderr().is_terminal())
    }

    /// Sets the position (units done) and prints when due.
    pub fn set(&mut self, position: usize, message: &str) {
        self.position = position.min(self.total);
        let due = self.last_print.is_none_or(|t| t.elapsed() >= self.interval);
        if self.enabled && (due || self.position == self.total) {
            self.last_print = Some(Instant::now());
            eprint!("\r{}\x1b[K", self.line(message));
            let _ = std::io::stderr().flush();
        }
    }

    /// Ends the line.
    pub fn finish(&mut self, message: &str) {
        if self.enabled {
            eprintln!("\r{}\x1b[K", self.line(message));
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
    fn line_shows_position_and_eta() {
        let mut p = Progress::new("epoch 1", 10, false);
        p.set(5, "loss 1.0");
        let line = p.line("loss 1.0");
        assert!(line.starts_with("epoch 1 5/10 (50%)"), "{line}");
        assert!(line.contains("ETA") && line.ends_with("loss 1.0"), "{line}");
    }
}
