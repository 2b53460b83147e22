//! File checksums: what a manifest records for every file of a model directory, and what a
//! specialist's checkpoint is verified against when it is loaded.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::SwarmError;

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String, SwarmError> {
    let io = |source| SwarmError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut buffer).map_err(io)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}
