//! Native code before and at load, on shared objects built here with the system C compiler:
//! a truncated library is refused by its segments (the dynamic loader would map pages past the
//! end of the file and fault on the first touch), and one that needs a symbol nothing defines
//! is refused at load, naming the symbol, not at its first call.

use std::path::{Path, PathBuf};
use std::process::Command;

use byoc_sdk::native::{check_shared_object, open, NativeCodeError};

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("byoc-native-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// `source` compiled as a shared object in `dir`.
fn shared_object(dir: &Path, source: &str) -> PathBuf {
    let c = dir.join("lib.c");
    let so = dir.join("lib.so");
    std::fs::write(&c, source).expect("write the source");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&so)
        .arg(&c)
        .status()
        .expect("the C compiler runs (cc)");
    assert!(status.success(), "cc failed on {source}");
    so
}

/// One past the last byte of any segment, read from the ELF64 program headers by hand
/// (e_phoff at 0x20, e_phentsize at 0x36, e_phnum at 0x38; p_offset at +0x08, p_filesz at
/// +0x20 of each entry).
fn segments_end(elf: &[u8]) -> u64 {
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().expect("8 bytes"));
    let u16_at = |o: usize| usize::from(u16::from_le_bytes([elf[o], elf[o + 1]]));
    let (phoff, size, count) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    (0..count)
        .map(|i| {
            let ph = phoff + i * size;
            u64_at(ph + 0x08) + u64_at(ph + 0x20)
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn truncated_libraries_are_refused_by_their_segments() {
    let dir = scratch("truncated");
    let so = shared_object(&dir, "int byoc_entry(void) { return 42; }\n");
    let bytes = std::fs::read(&so).expect("read the library");
    assert_eq!(check_shared_object(&bytes, &["byoc_entry"]), Ok(()));
    let mut by_segments = 0;
    for percent in [10, 30, 50, 70, 90, 99] {
        let cut = &bytes[..bytes.len() * percent / 100];
        let err =
            check_shared_object(cut, &["byoc_entry"]).expect_err("a truncated library is refused");
        assert!(
            matches!(
                err,
                NativeCodeError::Truncated { .. } | NativeCodeError::Malformed(_)
            ),
            "{percent}%: {err}"
        );
        // Without section headers (e_shoff, e_shnum, e_shstrndx zeroed, as a stripped or
        // hand-made library may be) only the program headers describe the file: the
        // segments are what refuse it.
        let mut sectionless = cut.to_vec();
        sectionless[0x28..0x30].fill(0);
        sectionless[0x3c..0x40].fill(0);
        if cut.len() as u64 >= segments_end(&bytes) {
            // Only non-loaded tables were cut: the loader needs none of them.
            assert_eq!(check_shared_object(&sectionless, &[]), Ok(()), "{percent}%");
            continue;
        }
        let err = check_shared_object(&sectionless, &[]).expect_err("refused by its segments");
        assert!(
            matches!(err, NativeCodeError::Truncated { len, .. } if len == cut.len()),
            "{percent}%: {err}"
        );
        assert!(err.to_string().contains("(the file is truncated)"), "{err}");
        by_segments += 1;
    }
    assert!(by_segments > 0, "no cut reached into the segments");
    let mut whole = bytes.clone();
    whole[0x28..0x30].fill(0);
    whole[0x3c..0x40].fill(0);
    assert_eq!(check_shared_object(&whole, &[]), Ok(()));
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn a_library_needing_an_undefined_symbol_is_refused_at_load() {
    let dir = scratch("undefined");
    let so = shared_object(
        &dir,
        "extern int byoc_no_such_function(void);\n\
         int byoc_entry(void) { return byoc_no_such_function(); }\n",
    );
    // Well-formed and exporting its entry: only loading can tell.
    let bytes = std::fs::read(&so).expect("read the library");
    assert_eq!(check_shared_object(&bytes, &["byoc_entry"]), Ok(()));
    // SAFETY: the library was compiled above from the source shown; it has no initializers.
    let err = unsafe { open(&so) }.expect_err("an unresolved symbol fails the load");
    assert!(err.to_string().contains("byoc_no_such_function"), "{err}");
    let fine = shared_object(&dir, "int byoc_entry(void) { return 42; }\n");
    // SAFETY: as above.
    let lib = unsafe { open(&fine) }.expect("a complete library loads");
    // SAFETY: the symbol is the function compiled above, of this type.
    let entry = unsafe { lib.get::<unsafe extern "C" fn() -> i32>(b"byoc_entry") }.expect("entry");
    // SAFETY: it takes no arguments and returns an int.
    assert_eq!(unsafe { entry() }, 42);
    std::fs::remove_dir_all(&dir).expect("clean up");
}
