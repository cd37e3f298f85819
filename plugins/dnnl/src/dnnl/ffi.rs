//! Raw FFI to the subset of the oneDNN 2.6 C API (`oneapi/dnnl/dnnl.h`) this plugin uses.
//!
//! Checked in by hand instead of generated at build time (see docs/decisions.md): function
//! signatures, enum values and struct layouts are copied from Debian's `libdnnl-dev` 2.6.3
//! headers. Enums are plain integer constants (a value outside a Rust enum would be UB). The
//! memory descriptor is spelled out field by field (its layout is checked by a test); op
//! descriptors are only ever written by `*_desc_init` and read by oneDNN, so they are one
//! opaque, large enough, 8-aligned buffer ([`OpDesc`]).

#![allow(
    non_camel_case_types,
    non_upper_case_globals,
    missing_docs,
    reason = "C names and values, documented in dnnl.h"
)]

use std::ffi::{c_char, c_int, c_uint, c_void};

pub type dnnl_status_t = c_int;
pub type dnnl_dim_t = i64;
pub const DNNL_MAX_NDIMS: usize = 12;
pub type dnnl_dims_t = [dnnl_dim_t; DNNL_MAX_NDIMS];
pub type dnnl_data_type_t = c_int;
pub type dnnl_format_kind_t = c_int;
pub type dnnl_format_tag_t = c_int;
pub type dnnl_prop_kind_t = c_int;
pub type dnnl_alg_kind_t = c_int;
pub type dnnl_query_t = c_int;
pub type dnnl_engine_kind_t = c_int;
pub type dnnl_scratchpad_mode_t = c_int;
pub type dnnl_cpu_isa_t = c_int;

// dnnl_status_t
pub const dnnl_success: dnnl_status_t = 0;
pub const dnnl_out_of_memory: dnnl_status_t = 1;
pub const dnnl_invalid_arguments: dnnl_status_t = 2;
pub const dnnl_unimplemented: dnnl_status_t = 3;
pub const dnnl_iterator_ends: dnnl_status_t = 4;
pub const dnnl_runtime_error: dnnl_status_t = 5;
pub const dnnl_not_required: dnnl_status_t = 6;

pub const dnnl_bf16: dnnl_data_type_t = 2;
pub const dnnl_f32: dnnl_data_type_t = 3;
pub const dnnl_s32: dnnl_data_type_t = 4;
pub const dnnl_s8: dnnl_data_type_t = 5;
pub const dnnl_u8: dnnl_data_type_t = 6;
pub const dnnl_a: dnnl_format_tag_t = 2;
pub const dnnl_format_tag_any: dnnl_format_tag_t = 1;
// 4-D, channels (axis 1) in blocks of 16 / 8 (`nChw16c`, `nChw8c`).
pub const dnnl_aBcd16b: dnnl_format_tag_t = 69;
pub const dnnl_aBcd8b: dnnl_format_tag_t = 93;
pub const dnnl_blocked: dnnl_format_kind_t = 2;
pub const dnnl_cpu: dnnl_engine_kind_t = 1;
pub const dnnl_scratchpad_mode_user: dnnl_scratchpad_mode_t = 1;
pub const dnnl_stream_default_flags: c_uint = 1;
pub const dnnl_forward_inference: dnnl_prop_kind_t = 96;

// dnnl_cpu_isa_t: bit sets, each ISA includes the bits of those it extends.
pub const dnnl_cpu_isa_avx2: dnnl_cpu_isa_t = 0x7;
pub const dnnl_cpu_isa_avx512_core: dnnl_cpu_isa_t = 0x27;
pub const dnnl_cpu_isa_avx512_core_vnni: dnnl_cpu_isa_t = 0x67;
pub const dnnl_cpu_isa_avx512_core_bf16: dnnl_cpu_isa_t = 0xe7;
pub const dnnl_cpu_isa_avx512_core_amx: dnnl_cpu_isa_t = 0x3e7;
pub const dnnl_cpu_isa_avx2_vnni: dnnl_cpu_isa_t = 0x407;

// dnnl_query_t
pub const dnnl_query_impl_info_str: dnnl_query_t = 8;
pub const dnnl_query_src_md: dnnl_query_t = 129;
pub const dnnl_query_weights_md: dnnl_query_t = 131;
pub const dnnl_query_dst_md: dnnl_query_t = 133;
pub const dnnl_query_scratchpad_md: dnnl_query_t = 136;

