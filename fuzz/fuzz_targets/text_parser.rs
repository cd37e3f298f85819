//! The Relay text parser and type inference on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    byoc_ir::memory::with_budget(Some(64 << 20), || {
        if let Ok(mut m) = byoc_ir::text::parse_module(&String::from_utf8_lossy(data)) {
            let _ = byoc_ir::infer_types(&mut m);
        }
    });
});
