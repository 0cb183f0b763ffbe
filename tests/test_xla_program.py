"""XLA:GPU's execution of one executable (mimdsim/gpu/xla.py) and the sparse-BPTT study's own GPU program built
on it (strategy keras-rnn-xla, mimdsim/workloads/snn/baselines/keras_rnn.py), part by part."""
import dataclasses

import numpy as np
import pytest

from mimdsim import assumptions as A
from mimdsim.arch.gpu import gpu
from mimdsim.errors import ConfigError, UnsupportedModel
from mimdsim.gpu.framework import FRAMEWORKS, framework
from mimdsim.gpu.model import Kernel, kernel_seconds
from mimdsim.gpu.xla import HostCopy, Loop, kernels_per_step, step_timeline
from mimdsim.snn import Network
from mimdsim.snn.zoo import ZOO
from mimdsim.workloads.snn.baselines import keras_rnn
from mimdsim.workloads.snn.baselines.gpu_kernels import estimate

A100 = gpu("a100-40gb")
FW = framework("tensorflow-keras-xla")


def runtime(**fields):
    return dataclasses.replace(FW, step_call_s=0.0, **fields)


def tiny(name="k", phase="forward", count=1, nbytes=8.0):
    return Kernel(name, phase, "vector", 1.0, nbytes, count)


def test_the_framework_preset_holds_the_registry_values():
    for a in A.REGISTRY.values():
        if a.kind == "framework":
            for p in a.presets:
                assert float(getattr(FRAMEWORKS[p], a.field)) == a.value, (a.name, p)


def test_a_for_thunk_never_waits_and_is_bound_by_the_slower_stream():
    k = tiny()
    d = kernel_seconds(k, A100, "fp32")
    for issue, gap in ((20e-6, 1e-6), (0.5e-6, 1e-6)):  # host-bound, then device-bound
        fw = runtime(kernel_issue_s=issue, kernel_gap_s=gap)
        tl = step_timeline([Loop("loop", "forward", 100, (k,), "for")], A100, "fp32", fw)
        assert tl.host_waits == 0 and tl.kernels == 100
        # op i ends at max(host issue of i, end of i - 1) + its device time: the slower stream sets the pace
        assert tl.seconds == pytest.approx(max(100 * issue, issue + 99 * (d + gap)) + d + gap)


def test_a_while_thunk_waits_once_per_evaluation():
    k, cond = tiny("body", "backward"), tiny("cond", "backward")
    d = kernel_seconds(k, A100, "fp32")
    fw = runtime(kernel_issue_s=4e-6, kernel_gap_s=1e-6, loop_sync_s=6e-6)
    T = 10
    tl = step_timeline([Loop("loop", "backward", T, (k,), "while", (cond,))], A100, "fp32", fw)
    assert tl.host_waits == T + 1 and tl.kernels == 2 * T + 1
    # the first evaluation starts with both streams idle: cond issued and run, predicate copied, host wakes;
    # after each wait the host issues the body, then the next condition while the body runs, then waits again
    run = d + 1e-6
    first = 4e-6 + run + 6e-6
    later = max(4e-6 + run, 2 * 4e-6) + run + 6e-6
    assert tl.seconds == pytest.approx(first + T * later)
    parts = tl.summary("phase")["backward"]
    assert parts["sync"] == pytest.approx((T + 1) * 6e-6)
    # the device waited for the issue of the first condition, of every body, and of every condition the
    # host had not issued by the time the body ended
    assert parts["launch"] == pytest.approx(4e-6 + T * (4e-6 + max(0.0, 2 * 4e-6 - (4e-6 + run))))


def test_a_host_copy_is_waited_for_and_the_step_call_is_host_time():
    fw = dataclasses.replace(FW, input_bytes_per_second=10e9, step_call_s=100e-6)
    tl = step_timeline([HostCopy("in", "io", 20e6), tiny()], A100, "fp32", fw)
    io = tl.summary("phase")["io"]
    assert io["host"] == pytest.approx(100e-6 + 2e-3)
    assert tl.host_waits == 0 and tl.kernels == 1


def test_kernels_per_step_counts_loop_trips_and_condition_evaluations():
    body, cond = tiny("b", count=3), tiny("c")
    counts = {k.name: k.count for k in kernels_per_step([tiny("x"), Loop("w", "backward", 5, (body,), "while", (cond,)),
                                                        Loop("f", "forward", 5, (body,), "for", (cond,))])}
    assert counts == {"x": 1, "b": 15, "c": 6}  # the for loop's body adds to b's record below
    both = [k for k in kernels_per_step([Loop("f", "forward", 5, (body,), "for", (cond,))])]
    assert [(k.name, k.count) for k in both] == [("b", 15)]


