"""The libraries' own GPU programs (mimdsim/workloads/snn/baselines/libraries.py), worked by hand on a small case,
and the benchmark rows they are checked against (``mimdsim validate --source snn-libraries-gpu``)."""

import pytest

from mimdsim.arch.gpu import gpu
from mimdsim.errors import ConfigError
from mimdsim.gpu.framework import FRAMEWORKS
from mimdsim.gpu.model import kernel_seconds
from mimdsim.validation import library_rows, load
from mimdsim.workloads.snn.baselines import libraries
from mimdsim.workloads.snn.baselines.gpu_kernels import STRATEGIES
from mimdsim import config

N, T, B, E = 4, 3, 2, 4  # 6 rows, 24 values per sequence


def _by_name(program):
    return {k.name: k for k in libraries.benchmark_kernels(program, N, T, B, E)}


def test_spyx_is_one_gemm_over_the_sequence_then_one_fused_kernel_per_scanned_step():
    ks = _by_name("spyx")
    assert list(ks) == ["convert_input", "fwd_gemm", "fwd_lif_step", "fwd_sum", "bwd_lif_step", "bwd_wgrad_gemm"]
    g = ks["fwd_gemm"]
    assert (g.dims, g.flops, g.nbytes, g.count) == ((6, 4, 4), 2 * 6 * 4 * 4, 4 * (24 + 16 + 24), 1)
    assert ks["convert_input"].nbytes == 24 * (1 + 4)  # uint8 in, float out
    # time_major=False on a (T, B, n) input: B = 2 scanned steps of T*n = 12 values; 4 values moved per value
    step = ks["fwd_lif_step"]
    assert (step.count, step.nbytes, step.flops) == (2, 4 * 4 * 12, 1.5 * 4 * 12)
    assert (ks["bwd_lif_step"].count, ks["bwd_lif_step"].nbytes) == (2, 4 * 5 * 12)
    assert ks["bwd_wgrad_gemm"].dims == (4, 4, 6) and "accumulate" not in " ".join(ks)  # jax.grad: fresh grads


def test_spikingjelly_cupy_runs_one_fptt_and_one_bptt_kernel():
    ks = _by_name("spikingjelly-cupy")
    assert list(ks) == ["fwd_gemm", "fwd_neuron_fptt", "loss_sum", "grad_v_seq_zeros", "bwd_neuron_bptt",
                        "bwd_wgrad_gemm", "bwd_bias_sum", "bwd_accumulate_grad"]
    assert all(k.count == 1 for k in ks.values())
    assert ks["fwd_neuron_fptt"].nbytes == 4 * 4 * 24  # x read; h, v, spike written
    assert ks["bwd_neuron_bptt"].nbytes == 4 * 4 * 24  # dS, dV, h read; dx written
    assert ks["bwd_accumulate_grad"].nbytes == 3 * 4 * 16  # W.grad += dW
    assert [k.phase for k in ks.values()].count("forward") == 2


def test_lava_dl_runs_two_integrator_scans_and_a_spike_kernel():
    ks = _by_name("lava-dl")
    fwd = [k for k in ks.values() if k.phase == "forward"]
    assert [k.name for k in fwd] == ["fwd_conv_gemm", "fwd_current_scan", "fwd_voltage_scan", "fwd_spike"]
    assert sum(k.nbytes for k in fwd[1:]) == 4 * 6 * 24
    bwd_vector = [k for k in ks.values() if k.phase == "backward" and k.kind == "vector"]
    assert sum(k.nbytes for k in bwd_vector) == 4 * (1 + 3 + 3 + 3) * 24 + 3 * 4 * 16


