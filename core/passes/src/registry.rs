//! The passes built by name. Which passes exist, what each does and where it runs is declared
//! once, in `byoc_ir::stages::PASSES`; this is how the ones of this crate are made with their
//! default options. A pass that needs inputs (`bind-params` needs the tensors, the BYOC
//! passes need the targets) is refused by name, and built by the code that has those inputs.

use byoc_ir::stages::{known_names, lookup};

use super::{
    DeadCodeElimination, FoldConstant, FoldScaleAxis, HostFuse, InferType, Pass, PassError,
    SimplifyInference,
};

/// Builds the pass called `name` with its default options.
pub fn create_pass(name: &str) -> Result<Box<dyn Pass>, PassError> {
    let decl = lookup(name).ok_or_else(|| PassError::UnknownPass {
        name: name.to_string(),
        known: known_names(),
    })?;
    Ok(match decl.name {
        "infer-type" => Box::new(InferType),
        "simplify-inference" => Box::new(SimplifyInference::default()),
        "fold-scale-axis" => Box::new(FoldScaleAxis),
        "fold-constant" => Box::new(FoldConstant),
        "dead-code-elimination" => Box::new(DeadCodeElimination),
        "host-fuse" => Box::new(HostFuse),
        other => return Err(PassError::NeedsArguments(other)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BindParams;
    use byoc_ir::stages::PASSES;

    #[test]
    fn every_pass_built_by_name_carries_its_declared_name() {
        let mut built = 0;
        for decl in PASSES {
            match create_pass(decl.name) {
                Ok(pass) => {
                    assert_eq!(pass.name(), decl.name);
                    built += 1;
                }
                Err(PassError::NeedsArguments(name)) => assert_eq!(name, decl.name),
                Err(e) => panic!("{}: {e}", decl.name),
            }
        }
        assert_eq!(built, 6);
        let bind = BindParams::new(Default::default());
        assert!(lookup(bind.name()).is_some());
        let err = create_pass("no-such-pass").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("fold-constant")));
    }
}
