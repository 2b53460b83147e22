//! Fuzz target: see colswarm_tables::fuzzing::fuzz_gittables_parquet. With
//! `COLSWARM_FUZZ_SEEDS=<dir>` set, it first writes small parquet seeds into `<dir>`.
//!
//! The GitTables reader runs the parquet decoder under a guard that turns its panics (the parquet
//! crate still panics on some corrupt pages) into `TableError::Parquet`. libFuzzer's panic hook
//! aborts before any unwinding, so this target's hook lets panics inside the guard unwind to it,
//! printing each distinct one once (`caught parquet panic at …`); every other panic still
//! aborts and is a crash.
#![no_main]

use std::collections::HashSet;
use std::sync::Mutex;

use colswarm_tables::fuzzing::{fuzz_gittables_parquet, gittables_parquet_seeds};
use colswarm_tables::gittables::in_guarded_decoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        if let Some(dir) = std::env::var_os("COLSWARM_FUZZ_SEEDS") {
            let dir = std::path::PathBuf::from(dir);
            let _ = std::fs::create_dir_all(&dir);
            for (i, seed) in gittables_parquet_seeds().iter().enumerate() {
                let _ = std::fs::write(dir.join(format!("seed-{i}.parquet")), seed);
            }
        }
        let aborting = std::panic::take_hook();
        let seen = Mutex::new(HashSet::new());
        std::panic::set_hook(Box::new(move |info| {
            if !in_guarded_decoder() {
                aborting(info);
                return;
            }
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            if seen.lock().is_ok_and(|mut seen| seen.insert(at.clone())) {
                eprintln!("caught parquet panic at {at}: {info}");
            }
        }));
    },
    |data: &[u8]| {
        fuzz_gittables_parquet(data);
    }
);