def test_exodus_runs_its_lif_kernels_around_one_gemm_with_pytorch_element_wise_kernels_between():
    """sinabs-exodus 1.1.2 (and Rockpool 2.7's LIFExodus on it), 24 values (N = B*n = 8 neurons, T = 3):
    forward the GEMM, Sinabs's movedim copy (2 values) and 1 - alpha scaling (2), lifForward (reads x, writes
    spikes and v: 3), the reset's mul (2) and sub (3) and firing_rate's sum (1): 13 values per neuron-step.
    Backward, lifBackward is one thread per (neuron, i) summing over j > i: 6 FLOPs per term, T(T-1)/2 = 3 terms
    and 2 for the first, per neuron and step; it and lifBackwardAlpha each move 4 values."""
    ks = _by_name("sinabs-exodus")
    names = list(ks)
    assert names[:3] == ["fwd_gemm", "fwd_movedim_copy", "fwd_norm_input_mul"] and ks["fwd_gemm"].dims == (6, 4, 4)
    assert names.index("fwd_lif_forward") == 3 and names.index("bwd_wgrad_gemm") == len(names) - 3
    fwd = [k for k in ks.values() if k.phase == "forward" and k.kind == "vector"]
    assert sum(k.nbytes for k in fwd) == 4 * 13 * 24 and ks["fwd_small_ops"].count == 16
    lif = ks["bwd_lif_backward"]
    assert (lif.flops, lif.nbytes) == (8 * (6 * 3 + 2 * 3), 4 * 4 * 24)
    assert names.index("bwd_lif_backward") < names.index("bwd_lif_backward_alpha") < names.index("bwd_wgrad_gemm")
    # backward: loss 1, zeros 1, the SingleExponential surrogate 6 x 2, ones 1, contiguous 1, surr * grad 3,
    # + grad_v 3, lifBackward 4, v_mem_post 2 + 3, contiguous 1, 3, 3, lifBackwardAlpha 4, the 1 - alpha
    # scaling's input and alpha gradients 2 + 3 + 1, the movedim copy back 2, the bias sum 1: 51 values
    bwd = [k for k in ks.values() if k.phase == "backward" and k.kind == "vector" and "accumulate" not in k.name]
    assert sum(k.nbytes for k in bwd) == 4 * 51 * 24 and ks["bwd_small_ops"].count == 17
    rp = _by_name("rockpool-exodus")
    # Rockpool: + leakyForward (2) for the synaptic current, beta * x (2), the bias expanded (1) and added (3),
    # the sum over one synapse (2); Heaviside surrogate (>=, float, /: 1.25 + 1.25 + 2); leakyBackward(Alpha) 2 + 2
    fwd = [k for k in rp.values() if k.phase == "forward" and k.kind == "vector"]
    assert sum(k.nbytes for k in fwd) == 4 * 20 * 24 and rp["fwd_small_ops"].count == 58
    assert list(rp).index("fwd_leaky_forward") < list(rp).index("fwd_lif_forward")
    bwd = [k for k in rp.values() if k.phase == "backward" and k.kind == "vector" and "accumulate" not in k.name]
    assert sum(k.nbytes for k in bwd) == 4 * 47.5 * 24
    # the benchmark's size: 65,536 neurons x (6 x 124,750 + 1,000) FLOPs, ~0.6 ms at the 4090's 82.6 TFLOP/s
    big = {k.name: k for k in libraries.benchmark_kernels("sinabs-exodus", 4096)}
    assert big["bwd_lif_backward"].flops == 65536 * (6 * 124750 + 1000)


def test_phase_seconds_are_the_kernels_plus_launches_and_spyx_loop_iterations():
    spec = gpu("rtx-4090")
    for program in libraries.PROGRAMS:
        prec = libraries.precision_of(program)
        want = {"forward": 0.0, "backward": 0.0}
        for k in libraries.benchmark_kernels(program, 256, 10, 16, 4):
            want[k.phase] += (kernel_seconds(k, spec, prec) + spec.launch_overhead_s) * k.count
        if program == "spyx":  # ceil(16 / unroll 5) = 4 while iterations per pass
            for ph in want:
                want[ph] += 4 * FRAMEWORKS["tensorflow-xla"].while_iteration_s
        got = libraries.phase_seconds(program, 256, spec, timesteps=10)
        assert got == pytest.approx(want)
    with pytest.raises(ConfigError, match="Did you mean 'spyx'"):
        libraries.benchmark_kernels("spy", 4)


def test_the_gemm_bound_excludes_exactly_the_rows_faster_than_their_gemms():
    """2 T B n^2 FLOPs at the GEMM's peak on the 4090: tf32 82.6 TFLOP/s (52.0 ms at n = 16384, 13.0 ms at 8192);
    strict fp32 the measured SGEMM share of the 82.6 quoted, 0.681 (76.4 ms at 16384, 19.1 ms at 8192)."""
    bound = libraries.gemm_peak_seconds("spikingjelly-cupy", 16384, "rtx-4090")["forward"]
    assert bound == pytest.approx(2 * 8000 * 16384 ** 2 / (0.681 * 82.6e12))
    assert libraries.gemm_peak_seconds("spyx", 16384, "rtx-4090")["forward"] == pytest.approx(2 * 8000 * 16384 ** 2 / 82.6e12)
    rows = library_rows(load("snn-libraries-gpu"))
    out = sorted((r["framework"].split(" v")[0].split("<")[0], r["n"], r["phase"]) for r in rows if r["excluded"])
    # Norse's forward at n = 8192 and 16384 (16.8 and 28.9 ms), where Norse is installed to trace it
    from mimdsim.validation import traced_libraries
    norse = [("Norse", 8192, "forward"), ("Norse", 16384, "forward")]
    assert all((o in out) == (traced_libraries.version("traced:norse") is not None) for o in norse)
    out = [o for o in out if o not in norse]
    assert out == [("Rockpool EXODUS", 16384, "backward"), ("Sinabs EXODUS", 16384, "backward"),
                   ("SpikingJelly CuPy", 4096, "backward"), ("SpikingJelly CuPy", 8192, "forward"),
                   ("SpikingJelly CuPy", 16384, "forward"), ("Spyx full-precision", 8192, "forward"),
                   ("Spyx full-precision", 16384, "backward"), ("Spyx full-precision", 16384, "forward"),
                   ("Spyx half-precision", 16384, "forward")]
    assert all(r["measured_seconds"] < r["gemm_peak_seconds"] for r in rows if r["excluded"])
    assert len([r for r in rows if not r["program"].startswith("traced:")]) == 36 and not any(p["synchronised"] for p in load("snn-libraries-gpu")["points"])


def test_the_programs_are_not_cli_strategies():
    """Named programs of the benchmark's layer, not training strategies: STRATEGIES stays settings' list."""
    assert tuple(STRATEGIES) == tuple(config.GPU_STRATEGIES)
    assert not set(libraries.PROGRAMS) & set(STRATEGIES)
