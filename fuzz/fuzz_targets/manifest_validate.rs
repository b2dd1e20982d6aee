//! Arbitrary JSON into the manifest validator, for every host profile.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    paperclip_sandbox_sdk::testing::fuzz::validate_manifest_bytes(data);
});
