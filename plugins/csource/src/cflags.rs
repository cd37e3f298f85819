//! Compiler flags that would break the C ABI byoc calls a compiled partition through.
//!
//! byoc calls the entry point as `int entry(float* in.., float* out.., float* consts..)` and
//! the generated code calls the C library (`malloc`, `memcpy`, `expf`, ...) by their standard
//! declarations. A user's flag can change either side without the compiler complaining:
//! `-Dfloat=double` makes the entry read and write doubles through float buffers,
//! `-Dmalloc=...` renames the arena allocation, `-fsanitize=address` instruments the code for
//! a runtime the host never loaded. Such flags are refused before the compiler runs:
//!
//! - `-D`/`-U` of a C keyword or of any identifier the generated code uses;
//! - `-include` and `-imacros`, which can redefine anything;
//! - flags that change the calling convention or the layout of types (`-m32`, `-mx32`,
//!   `-m16`, `-mabi=`, `-mregparm=`, `-mrtd`, `-malign-double`, `-mlong-double-*`,
//!   `-fshort-enums`, `-fshort-wchar`, `-fpack-struct*`, `-fpcc-struct-return`,
//!   `-freg-struct-return`, `-ffixed-*`, `-fcall-used-*`, `-fcall-saved-*`);
//! - sanitizers (`-fsanitize=*`), whose runtime must be the first library of the process.
//!
//! Optimization, warning, target-feature and linker flags pass; a linker flag that leaves a
//! symbol undefined is caught when the module is loaded ([`crate::runtime`]).

use std::collections::BTreeSet;

/// C11 keywords: a macro of that name changes what the generated code means.
const KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_Bool",
    "_Complex",
    "_Generic",
    "_Imaginary",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
];

/// Flags that take their argument as the next word, and redefine what the code includes.
const INCLUDES: &[&str] = &["-include", "-imacros"];

/// Prefixes of flags that change the calling convention or the layout of types.
const ABI_FLAGS: &[&str] = &[
    "-m32",
    "-mx32",
    "-m16",
    "-mabi=",
    "-mregparm",
    "-mrtd",
    "-malign-double",
    "-mlong-double-",
    "-fshort-enums",
    "-fshort-wchar",
    "-fpack-struct",
    "-fpcc-struct-return",
    "-freg-struct-return",
    "-ffixed-",
    "-fcall-used-",
    "-fcall-saved-",
];

/// A refused flag and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbiFlag {
    /// The flag as given (with its argument, for the two-word forms).
    pub flag: String,
    /// Why it is refused.
    pub reason: String,
}

/// The identifiers in C source `code` (comments and strings included: over-counting only
/// refuses more macro names).
fn identifiers(code: &str) -> BTreeSet<&str> {
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .collect()
}

/// The first of `flags` that would break the ABI of the generated `code`.
pub fn check_flags(flags: &[String], code: &str) -> Result<(), AbiFlag> {
    let used = identifiers(code);
    let mut words = flags.iter();
    while let Some(flag) = words.next() {
        let refuse = |flag: String, reason: String| Err(AbiFlag { flag, reason });
        let macro_flag = ["-D", "-U"]
            .into_iter()
            .find_map(|p| flag.strip_prefix(p).map(|rest| (p, rest)));
        if let Some((prefix, rest)) = macro_flag {
            let (shown, definition) = if rest.is_empty() {
                let next = words.next().map_or("", String::as_str);
                (format!("{flag} {next}"), next)
            } else {
                (flag.clone(), rest)
            };
            let name = definition.split(['=', '(']).next().unwrap_or_default();
            let what = if prefix == "-D" {
                "defines"
            } else {
                "undefines"
            };
            if KEYWORDS.contains(&name) {
                return refuse(shown, format!("{what} the C keyword '{name}'"));
            }
            if used.contains(name) {
                return refuse(
                    shown,
                    format!("{what} '{name}', which the generated code uses"),
                );
            }
        } else if INCLUDES.contains(&flag.as_str()) {
            let next = words.next().map_or("", String::as_str);
            return refuse(
                format!("{flag} {next}"),
                "includes a file before the generated code, which can redefine its types"
                    .to_string(),
            );
        } else if let Some(abi) = ABI_FLAGS.iter().find(|p| flag.starts_with(*p)) {
            return refuse(
                flag.clone(),
                format!("{abi} changes the calling convention or the layout of types"),
            );
        } else if flag.starts_with("-fsanitize=") {
            return refuse(
                flag.clone(),
                "sanitized code needs its runtime loaded first in the process, which byoc's is not"
                    .to_string(),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODE: &str = "#include <stdlib.h>\nint entry(float* x) { float* a = malloc(4); }\n";

    fn check(flags: &str) -> Result<(), AbiFlag> {
        let flags: Vec<String> = flags.split_whitespace().map(String::from).collect();
        check_flags(&flags, CODE)
    }

    #[test]
    fn macros_of_keywords_and_of_names_the_code_uses_are_refused() {
        let e = check("-O2 -Dfloat=double").unwrap_err();
        assert_eq!(e.flag, "-Dfloat=double");
        assert_eq!(e.reason, "defines the C keyword 'float'");
        let e = check("-D malloc=my_malloc").unwrap_err();
        assert_eq!(e.flag, "-D malloc=my_malloc");
        assert_eq!(e.reason, "defines 'malloc', which the generated code uses");
        assert!(check("-Uentry").is_err());
        assert!(check("-Dentry(x)=x").is_err());
        // Macros the code never names are the user's business.
        assert_eq!(check("-DNDEBUG -DMY_TUNING=3 -UFOO"), Ok(()));
    }

    #[test]
    fn abi_changing_includes_and_sanitizers_are_refused() {
        for flags in [
            "-m32",
            "-mabi=ms",
            "-fshort-enums",
            "-fpack-struct=1",
            "-ffixed-rbx",
            "-fsanitize=address",
            "-include stdio.h",
        ] {
            assert!(check(flags).is_err(), "{flags}");
        }
        assert_eq!(
            check("-O3 -march=native -mavx2 -fno-sanitize=all -Wall -Wl,-z,now -g"),
            Ok(())
        );
    }
}
