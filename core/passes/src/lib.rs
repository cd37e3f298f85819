//! Module-to-module passes of the core: the pass infrastructure, type inference, the
//! prepare passes and the BYOC partitioning passes (AnnotateTarget, MergeCompilerRegions,
//! PartitionGraph, Prune). MergeComposite, the first BYOC pass, lives in `byoc-patterns`.

pub mod annotate_target;
mod bind_params;
mod change_datatype;
mod context;
mod dead_code;
mod fold_batch_norm;
mod fold_constant;
mod fold_scale_axis;
pub mod host_fuse;
mod infer_type;
mod manager;
pub mod merge_compiler_regions;
pub mod partition_graph;
mod partitioning;
mod pass;
pub mod prune;
pub mod quantize;
mod registry;
mod simplify_inference;
mod split_slices;

pub use bind_params::BindParams;
pub use change_datatype::ChangeDatatype;
pub use context::{DeclinedMatch, PassContext, PassTiming, Remark};
pub use dead_code::{eliminate_dead_code, DeadCodeElimination};
pub use fold_constant::FoldConstant;
pub use fold_scale_axis::FoldScaleAxis;
pub use host_fuse::HostFuse;
pub use infer_type::InferType;
pub use manager::{run_pass, verify, PassManager, PrintSink, AFTER, BEFORE};
pub use partitioning::PartitionError;
pub use pass::{Pass, PassError};
pub use quantize::{CalibrateMode, QConfig, Quantize};
pub use registry::create_pass;
pub use simplify_inference::SimplifyInference;
