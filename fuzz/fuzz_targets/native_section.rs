//! The check of native code before it loads (`byoc_sdk::native::check_shared_object`: ELF
//! class, machine, kind, every segment within the bytes, the entry exported) on arbitrary
//! bytes. The bytes are never loaded here: loading damaged code that passes the check is the
//! property test `truncated_and_symbol_damaged_native_code_is_refused_or_runs` in
//! `tests/fuzz.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = byoc_sdk::native::check_shared_object(data, &["byoc_entry"]);
});