// dnnl_alg_kind_t
pub const dnnl_convolution_direct: dnnl_alg_kind_t = 0x1;
pub const dnnl_deconvolution_direct: dnnl_alg_kind_t = 0xa;
pub const dnnl_eltwise_relu: dnnl_alg_kind_t = 0x1f;
pub const dnnl_eltwise_tanh: dnnl_alg_kind_t = 0x2f;
pub const dnnl_eltwise_abs: dnnl_alg_kind_t = 0x5f;
pub const dnnl_eltwise_sqrt: dnnl_alg_kind_t = 0x6f;
pub const dnnl_eltwise_linear: dnnl_alg_kind_t = 0x7f;
pub const dnnl_eltwise_logistic: dnnl_alg_kind_t = 0xaf;
pub const dnnl_eltwise_exp: dnnl_alg_kind_t = 0xbf;
pub const dnnl_eltwise_swish: dnnl_alg_kind_t = 0xdf;
pub const dnnl_eltwise_log: dnnl_alg_kind_t = 0xef;
pub const dnnl_eltwise_clip: dnnl_alg_kind_t = 0xff;
pub const dnnl_eltwise_gelu_erf: dnnl_alg_kind_t = 0x30;
pub const dnnl_eltwise_round: dnnl_alg_kind_t = 0x40;
pub const dnnl_pooling_max: dnnl_alg_kind_t = 0x1ff;
pub const dnnl_pooling_avg_include_padding: dnnl_alg_kind_t = 0x2ff;
pub const dnnl_pooling_avg_exclude_padding: dnnl_alg_kind_t = 0x3ff;
pub const dnnl_lrn_across_channels: dnnl_alg_kind_t = 0xaff;
pub const dnnl_binary_add: dnnl_alg_kind_t = 0x1fff0;
pub const dnnl_binary_mul: dnnl_alg_kind_t = 0x1fff1;

// dnnl_normalization_flags_t
pub const dnnl_use_global_stats: c_uint = 0x1;
pub const dnnl_use_scale: c_uint = 0x8;
pub const dnnl_use_shift: c_uint = 0x10;

// execution argument ids (DNNL_ARG_*)
pub const DNNL_ARG_SRC: c_int = 1;
pub const DNNL_ARG_SRC_1: c_int = 2;
pub const DNNL_ARG_DST: c_int = 17;
pub const DNNL_ARG_WEIGHTS: c_int = 33;
pub const DNNL_ARG_BIAS: c_int = 41;
pub const DNNL_ARG_MEAN: c_int = 49;
pub const DNNL_ARG_VARIANCE: c_int = 50;
pub const DNNL_ARG_SCALE: c_int = 51;
pub const DNNL_ARG_SHIFT: c_int = 52;
pub const DNNL_ARG_SCRATCHPAD: c_int = 80;
pub const DNNL_ARG_MULTIPLE_SRC: c_int = 1024;
/// `DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE`: post-op `i`'s arguments are
/// `(i + 1) * base | DNNL_ARG_SRC_1`.
pub const DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE: c_int = 16384;

/// `dnnl_blocking_desc_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dnnl_blocking_desc_t {
    pub strides: dnnl_dims_t,
    pub inner_nblks: c_int,
    pub inner_blks: dnnl_dims_t,
    pub inner_idxs: dnnl_dims_t,
}

/// `dnnl_memory_desc_t`'s `format_desc` union; only the blocking member is read.
#[repr(C)]
#[derive(Clone, Copy)]
pub union dnnl_format_desc_t {
    pub blocking: dnnl_blocking_desc_t,
    /// The largest member (`dnnl_rnn_packed_desc_t`) is 296 bytes, as the blocking one.
    pub bytes: [u8; 296],
}

/// `dnnl_memory_extra_desc_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dnnl_memory_extra_desc_t {
    pub flags: u64,
    pub compensation_mask: c_int,
    pub scale_adjust: f32,
    pub asymm_compensation_mask: c_int,
    pub reserved: [c_char; 60],
}

/// `dnnl_memory_desc_t` (a plain struct in oneDNN 2.x).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dnnl_memory_desc_t {
    pub ndims: c_int,
    pub dims: dnnl_dims_t,
    pub data_type: dnnl_data_type_t,
    pub padded_dims: dnnl_dims_t,
    pub padded_offsets: dnnl_dims_t,
    pub offset0: dnnl_dim_t,
    pub format_kind: dnnl_format_kind_t,
    pub format_desc: dnnl_format_desc_t,
    pub extra: dnnl_memory_extra_desc_t,
}

