//! The ONNX importer on arbitrary bytes.
#![no_main]

use byoc_onnx::{import_bytes, ImportOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    byoc_ir::memory::with_budget(Some(64 << 20), || {
        let _ = import_bytes(data, &ImportOptions::default());
    });
});
