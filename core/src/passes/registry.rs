//! The passes that can be named on the command line, in one declarative list.
//!
//! Each entry gives the kebab-case name, a one-line summary, and how to build the pass with
//! default options. Passes that need inputs (`bind-params` needs the tensors) are listed so
//! their names validate, but are built by code that has those inputs.

#[cfg(feature = "executor")]
use super::FoldConstant;
use super::{
    DeadCodeElimination, FoldScaleAxis, HostFuse, InferType, Pass, PassError, SimplifyInference,
};

/// A pass known by name.
#[derive(Clone, Copy, Debug)]
pub struct PassInfo {
    /// The kebab-case name (`fold-constant`).
    pub name: &'static str,
    /// What the pass does, in one line.
    pub summary: &'static str,
    create: Option<fn() -> Box<dyn Pass>>,
}

impl PassInfo {
    /// Builds the pass with default options, or says that it needs arguments.
    pub fn create(&self) -> Result<Box<dyn Pass>, PassError> {
        self.create
            .map(|make| make())
            .ok_or(PassError::NeedsArguments(self.name))
    }
}

fn boxed<P: Pass + Default + 'static>() -> Box<dyn Pass> {
    Box::new(P::default())
}

macro_rules! passes {
    ($($(#[$cfg:meta])* $name:literal => $summary:literal, $create:expr;)*) => {
        /// Every core pass that has a command-line name, in pipeline order.
        pub const PASSES: &[PassInfo] = &[
            $($(#[$cfg])* PassInfo { name: $name, summary: $summary, create: $create },)*
        ];
    };
}

passes! {
    "infer-type" => "infer the type of every expression", Some(boxed::<InferType>);
    "bind-params" => "replace @main parameters by constant tensors, by name", None;
    "change-datatype" => "change every value of one dtype to another (float32 to a custom datatype)", None;
    "simplify-inference" => "rewrite nn.batch_norm, nn.dropout and nn.layer_norm for inference",
        Some(boxed::<SimplifyInference>);
    "fold-scale-axis" => "fold per-channel constant scales after nn.conv2d / nn.dense into the weights",
        Some(boxed::<FoldScaleAxis>);
    #[cfg(feature = "executor")]
    "fold-constant" => "evaluate op calls whose arguments are all constants",
        Some(boxed::<FoldConstant>);
    "dead-code-elimination" => "drop unused expressions and uncalled global functions",
        Some(boxed::<DeadCodeElimination>);
    "host-fuse" => "group elementwise/broadcast host ops of @main into fused functions for the host code generator",
        Some(boxed::<HostFuse>);
}

/// The pass called `name`.
pub fn lookup_pass(name: &str) -> Result<&'static PassInfo, PassError> {
    PASSES
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| PassError::UnknownPass {
            name: name.to_string(),
            known: PASSES.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
        })
}

/// Builds the pass called `name` with default options.
pub fn create_pass(name: &str) -> Result<Box<dyn Pass>, PassError> {
    lookup_pass(name)?.create()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::BindParams;

    #[test]
    fn names_are_unique_and_match_the_passes() {
        for (i, info) in PASSES.iter().enumerate() {
            assert!(PASSES[..i].iter().all(|p| p.name != info.name));
            if let Ok(pass) = info.create() {
                assert_eq!(pass.name(), info.name);
            }
        }
        let bind = BindParams::new(Default::default());
        assert_eq!(lookup_pass(bind.name()).map(|p| p.name), Ok("bind-params"));
    }
}
