//! Fuzzes the run_file reader: see igemu::fuzzing::check_run_file.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| igemu::fuzzing::check_run_file(data));
