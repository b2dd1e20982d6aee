//! Arbitrary bytes as a worker's stdin: the frame codec, both parse paths and dispatch.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    paperclip_sandbox_sdk::testing::fuzz::serve_bytes(data);
});
