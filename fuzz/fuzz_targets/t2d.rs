//! Fuzz target: see colswarm_tables::fuzzing::fuzz_t2d.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    colswarm_tables::fuzzing::fuzz_t2d(data);
});
