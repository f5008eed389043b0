//! Fuzzes the topology reader: see igemu::fuzzing::check_topology.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| igemu::fuzzing::check_topology(data));
