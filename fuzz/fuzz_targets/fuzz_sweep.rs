//! Fuzzes the sweep reader: see igemu::fuzzing::check_sweep.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| igemu::fuzzing::check_sweep(data));
