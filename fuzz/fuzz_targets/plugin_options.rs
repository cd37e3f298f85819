//! Plugin options (`--plugin-option KEY=VALUE`, one per line of the input) as the csource and
//! vta plugins read them, then csource's check of its compiler flags against generated C.
#![no_main]

use byoc_sdk::CompileOptions;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut options = CompileOptions::new();
    for line in text.lines() {
        if let Some((key, value)) = line.split_once('=') {
            options = options.with(key, value);
        }
    }
    byoc_ir::memory::with_budget(Some(64 << 20), || {
        if let Ok(settings) = byoc_plugin_csource::Settings::from_options(&options) {
            let _ = byoc_plugin_csource::cflags::check_flags(
                &settings.compiler.flags,
                "int byoc_entry(float *in, float *out) { return 0; }",
            );
        }
        let _ = byoc_plugin_vta::plugin::Settings::from_options(&options);
        let _ = byoc_sdk::check_scopes(&options, &["csource", "vta"]);
    });
});
