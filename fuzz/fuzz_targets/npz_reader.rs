//! The `.npz` reader on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    byoc_ir::memory::with_budget(Some(64 << 20), || {
        let path = std::path::Path::new("fuzz.npz");
        let _ = byoc_artifact::io::read_npz_from(std::io::Cursor::new(data), path, &Default::default());
    });
});