# The HLO dumps of a re-creation of train_gpu (TF 2.10.0 and 2.12.1, CPU-XLA; docs/research/study-gpu-program.md
# §2.3), kernels per loop iteration at W = 2, 3, 4 weight layers: forward W dots, 5W+1 pushes, W add-, W-1
# select-fusions, 2W-1 copies; backward 2W-1 dots, W DUS, W divide-, 2W multiply-, 2W-1 reshape(pop)-fusions,
# W+1 adds, 5W+1 copies
DUMP = {2: (19, 28), 3: (29, 42), 4: (39, 56)}


@pytest.mark.parametrize("W", [2, 3, 4])
def test_the_loop_bodies_hold_the_kernels_of_the_hlo_dump(W):
    sizes = [70] + [64] * (W - 1) + [20]
    cpu_build = runtime(wgrad_in_gemm=0, backward_list_copies=2)  # what CPU-XLA's copy insertion keeps
    loops = {p.name: p for p in keras_rnn.step_program(sizes, 100, 8, cpu_build) if isinstance(p, Loop)}
    per_iteration = {name: sum(k.count for k in loop.body) for name, loop in loops.items()}
    assert (per_iteration["forward.time_loop"], per_iteration["backward.time_loop"]) == DUMP[W]
    dots = {name: sum(k.count for k in loop.body if k.kind == "matrix") for name, loop in loops.items()}
    assert dots == {"forward.time_loop": W, "backward.time_loop": 2 * W - 1}
    # the GPU build (default): the weight-gradient adds folded into the GEMMs, no whole-list copies
    gpu_loops = {p.name: p for p in keras_rnn.step_program(sizes, 100, 8, FW) if isinstance(p, Loop)}
    assert sum(k.count for k in gpu_loops["backward.time_loop"].body) == DUMP[W][1] - W - 2 * W


def test_the_forward_pushes_each_weight_but_the_first_every_step():
    sizes = [2312, 978, 978, 976, 10]
    loop = next(p for p in keras_rnn.step_program(sizes, 100, 48, FW) if isinstance(p, Loop))
    pushed = {k.name: k.nbytes for k in loop.body if k.name.endswith("push_weight")}
    assert pushed == {f"L{l}.fwd_push_weight": 2 * 4 * sizes[l] * sizes[l - 1] for l in (2, 3, 4)}


def study_net():
    return Network.feedforward([2312, 978, 978, 976, 10], max_activity=0.01)


def test_the_study_program_reports_its_kernels_waits_and_phases():
    r = estimate(study_net(), "a100-40gb", timesteps=100, batch_size=48, strategy="keras-rnn-xla")
    assert r.placement["framework"] == "tensorflow-keras-xla" and r.placement["precision"] == "tf32"
    assert r.placement["host_waits"] == 101 and r.placement["forward_loop"] == "ForThunk"
    assert r.placement["kernel_launches"] == sum(s["count"] for name, s in r.steps.items()
                                                 if name not in ("step.call", "input.h2d")
                                                 and not name.endswith(".predicate"))
    assert r.steps["backward.time_loop.predicate"]["count"] == 101 and "forward.loop_condition" not in r.steps
    assert set(r.cycles) >= {"io", "forward", "backward", "update"}
    assert r.cycles["backward"]["sync"] == pytest.approx(101 * FW.loop_sync_s * A100.clock_hz)
    assert r.cycles["io"]["host"] > 0 and r.energy is not None
    assert r.memory["by_category"]["loop_weight_copies"] == 4 * 100 * (978 * 978 + 978 * 976 + 976 * 10)
    # a WhileThunk forward loop adds T + 1 waits
    w = estimate(study_net(), "a100-40gb", timesteps=100, batch_size=48, strategy="keras-rnn-xla",
                 pinned=A.check({"xla_forward_loop_waits": 1}))
    assert w.placement["host_waits"] == 202 and w.seconds_per_step > r.seconds_per_step


def test_each_build_choice_moves_the_step_its_way():
    base = estimate(study_net(), "a100-40gb", timesteps=100, batch_size=48, strategy="keras-rnn-xla").seconds_per_step
    slower = {"xla_backward_list_copies": 2, "xla_wgrad_in_gemm": 0, "tf_adam_kernels_per_weight": 2,
              "xla_loop_sync_s": 12e-6, "tf_input_bytes_per_second": 5e9, "tf_step_call_s": 300e-6}
    for name, v in slower.items():
        t = estimate(study_net(), "a100-40gb", timesteps=100, batch_size=48, strategy="keras-rnn-xla",
                     pinned=A.check({name: v})).seconds_per_step
        assert t > base, name


