//! Fuzzes the report reader: see igemu::fuzzing::check_report.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| igemu::fuzzing::check_report(data));
