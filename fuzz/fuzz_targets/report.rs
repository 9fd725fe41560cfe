//! The whole report path: any bytes as a trace file, replayed, reported in every format and exported.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = memshim_cli::fuzz_entry::report_bytes(data);
});