/// Storage for any op descriptor (`dnnl_convolution_desc_t` is the largest used, 5976 bytes).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct OpDesc(pub [u8; 6144]);

/// `dnnl_exec_arg_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dnnl_exec_arg_t {
    pub arg: c_int,
    pub memory: dnnl_memory_t,
}

macro_rules! opaque {
    ($($name:ident => $ptr:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
        pub type $ptr = *mut $name;
    )*};
}

opaque! {
    dnnl_engine => dnnl_engine_t,
    dnnl_stream => dnnl_stream_t,
    dnnl_memory => dnnl_memory_t,
    dnnl_primitive_desc => dnnl_primitive_desc_t,
    dnnl_primitive => dnnl_primitive_t,
    dnnl_primitive_attr => dnnl_primitive_attr_t,
    dnnl_post_ops => dnnl_post_ops_t,
}

/// `dnnl_version_t`.
#[repr(C)]
#[derive(Debug)]
pub struct dnnl_version_t {
    pub major: c_int,
    pub minor: c_int,
    pub patch: c_int,
    pub hash: *const c_char,
    pub cpu_runtime: c_uint,
    pub gpu_runtime: c_uint,
}

// libdnnl (linked by build.rs).
extern "C" {
    pub fn dnnl_version() -> *const dnnl_version_t;
    pub fn dnnl_get_effective_cpu_isa() -> dnnl_cpu_isa_t;
    pub fn dnnl_engine_create(
        engine: *mut dnnl_engine_t,
        kind: dnnl_engine_kind_t,
        index: usize,
    ) -> dnnl_status_t;
    pub fn dnnl_engine_destroy(engine: dnnl_engine_t) -> dnnl_status_t;
    pub fn dnnl_stream_create(
        stream: *mut dnnl_stream_t,
        engine: dnnl_engine_t,
        flags: c_uint,
    ) -> dnnl_status_t;
    pub fn dnnl_stream_wait(stream: dnnl_stream_t) -> dnnl_status_t;
    pub fn dnnl_stream_destroy(stream: dnnl_stream_t) -> dnnl_status_t;

    pub fn dnnl_memory_desc_init_by_tag(
        md: *mut dnnl_memory_desc_t,
        ndims: c_int,
        dims: *const dnnl_dim_t,
        data_type: dnnl_data_type_t,
        tag: dnnl_format_tag_t,
    ) -> dnnl_status_t;
    pub fn dnnl_memory_desc_init_by_strides(
        md: *mut dnnl_memory_desc_t,
        ndims: c_int,
        dims: *const dnnl_dim_t,
        data_type: dnnl_data_type_t,
        strides: *const dnnl_dim_t,
    ) -> dnnl_status_t;
    pub fn dnnl_memory_desc_equal(
        lhs: *const dnnl_memory_desc_t,
        rhs: *const dnnl_memory_desc_t,
    ) -> c_int;
    pub fn dnnl_memory_desc_get_size(md: *const dnnl_memory_desc_t) -> usize;
    pub fn dnnl_memory_create(
        memory: *mut dnnl_memory_t,
        md: *const dnnl_memory_desc_t,
        engine: dnnl_engine_t,
        handle: *mut c_void,
    ) -> dnnl_status_t;
    pub fn dnnl_memory_set_data_handle(memory: dnnl_memory_t, handle: *mut c_void)
        -> dnnl_status_t;
    pub fn dnnl_memory_destroy(memory: dnnl_memory_t) -> dnnl_status_t;

    pub fn dnnl_post_ops_create(post_ops: *mut dnnl_post_ops_t) -> dnnl_status_t;
    pub fn dnnl_post_ops_destroy(post_ops: dnnl_post_ops_t) -> dnnl_status_t;
    pub fn dnnl_post_ops_append_sum(post_ops: dnnl_post_ops_t, scale: f32) -> dnnl_status_t;
    pub fn dnnl_post_ops_append_eltwise(
        post_ops: dnnl_post_ops_t,
        scale: f32,
        alg: dnnl_alg_kind_t,
        alpha: f32,
        beta: f32,
    ) -> dnnl_status_t;
    pub fn dnnl_post_ops_append_binary(
        post_ops: dnnl_post_ops_t,
        alg: dnnl_alg_kind_t,
        src1: *const dnnl_memory_desc_t,
    ) -> dnnl_status_t;
    pub fn dnnl_primitive_attr_create(attr: *mut dnnl_primitive_attr_t) -> dnnl_status_t;
    pub fn dnnl_primitive_attr_destroy(attr: dnnl_primitive_attr_t) -> dnnl_status_t;
    pub fn dnnl_primitive_attr_set_post_ops(
        attr: dnnl_primitive_attr_t,
        post_ops: dnnl_post_ops_t,
    ) -> dnnl_status_t;
    pub fn dnnl_primitive_attr_set_scratchpad_mode(
        attr: dnnl_primitive_attr_t,
        mode: dnnl_scratchpad_mode_t,
    ) -> dnnl_status_t;
    pub fn dnnl_primitive_attr_set_output_scales(
        attr: dnnl_primitive_attr_t,
        count: dnnl_dim_t,
        mask: c_int,
        scales: *const f32,
    ) -> dnnl_status_t;

    pub fn dnnl_primitive_desc_create(
        pd: *mut dnnl_primitive_desc_t,
        op_desc: *const c_void,
        attr: dnnl_primitive_attr_t,
        engine: dnnl_engine_t,
        hint: dnnl_primitive_desc_t,
    ) -> dnnl_status_t;
    pub fn dnnl_primitive_desc_destroy(pd: dnnl_primitive_desc_t) -> dnnl_status_t;
    pub fn dnnl_primitive_desc_query(
        pd: dnnl_primitive_desc_t,
        what: dnnl_query_t,
        index: c_int,
        result: *mut c_void,
    ) -> dnnl_status_t;
    pub fn dnnl_primitive_desc_query_md(
        pd: dnnl_primitive_desc_t,
        what: dnnl_query_t,
        index: c_int,
    ) -> *const dnnl_memory_desc_t;
    pub fn dnnl_reorder_primitive_desc_create(
        pd: *mut dnnl_primitive_desc_t,
        src: *const dnnl_memory_desc_t,
        src_engine: dnnl_engine_t,
        dst: *const dnnl_memory_desc_t,
        dst_engine: dnnl_engine_t,
        attr: dnnl_primitive_attr_t,
    ) -> dnnl_status_t;
    pub fn dnnl_concat_primitive_desc_create(
        pd: *mut dnnl_primitive_desc_t,
        dst: *const dnnl_memory_desc_t,
        n: c_int,
        axis: c_int,
        srcs: *const dnnl_memory_desc_t,
        attr: dnnl_primitive_attr_t,
        engine: dnnl_engine_t,
    ) -> dnnl_status_t;
    pub fn dnnl_primitive_create(
        primitive: *mut dnnl_primitive_t,
        pd: dnnl_primitive_desc_t,
    ) -> dnnl_status_t;
    pub fn dnnl_primitive_execute(
        primitive: dnnl_primitive_t,
        stream: dnnl_stream_t,
        nargs: c_int,
        args: *const dnnl_exec_arg_t,
    ) -> dnnl_status_t;
    pub fn dnnl_primitive_destroy(primitive: dnnl_primitive_t) -> dnnl_status_t;

    pub fn dnnl_dilated_convolution_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        alg: dnnl_alg_kind_t,
        src: *const dnnl_memory_desc_t,
        weights: *const dnnl_memory_desc_t,
        bias: *const dnnl_memory_desc_t,
        dst: *const dnnl_memory_desc_t,
        strides: *const dnnl_dim_t,
        dilates: *const dnnl_dim_t,
        padding_l: *const dnnl_dim_t,
        padding_r: *const dnnl_dim_t,
    ) -> dnnl_status_t;
    pub fn dnnl_dilated_deconvolution_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        alg: dnnl_alg_kind_t,
        src: *const dnnl_memory_desc_t,
        weights: *const dnnl_memory_desc_t,
        bias: *const dnnl_memory_desc_t,
        dst: *const dnnl_memory_desc_t,
        strides: *const dnnl_dim_t,
        dilates: *const dnnl_dim_t,
        padding_l: *const dnnl_dim_t,
        padding_r: *const dnnl_dim_t,
    ) -> dnnl_status_t;
    pub fn dnnl_inner_product_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        src: *const dnnl_memory_desc_t,
        weights: *const dnnl_memory_desc_t,
        bias: *const dnnl_memory_desc_t,
        dst: *const dnnl_memory_desc_t,
    ) -> dnnl_status_t;
    pub fn dnnl_matmul_desc_init(
        desc: *mut OpDesc,
        src: *const dnnl_memory_desc_t,
        weights: *const dnnl_memory_desc_t,
        bias: *const dnnl_memory_desc_t,
        dst: *const dnnl_memory_desc_t,
    ) -> dnnl_status_t;
    pub fn dnnl_eltwise_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        alg: dnnl_alg_kind_t,
        data: *const dnnl_memory_desc_t,
        alpha: f32,
        beta: f32,
    ) -> dnnl_status_t;
    pub fn dnnl_binary_desc_init(
        desc: *mut OpDesc,
        alg: dnnl_alg_kind_t,
        src0: *const dnnl_memory_desc_t,
        src1: *const dnnl_memory_desc_t,
        dst: *const dnnl_memory_desc_t,
    ) -> dnnl_status_t;
    pub fn dnnl_batch_normalization_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        data: *const dnnl_memory_desc_t,
        epsilon: f32,
        flags: c_uint,
    ) -> dnnl_status_t;
    pub fn dnnl_layer_normalization_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        data: *const dnnl_memory_desc_t,
        stat: *const dnnl_memory_desc_t,
        epsilon: f32,
        flags: c_uint,
    ) -> dnnl_status_t;
    pub fn dnnl_pooling_v2_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        alg: dnnl_alg_kind_t,
        src: *const dnnl_memory_desc_t,
        dst: *const dnnl_memory_desc_t,
        strides: *const dnnl_dim_t,
        kernel: *const dnnl_dim_t,
        dilation: *const dnnl_dim_t,
        padding_l: *const dnnl_dim_t,
        padding_r: *const dnnl_dim_t,
    ) -> dnnl_status_t;
    pub fn dnnl_shuffle_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        data: *const dnnl_memory_desc_t,
        axis: c_int,
        group_size: dnnl_dim_t,
    ) -> dnnl_status_t;
    pub fn dnnl_lrn_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        alg: dnnl_alg_kind_t,
        data: *const dnnl_memory_desc_t,
        local_size: dnnl_dim_t,
        alpha: f32,
        beta: f32,
        k: f32,
    ) -> dnnl_status_t;
    pub fn dnnl_softmax_forward_desc_init(
        desc: *mut OpDesc,
        prop: dnnl_prop_kind_t,
        data: *const dnnl_memory_desc_t,
        axis: c_int,
    ) -> dnnl_status_t;
}

