//! One runtime, many threads: concurrent init is serialized and runs share no scratch state.

mod common;

use std::sync::Barrier;

use byoc_exec::json_host::HostProvider;
use byoc_ir::Tensor;
use byoc_json_runtime::JsonRuntime;
use common::{assert_close, fixture, run, values};

#[test]
fn threads_share_one_runtime() {
    let fx = fixture("tvm_dnnl_combined");
    let rt = JsonRuntime::new(&fx.json, HostProvider).unwrap();
    let consts = fx.constants(&rt.graph().const_names());
    // Per-thread inputs: the fixture's input, and a second input whose expected output comes
    // from a single-threaded run first.
    let other = Tensor::from_vec([1, 3, 8, 8], values(192, 99)).unwrap();
    let threads = 6;
    let barrier = Barrier::new(threads);
    let expected_other = std::sync::OnceLock::new();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (rt, consts, fx, barrier, other, expected_other) =
                (&rt, &consts, &fx, &barrier, &other, &expected_other);
            s.spawn(move || {
                barrier.wait();
                rt.init(consts).unwrap();
                let reference: &Tensor =
                    expected_other.get_or_init(|| run(rt, std::slice::from_ref(other)).remove(0));
                for i in 0..20 {
                    if (i + t) % 2 == 0 {
                        let out = run(rt, &[fx.arrays["dnnl_0_i0"].clone()]);
                        assert_close(&out[0], &fx.arrays["expected"], 1e-4, 1e-4);
                    } else {
                        let out = run(rt, std::slice::from_ref(other));
                        assert_eq!(&out[0], reference, "thread {t} run {i}");
                    }
                }
            });
        }
    });
    assert!(rt.is_initialized());
}