def test_the_study_program_refuses_models_its_software_never_builds():
    net = Network.build([100, 50, 10], ZOO["synaptic"], loss="ce_count")
    with pytest.raises(UnsupportedModel, match="keras-rnn-xla.*synaptic.*compiled"):
        estimate(net, "a100-40gb", timesteps=10, batch_size=4, strategy="keras-rnn-xla")
    with pytest.raises(UnsupportedModel, match="biases"):
        estimate(Network.build([100, 50, 10], ZOO["leaky"], bias=True, loss="ce_count"), "a100-40gb", timesteps=10,
                 batch_size=4, strategy="keras-rnn-xla")


def test_a_fractional_build_choice_is_refused_not_rounded():
    with pytest.raises(ConfigError, match="backward_list_copies"):
        framework("tensorflow-keras-xla", A.check({"xla_backward_list_copies": 0.5}))


def test_the_timeline_costs_each_distinct_kernel_once(monkeypatch):
    # 100 trips of a 40-kernel body: 4,000 launches, 40 costings; the loop's repeats are index arrays
    import mimdsim.gpu.xla as xla

    calls = []
    monkeypatch.setattr(xla, "kernel_seconds", lambda k, spec, p: calls.append(k.name) or 3e-6)
    body = tuple(tiny(f"k{i}") for i in range(40))
    tl = step_timeline([Loop("f", "forward", 100, body, "for")], A100, "fp32", runtime(kernel_issue_s=1e-6))
    assert tl.kernels == 4000 and len(calls) == 40
    assert tl.seconds == pytest.approx(1e-6 + 4000 * (3e-6 + FW.kernel_gap_s))  # device-bound after the first issue


def test_the_study_comparison_example_prints_every_column_it_promises():
    # the example's own functions on a small configuration (the 12 study points are its command's job)
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "examples/finkbeiner2024_gpu_baseline.py"
    spec = importlib.util.spec_from_file_location("gpu_baseline", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    point = {"hidden_layers": 2, "max_activity": 0.1, "sizes": [200, 64, 64, 10], "capacities": [20, 6, 6, 2],
             "measured_ms_per_step": None}
    r = example.row(point, "a100-40gb", lists="half")  # a small configuration has no stored execution
    assert r["host_waits"] == 101 and r["kernels"] > 0 and r["speedup"] > 0
    assert r["speedup_band"][0] <= r["speedup"] <= r["speedup_band"][1]
    text = example.format_rows([r])
    assert "2 hidden, 10%" in text and "a100-40gb" in text and f"{r['kernels']:,}" in text


def test_compare_lists_the_study_program_as_refused_for_a_model_it_cannot_be():
    from mimdsim import compare

    net = Network.build([100, 50, 10], ZOO["synaptic"], loss="ce_count")
    c = compare(net, "ipu-mk2", strategies=["keras-rnn-xla", "fused"], timesteps=10, batch_size=4,
                activity=0.1, band=False)
    assert set(c.gpu) == {"fused"} and "synaptic" in c.refused["keras-rnn-xla"]


def test_the_study_program_runs_on_its_gpus_host():
    """A thunk's issue and the per-step call are host CPU work: times on the measurement host scaled to the GPU's
    host (the A100's default, a DGX A100's EPYC 7742); the predicate round trip is not scaled."""
    from mimdsim.arch.host import default_host, host

    r = estimate(study_net(), "a100-40gb", timesteps=100, batch_size=48, strategy="keras-rnn-xla")
    assert r.placement["host"] == default_host("a100-40gb") == "dgx-a100"
    scale = host("dgx-a100").op_time_scale
    fw = framework("tensorflow-keras-xla", host="dgx-a100")
    assert fw.kernel_issue_s == pytest.approx(FW.kernel_issue_s * scale)
    assert fw.step_call_s == pytest.approx(FW.step_call_s * scale) and fw.loop_sync_s == FW.loop_sync_s
    on_measurement_host = estimate(study_net(), "a100-40gb", timesteps=100, batch_size=48, strategy="keras-rnn-xla",
                                   host="genoa-vm")
    assert on_measurement_host.seconds_per_step <= r.seconds_per_step


def test_the_study_program_is_float32_and_says_so():
    with pytest.raises(UnsupportedModel, match="float32 program.*fp16"):
        estimate(study_net(), "a100-40gb", timesteps=10, batch_size=4, strategy="keras-rnn-xla", precision="fp16")
    fp32 = estimate(study_net(), "a100-40gb", timesteps=10, batch_size=4, strategy="keras-rnn-xla", precision="fp32")
    assert fp32.placement["precision"] == "fp32"
