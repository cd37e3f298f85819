//! The C table in-process: the built-in reference runtime exported through the SDK's
//! slots, tables shorter than 2.0's refused, options carried to `deserialize`.

use std::path::Path;
use std::sync::OnceLock;

use crate::plugin::{LoadedPlugin, ReferenceRuntime};
use byoc_ir::tensor::Tensor;
use byoc_sdk::abi::*;
use byoc_sdk::prelude::*;
use byoc_sdk::{FunctionForm, PluginError};

struct ReferenceExport;

impl Export for ReferenceExport {
    type Plugin = ReferenceRuntime;
    fn instance() -> &'static Exported<ReferenceRuntime> {
        static CELL: OnceLock<Exported<ReferenceRuntime>> = OnceLock::new();
        CELL.get_or_init(|| Exported::new::<ReferenceExport>(ReferenceRuntime))
    }
}

#[test]
fn a_whole_table_widens_to_itself_and_a_shorter_one_is_refused() {
    let full = ReferenceExport::instance().table();
    assert_eq!(full.header.table_size, std::mem::size_of::<PluginVTable>());
    // SAFETY: the header heads a whole table.
    let same = unsafe { PluginVTable::widen(&full.header) }.expect("a full table");
    assert!(same.emit_source.is_some());
    assert_eq!(same.describe as usize, full.describe as usize);

    let mut short = std::mem::MaybeUninit::<PluginHeader>::uninit();
    // SAFETY: only the header is read when the size is below 2.0's.
    let short = unsafe {
        std::ptr::copy_nonoverlapping(
            (full as *const PluginVTable).cast::<PluginHeader>(),
            short.as_mut_ptr(),
            1,
        );
        (*short.as_mut_ptr()).table_size = TABLE_SIZE_2_0 - 8;
        short.assume_init()
    };
    // SAFETY: as above.
    assert!(unsafe { PluginVTable::widen(&short) }.is_none());
}

const FUNCTION: &str = "def @ref_0(%x: Tensor[(4), float32], Compiler=\"ref\", global_symbol=\"ref_0\", Primitive=1) {\n  add(%x, const((4), float32, [1f, 2f, 3f, 4f]))\n}\n";

#[test]
fn a_function_compiles_and_runs_across_the_table() {
    let t = &ReferenceExport::instance().table();
    let plugin = LoadedPlugin::from_table(t, Path::new("ref.so")).unwrap();
    let f = PartitionedFunction::from_text(FUNCTION).unwrap();
    let m = plugin.compile(&f, &CompileOptions::new()).unwrap();
    let x = Tensor::from_vec(vec![4], vec![1.0f32; 4]).unwrap();
    let mut y = Tensor::from_vec(vec![4], vec![0.0f32; 4]).unwrap();
    m.run(&[x.view()], &mut [y.view_mut()]).unwrap();
    assert_eq!(y.as_slice::<f32>().unwrap(), [2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn optimize_answers_in_the_form_it_was_sent() {
    let t = &ReferenceExport::instance().table();
    let f = PartitionedFunction::from_text(FUNCTION).unwrap();
    for form in [FunctionForm::Text, FunctionForm::Record] {
        let sent = f.to_bytes(form).unwrap();
        let mut buf = OwnedBuf::EMPTY;
        // SAFETY: the bytes outlive the call; the slot fills the buffer.
        let status = unsafe { (t.optimize)(StrView::of(&sent), &mut buf) };
        // SAFETY: filled by the slot, released right after.
        let answer = unsafe { buf.bytes() }.to_vec();
        // SAFETY: the buffer came from this table and is released once.
        unsafe { (t.release_buf)(buf) };
        assert_eq!(status, STATUS_OK, "{}", String::from_utf8_lossy(&answer));
        let (back, got) = PartitionedFunction::from_bytes(&answer).unwrap();
        assert_eq!(got, form);
        byoc_ir::structural_eq_function(&f.function, &back.function).unwrap();
    }
}

/// A plugin whose `deserialize` fails with the options it received.
struct Echo;

impl Plugin for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn version(&self) -> &str {
        "1.0.0"
    }
    fn describe(&self) -> TargetDescription {
        TargetDescription::new("echo")
    }
    fn compile(
        &self,
        _: &PartitionedFunction,
        _: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        Err(PluginError::new("echo compiles nothing"))
    }
    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        Err(PluginError::new(format!(
            "{} byte(s) with {:?}",
            bytes.len(),
            options.values
        )))
    }
}

struct EchoExport;

impl Export for EchoExport {
    type Plugin = Echo;
    fn instance() -> &'static Exported<Echo> {
        static CELL: OnceLock<Exported<Echo>> = OnceLock::new();
        CELL.get_or_init(|| Exported::new::<EchoExport>(Echo))
    }
}

#[test]
fn deserialize_carries_the_options() {
    let options = CompileOptions::new().with(byoc_sdk::THREADS_OPTION, "3");
    let t = &EchoExport::instance().table();
    let plugin = LoadedPlugin::from_table(t, Path::new("echo.so")).unwrap();
    let err = plugin.deserialize(b"abc", &options).err().unwrap();
    assert_eq!(err.to_string(), r#"3 byte(s) with {"threads": "3"}"#);
}
