//! Fuzz target: see colswarm_swarm::manifest::fuzzing::fuzz_manifest. With
//! `COLSWARM_FUZZ_SEEDS=<dir>` set, it first writes its seed inputs into `<dir>`.
#![no_main]

use colswarm_swarm::manifest::fuzzing::{fuzz_manifest, seeds};
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        if let Some(dir) = std::env::var_os("COLSWARM_FUZZ_SEEDS") {
            let dir = std::path::PathBuf::from(dir);
            let _ = std::fs::create_dir_all(&dir);
            for (i, seed) in seeds().iter().enumerate() {
                let _ = std::fs::write(dir.join(format!("seed-{i}")), seed);
            }
        }
    },
    |data: &[u8]| {
        fuzz_manifest(data);
    }
);