// libgomp, the OpenMP runtime Debian's libdnnl is built with (linked by build.rs).
extern "C" {
    pub fn omp_set_num_threads(n: c_int);
    pub fn omp_get_max_threads() -> c_int;
    pub fn omp_get_thread_num() -> c_int;
    pub fn omp_get_num_threads() -> c_int;
    /// Runs `f(data)` on every thread of the calling thread's team (`num_threads` 0: the
    /// `omp_set_num_threads` count), as `#pragma omp parallel` compiles to.
    pub fn GOMP_parallel(
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
        num_threads: std::ffi::c_uint,
        flags: std::ffi::c_uint,
    );
}

#[cfg(test)]
mod tests {
    use std::mem::{align_of, offset_of, size_of};

    use super::*;

    #[test]
    fn layouts_match_the_onednn_2_6_headers() {
        // Values printed by a C program compiled against libdnnl-dev 2.6.3.
        assert_eq!(size_of::<dnnl_memory_desc_t>(), 696);
        assert_eq!(align_of::<dnnl_memory_desc_t>(), 8);
        assert_eq!(offset_of!(dnnl_memory_desc_t, data_type), 104);
        assert_eq!(offset_of!(dnnl_memory_desc_t, offset0), 304);
        assert_eq!(offset_of!(dnnl_memory_desc_t, format_kind), 312);
        assert_eq!(offset_of!(dnnl_memory_desc_t, format_desc), 320);
        assert_eq!(offset_of!(dnnl_memory_desc_t, extra), 616);
        assert_eq!(size_of::<dnnl_blocking_desc_t>(), 296);
        assert_eq!(size_of::<dnnl_memory_extra_desc_t>(), 80);
        assert_eq!(size_of::<dnnl_exec_arg_t>(), 16);
        assert!(size_of::<OpDesc>() >= 5976);
    }
}
