//! Standard output for the commands' results (the `out!` macro of `main.rs` writes to it).

use std::io::Write;

/// Standard output whose write errors are marked as its own, so that `main` tells a reader
/// that went away (`| head`) from a failed write to a file.
pub(crate) struct Stdout(std::io::StdoutLock<'static>);

impl Stdout {
    pub(crate) fn lock() -> Self {
        Stdout(std::io::stdout().lock())
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(StdoutError::mark)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(StdoutError::mark)
    }
}

/// A failed write to standard output (the payload of the `io::Error` [`Stdout`] returns).
#[derive(Debug)]
pub(crate) struct StdoutError(std::io::Error);

impl StdoutError {
    fn mark(error: std::io::Error) -> std::io::Error {
        std::io::Error::new(error.kind(), StdoutError(error))
    }
}

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "writing to standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}
