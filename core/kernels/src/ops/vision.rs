//! Host kernels of the vision ops: the kernel half of [`byoc_ir::ops::vision`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::vision::*;

use {
    super::support::check_io,
    crate::nms,
    crate::{HostKernel, KernelError, KernelSpec},
};

/// A tensor-access error inside a kernel whose types were checked: a wiring mistake.
fn wiring(e: impl std::fmt::Display) -> KernelError {
    KernelError::new("kernel", e.to_string())
}

impl KernelBuilder for GetValidCounts {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 2, 3)?;
        let (geo, id, score) = spec.with_type_ctx(valid_counts_setup)?;
        Ok(crate::kernel(
            spec.op,
            spec.inputs,
            spec.outputs,
            move |ins, outs, _| {
                let data = crate::input::<f32>(ins, 0)?;
                let threshold = crate::input::<f32>(ins, 1)?[0];
                let [count, boxes, indices] = outs else {
                    return Err(KernelError::new(
                        "vision.get_valid_counts",
                        "needs 3 outputs",
                    ));
                };
                nms::get_valid_counts(
                    geo,
                    data,
                    threshold,
                    id,
                    score,
                    count.as_slice_mut::<i32>().map_err(wiring)?,
                    boxes.as_slice_mut::<f32>().map_err(wiring)?,
                    indices.as_slice_mut::<i32>().map_err(wiring)?,
                );
                Ok(())
            },
        ))
    }
}

impl KernelBuilder for NonMaxSuppression {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (geo, attrs) = spec.with_type_ctx(nms_setup)?;
        check_io(spec, 5, if attrs.return_indices { 2 } else { 1 })?;
        let size = geo.batch * geo.anchors;
        Ok(crate::kernel(
            spec.op,
            spec.inputs,
            spec.outputs,
            move |ins, outs, _| {
                let data = crate::input::<f32>(ins, 0)?;
                let valid_count = crate::input::<i32>(ins, 1)?;
                let indices = crate::input::<i32>(ins, 2)?;
                let max_output_size = crate::input::<i32>(ins, 3)?[0];
                let iou_threshold = crate::input::<f32>(ins, 4)?[0];
                let run = |out: &mut [f32], box_indices: &mut [i32]| {
                    nms::non_max_suppression(
                        geo,
                        &attrs,
                        data,
                        valid_count,
                        indices,
                        max_output_size,
                        iou_threshold,
                        out,
                        box_indices,
                    )
                };
                let mut box_indices = vec![0i32; size];
                if attrs.return_indices {
                    let mut boxes = vec![0f32; data.len()];
                    run(&mut boxes, &mut box_indices);
                    nms::compact_indices(geo, &mut box_indices, crate::output::<i32>(outs, 1)?);
                    crate::output::<i32>(outs, 0)?.copy_from_slice(&box_indices);
                } else {
                    let out = crate::output::<f32>(outs, 0)?;
                    run(out, &mut box_indices);
                    if attrs.invalid_to_bottom {
                        nms::boxes_to_top(geo, out);
                    }
                }
                Ok(())
            },
        ))
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<GetValidCounts>();
    builders.add::<NonMaxSuppression>();
}
