//! The pattern parser on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = String::from_utf8_lossy(data).parse::<byoc_patterns::Pattern>();
});
