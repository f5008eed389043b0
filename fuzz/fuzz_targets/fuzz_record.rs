//! Fuzzes the record reader: see igemu::fuzzing::check_record.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| igemu::fuzzing::check_record(data));
