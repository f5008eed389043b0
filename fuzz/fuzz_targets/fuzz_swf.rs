//! Fuzzes the swf reader: see igemu::fuzzing::check_swf.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| igemu::fuzzing::check_swf(data));
