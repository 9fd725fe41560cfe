//! The frame decoder: any bytes as a whole trace file.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = memshim_trace::fuzz_entry::read_trace(data);
});
