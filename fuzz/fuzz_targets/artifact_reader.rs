//! The artifact reader, and loading its partitions on the reference runtime, on arbitrary
//! bytes. (Native code is never loaded here: partitions go to the reference runtime only.)
#![no_main]

use std::sync::Arc;

use byoc_artifact::Artifact;
use byoc_exec::plugin::ReferenceRuntime;
use byoc_sdk::CompileOptions;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    byoc_ir::memory::with_budget(Some(64 << 20), || {
        if let Ok(a) = Artifact::from_bytes(data) {
            let _ = a.load_externals(
                |_| Ok::<_, String>(Arc::new(ReferenceRuntime)),
                &CompileOptions::new(),
            );
        }
    });
});
