//! Fuzzes the trace reader: see igemu::fuzzing::check_trace.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| igemu::fuzzing::check_trace(data));
