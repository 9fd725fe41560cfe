//! The record decoder: any bytes as one well-framed payload (see `fuzz_entry::read_payload`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = memshim_trace::fuzz_entry::read_payload(data);
});
