"""Every energy constant of the energy model, one named entry each: value, low, high, unit, source.

The registry is a flat dict ``CONSTANTS[name] -> Constant`` so that a band (and a later
uncertainty study) can read every constant at its low or high end. Names are
``<preset or family>.<what>``: ``ipu-mk2.idle_w``, ``a100-40gb.tensor_pj_per_flop``,
``ipu.exchange_pj_per_byte``. Marks in ``source``: *S* stated in the cited source, *R* a standard
figure recalled from the cited paper, *D* derived here (the method is in the text), *A* an
assumption (value, range and reasoning). ``docs/energy.md`` lists them all, with the reasoning.

Per-event energies marked *D (board power)* are not measurements: they are what a board's
published power leaves for one kind of event when the board runs that event at its modelled
peak rate (the method is named in each entry). Nothing here is fitted to an end-to-end result.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import assumptions as A
from ..kernels.assumed import NOTHING, Pinned
from ..arch.chip import PRESETS as CHIP_PRESETS
from ..arch.gpu import MATRIX_EFFICIENCY, PRESETS as GPU_PRESETS, VECTOR_EFFICIENCY
from ..arch.presets import Family
from ..arch.systolic import SYSTOLIC_PRESETS
from ..errors import ConfigError

CORNERS = ("value", "low", "high")


@dataclass(frozen=True)
class Constant:
    name: str
    value: float
    low: float
    high: float
    unit: str
    source: str

    def __post_init__(self) -> None:
        if not self.low <= self.value <= self.high:
            raise ValueError(f"energy constant {self.name}: value {self.value} outside [{self.low}, {self.high}]")

    def at(self, corner: str) -> float:
        return getattr(self, corner)


CONSTANTS: dict[str, Constant] = {}


def _presets(name: str) -> tuple:
    """The presets an energy constant applies to, from its name's prefix."""
    head = name.split(".", 1)[0]
    groups = {"ipu": A.CHIPS, "gpu": A.GPUS, "systolic": tuple(SYSTOLIC_PRESETS), "host": A.CHIPS + A.GPUS}
    return groups.get(head, (head,))


def _add(name, value, low=None, high=None, unit="", source="", evidence=""):
    """``evidence``: which hardware (process node, product) or model version the figure and its range are from."""
    c = CONSTANTS[name] = Constant(name, float(value), float(value if low is None else low),
                                   float(value if high is None else high), unit, source)
    if c.low < c.high:  # a range: a named assumption (kind "energy") that the band moves and --assume pins
        A.register(A.Assumption(name, c.value, c.low, c.high, unit, f"energy.{name}", _presets(name), source,
                                evidence=evidence))


def constant(name: str, corner: str = "value", pinned: Pinned = NOTHING) -> float:
    """The constant ``name`` at ``corner`` ('value': the value used, or the one ``pinned`` holds
    (``--assume``); 'low' or 'high': its range's end)."""
    if corner not in CORNERS:
        raise ConfigError(f"energy corner {corner!r}: expected one of {', '.join(CORNERS)}")
    try:
        c = CONSTANTS[name]
    except KeyError:
        raise ConfigError(f"no energy constant {name!r}; see docs/energy.md for the registry") from None
    return A.value(name, pinned) if corner == "value" and name in A.REGISTRY else c.at(corner)


def markdown_table() -> str:
    """docs/energy.md's table of the constants with no range (stated figures; a test checks the page)."""
    lines = ["| name | value | unit | source |", "|---|---|---|---|"]
    lines += [f"| `{c.name}` | {c.value:g} | {c.unit} | {c.source} |" for c in CONSTANTS.values() if c.low == c.high]
    return "\n".join(lines)


def has_power_limits(preset: str) -> bool:
    return f"{preset}.idle_w" in CONSTANTS and f"{preset}.max_w" in CONSTANTS


def power_limits(preset: str, pinned: Pinned = NOTHING) -> tuple[float, float]:
    """``(idle, max)`` board or chip power in watts of a preset (the central values, or ``pinned``'s)."""
    return constant(f"{preset}.idle_w", pinned=pinned), constant(f"{preset}.max_w", pinned=pinned)


def preset_of(spec, family: Family):
    """The preset spec whose energy constants price ``spec``: its family's preset of the same name, at
    the preset's own fields (the conditions the constants are stated at; the models scale them to the
    spec's fields). None for a spec whose name is no preset with constants (renamed, or built from
    scratch): the constants are per preset, and which preset a renamed spec derives from is unknown."""
    if spec.name not in family.presets or not has_power_limits(spec.name):
        return None
    return family.get(spec.name, {})


# ---- shared links -------------------------------------------------------------------------------
_add("host.pcie_pj_per_bit", 10, 5, 20, "pJ/bit",
     "A: two PCIe PHYs and controllers (about 5 pJ/bit each), host DRAM excluded",
     evidence='PCIe Gen3-Gen4 PHYs (a per-bit figure, no product measured)')

# ---- MIMD chips (ipu-mk1, ipu-mk2, bow) ---------------------------------------------------------
_add("ipu-mk1.max_w", 150, 130, 150, "W",
     "D: Graphcore C2 card, 'Maximum power consumption is 300 W' for two GC2 (S: github "
     "graphcore/legacy_drivers_and_tools README) / 2; card overhead would put the die at 130-140 W",
     evidence='hardware: Graphcore C2 card (two GC2, MK1)')
_add("ipu-mk2.max_w", 300, 250, 300, "W",
     "S: GC200 chip power 300 W at 1.325 GHz (Knowles, Hot Chips 33, 2021, via eeNews Europe "
     "'GraphCore details power figures for Mk2 chip and AI system')",
     evidence='hardware: GC200 (MK2, TSMC 7 nm) at 1.325 GHz, Hot Chips 33 (2021)')
_add("bow.max_w", 362, 300, 400, "W",
     "D: 300 W x 1.40 (perf) / 1.16 (perf/W), Bow vs GC200 (S: eeNews Europe 'Graphcore details power "
     "for Bow AI unit', 2022)",
     evidence='hardware: Bow IPU (GC200 die, wafer-on-wafer power), Graphcore 2022 figures')
for _p in CHIP_PRESETS:
    _m = CONSTANTS[f"{_p}.max_w"].value
    _add(f"{_p}.idle_w", round(0.20 * _m), round(0.12 * _m), round(0.35 * _m), "W",
         "A: 20 % (12-35 %) of max with a program loaded and tiles waiting; no published IPU idle figure. "
         "Datacenter GPUs idle at 10-14 % of TDP; an SRAM-heavy BSP chip with a free-running clock tree idles higher",
     evidence='no IPU figure; datacenter GPUs (V100-H100 nvidia-smi listings) as the comparison')
_add("ipu.leakage_share", 0.15, 0.10, 0.25, "of max",
     "A: leakage, the part of idle power that does not scale with the clock (7 nm, 823 mm2); the rest "
     "of idle power (clock tree) scales with clock_hz / the preset's clock",
     evidence='TSMC 7 nm (GC200, 823 mm2); no measured IPU figure')
_add("ipu.tile_static_share", 0.8, 0.65, 0.9, "of idle and max power",
     "A: the share of a chip's idle and maximum power drawn by its tile array, which scales with the tile "
     "count of a chip off its preset's (the rest: exchange spine, IPU-links, PCIe, sync and clock root, "
     "stays). Leakage and clock tree follow area; the tiles' 900 MB of SRAM (GC200, 7 nm) are ~200 mm2 of bit "
     "cells (7.5 Gbit x 0.027 um2, R: TSMC N7 high-density cell), ~350-400 mm2 with periphery, beside 1472 "
     "cores, of an 823 mm2 die; no floor plan share is published",
     evidence='GC200 (TSMC N7 high-density SRAM cell); no published floor plan')
# Per-event energies at 7 nm (ipu-mk2); other presets scaled (ipu-mk1 TSMC 16 nm x1.84 by Stillmaker &
# Baas 2017 scaling; bow x0.86 from Graphcore's +16 % perf/W on the same die).
_SCALE = {"ipu-mk1": (1.84, "x1.84 (7 nm -> 16 nm, Stillmaker & Baas 2017, hwcomponents techscaling.py)"),
          "ipu-mk2": (1.0, ""), "bow": (0.86, "x0.86 (Bow +16 % perf/W, eeNews 2022)")}
for _p, (_f, _why) in _SCALE.items():
    _add(f"{_p}.tile_cycle_pj", 6 * _f, 3 * _f, 15 * _f, "pJ per busy tile cycle",
         "D: one instruction issued per tile cycle (barrel): fetch, decode, register file ~4.7 pJ (Horowitz "
         "ISSCC 2014 ~70 pJ at 45 nm, R, x0.0665 to 7 nm at 0.75 V) + 2 fp32 lanes ~0.5 pJ each; "
         "instruction classes are not counted, so this is an average instruction" + (f"; {_why}" if _f != 1 else ""),
     evidence='Horowitz ISSCC 2014 (45 nm) scaled to TSMC 7 nm (GC200); other nodes as the scaling note says')
    _add(f"{_p}.sram_pj_per_byte", 0.25 * _f, 0.08 * _f, 1.0 * _f, "pJ/B",
         "D: Horowitz 8-32 KB SRAM 64-bit read (10-20 pJ at 45 nm, R) x0.0665 = 0.08-0.17 pJ/B, + load path"
         + (f"; {_why}" if _f != 1 else ""),
     evidence='Horowitz ISSCC 2014 SRAM reads (45 nm) scaled to TSMC 7 nm (GC200)')
_add("ipu.sram_bytes_per_cycle", 4, 1, 8, "B per busy tile cycle",
     "A: half of a tile's instructions load or store 64 bits (codelets' inner loops are ld/st-bound)",
     evidence="the project's codelets (kernels/) as counted for the GC200's 64-bit load path")
_add("ipu.exchange_pj_per_byte", 3, 1, 8, "pJ/B delivered",
     "D: wire ~0.1 pJ/bit/mm (Keckler et al., IEEE Micro 2011, R) x 8 bit x 0.5 toggle x mean Manhattan "
     "distance ~19 mm on an 823 mm2 die = 7.6 pJ/B full swing; the IPU fabric is built for low energy -> 3",
     evidence='Keckler et al. 2011 wire energy (40 nm-class) on the GC200 die (823 mm2)')
_add("ipu.link_pj_per_bit", 5, 2, 10, "pJ/bit",
     "A: short-reach SerDes; 1.4-1.9 pJ/bit measured for 12 Gb/s source-synchronous I/O in 32 nm "
     "(low end), 5-10 pJ/bit typical for 28-56 Gb/s NRZ/PAM4 links",
     evidence='32 nm source-synchronous I/O and 28-56 Gb/s SerDes of the 2015-2020 era; no IPU-Link figure')

# ---- GPUs ---------------------------------------------------------------------------------------
# (TDP W, idle W, idle low, idle high, DRAM pJ/bit, low, high, idle source, DRAM source)
_GPU = {
    "v100": (300, 42, 40, 57, 3.9, 3.5, 6, "nvidia-smi listings 40-57 W at 0 % util, P0",
             "HBM2 ~3.9 pJ/bit (O'Connor et al., MICRO 2017, R)"),
    "a100-40gb": (400, 52, 43, 62, 3.9, 3.5, 6, "nvidia-smi listings 43-62 W at 0 % util, P0 (incl. the "
                  "NVIDIA MIG user guide's example, 62 W)", "HBM2 ~3.9 pJ/bit (O'Connor et al., MICRO 2017, R)"),
    "a100-80gb": (400, 58, 50, 68, 3.7, 3.0, 6, "nvidia-smi listings 50-68 W at 0 % util, P0",
                  "A: HBM2e ~ HBM2 at a slightly lower voltage"),
    "h100": (700, 70, 68, 75, 3.5, 2.5, 5, "nvidia-smi listings 68-75 W at 0 % util, P0", "A: HBM3"),
    "h200": (700, 75, 65, 100, 3.0, 2.5, 4.5, "A: no listing found; H100 plus larger HBM3e stacks", "A: HBM3e"),
    "rtx-3090": (350, 50, 25, 90, 7.25, 6, 10, "A: P0 idle; listings 88 W (P0), 10-25 W (P8)",
                 "GDDR6X 7.25 pJ/bit (Micron GDDR6X brief 2020, R)"),
    "rtx-4090": (450, 58, 47, 75, 7.25, 6, 10, "nvidia-smi listings 47-75 W (P0)",
                 "GDDR6X 7.25 pJ/bit (Micron GDDR6X brief 2020, R)"),
}
_add("gpu.busy_static_share", 0.25, 0.15, 0.35, "of TDP",
     "D: AccelWattch (Kandiah et al., MICRO 2021) Quadro GV100 config accel-sim/gpgpu-sim_distribution "
     "configs/tested-cfgs/SM7_QV100/accelwattch_sass_sim_alt.xml: constant 32.3 W + idle SMs 22.6 W + "
     "first-lane static 15-49 W of 250 W: ~25-30 % of TDP is drawn while kernels run, whatever they do",
     evidence='AccelWattch (MICRO 2021) Quadro GV100 (Volta) configuration')
_add("gpu.gemm_power_share", 0.95, 0.90, 1.0, "of TDP",
     "S: large GEMMs pin the board at its power limit (RTX 3090 at a 315 W cap within 1 W of it in every busy "
     "sample, github ashalliants/ninfer-3090 PR #72; cuBLAS GEMM throughput halves at a lower cap, "
     "facebookexperimental/triton PR #2023)",
     evidence='RTX 3090 (Ampere) under a 315 W cap (ninfer-3090 #72) and cuBLAS at a lower cap (triton #2023)')
_add("gpu.vector_power_share", 0.85, 0.75, 0.95, "of TDP",
     "A: a CUDA-core kernel at its peak rate (SGEMM-like) draws ~85 % of TDP",
     evidence='no product measured: an assumption for NVIDIA GPUs of Volta to Hopper')
_add("gpu.launch_uj", 1.0, 0.2, 5.0, "uJ per kernel launch",
     "A: the front end and PCIe doorbell above idle for a ~4 us launch; the gap itself is charged at idle power",
     evidence='no product measured: an assumption for NVIDIA GPUs of Volta to Hopper')
_TOP_MATRIX, _TOP_VECTOR = MATRIX_EFFICIENCY[0][1], VECTOR_EFFICIENCY[0][1]
_GEMM, _VEC, _BUSY = (CONSTANTS[f"gpu.{k}"].value for k in ("gemm_power_share", "vector_power_share",
                                                             "busy_static_share"))
for _g, (_tdp, _idle, _il, _ih, _dram, _dl, _dh, _isrc, _dsrc) in _GPU.items():
    _p = GPU_PRESETS[_g]
    _add(f"{_g}.max_w", _tdp, unit="W", source="S: NVIDIA datasheet / product page board power (TDP)")
    _add(f"{_g}.idle_w", _idle, _il, _ih, "W", ("S: " if not _isrc.startswith("A") else "") + _isrc,
     evidence=f"hardware: {_g} boards at P0 as listed (driver versions as each listing states)")
    _add(f"{_g}.dram_pj_per_bit", _dram, _dl, _dh, "pJ/bit",
         _dsrc + "; the high end covers the GPU-side PHY and controller",
     evidence=f"the {_g}'s memory generation (HBM2-HBM3e or GDDR6X) as the source names it")
    # D (board power): what the GEMM power share leaves above busy static power, per FLOP at the model's
    # large-GEMM rate (top step of the matrix efficiency curve x dense fp16 tensor peak).
    _t = (_GEMM - _BUSY) * _tdp / (_TOP_MATRIX * _p["fp16_flops"]) * 1e12
    _add(f"{_g}.tensor_pj_per_flop", _t, 0.75 * _t, 1.25 * _t, "pJ/FLOP (fp16/bf16 tensor core)",
         f"D (board power): (gemm_power_share 0.95 - busy_static_share 0.25) x {_tdp} W / ({_TOP_MATRIX} x "
         f"{_p['fp16_flops'] / 1e12:g} TFLOP/s dense fp16); range +-25 % (A). tf32 FLOPs cost fp16 x fp16/tf32 peak",
     evidence=f"hardware: the {_g}'s datasheet TDP and fp16 peak; CALC's A100 efficiency curve")
    _v = (_VEC - _BUSY) * _tdp / (_TOP_VECTOR * _p["fp32_flops"]) * 1e12
    _add(f"{_g}.cuda_fp32_pj_per_flop", _v, 0.75 * _v, 1.25 * _v, "pJ/FLOP (fp32 CUDA core)",
         f"D (board power): (vector_power_share 0.85 - busy_static_share 0.25) x {_tdp} W / ({_TOP_VECTOR} x "
         f"{_p['fp32_flops'] / 1e12:g} TFLOP/s fp32); range +-25 % (A). fp16/bf16 CUDA-core FLOPs cost "
         "fp32 x fp32/fp16 peak (A: the same power at the higher rate)",
     evidence=f"hardware: the {_g}'s datasheet TDP and fp32 peak; CALC's A100 efficiency curve")

# ---- systolic arrays -----------------------------------------------------------------------------
_add("tpu-v1.max_w", 75, unit="W", source="R: TPU v1 TDP 75 W (Jouppi et al., ISCA 2017, Table 2)")
_add("tpu-v1.idle_w", 28, unit="W", source="R: TPU v1 measured 28 W idle per die (Jouppi et al., ISCA 2017)")
_add("scalesim-google.max_w", 75, 40, 75, "W", "A: the TPU v1 die class (same array, clock and node)",
     evidence='hardware: TPU v1 (28 nm, Jouppi et al., ISCA 2017)')
_add("scalesim-google.idle_w", 20, 12, 28, "W",
     "A: TPU v1's 28 W scaled by on-chip SRAM (12 MiB vs 28 MiB); SCALE-Sim has no energy model",
     evidence='hardware: TPU v1 (28 nm); SCALE-Sim 2.0.2/3.0.0 configurations')
_add("scalesim-32x32.max_w", 4, 2, 8, "W",
     "A: idle + 1,024 MACs at full rate + 10 GB/s DRAM at 20 pJ/bit (2.6 W) with margin",
     evidence='SCALE-Sim 2.0.2/3.0.0 32x32 configuration, 28 nm-class per-event energies')
_add("scalesim-32x32.idle_w", 0.5, 0.2, 2, "W", "A: (1,024 / 65,536) x 28 W plus I/O",
     evidence='hardware: TPU v1 (28 nm) idle, scaled to a 32x32 array')
_add("systolic.int8_mac_pj", 0.3, 0.15, 0.9, "pJ/MAC",
     "D: (40 W busy - 28 W idle) / 45.9e12 MAC/s = 0.26 pJ (TPU v1, Jouppi 2017, R); bottom-up Horowitz int8 "
     "mult + add x0.51 (45 -> 28 nm) = 0.15; 40 W / peak = 0.87",
     evidence='hardware: TPU v1 (28 nm, Jouppi 2017) and Horowitz ISSCC 2014 (45 nm) scaled to 28 nm')
_add("systolic.fp16_mac_pj", 1.0, 0.5, 2.5, "pJ/MAC",
     "D: Horowitz fp16 mult + fp32 add (1.1 + 0.9 pJ at 45 nm) x0.51 (28 nm); x2.5 for pipeline registers",
     evidence='Horowitz ISSCC 2014 (45 nm) scaled to 28 nm')
_add("systolic.sram_pj_per_byte", 2, 0.6, 6.3, "pJ/B",
     "D: Horowitz 32 KB - 1 MB SRAM (2.5-12.5 pJ/B at 45 nm) x0.51; wide rows amortise decode",
     evidence='Horowitz ISSCC 2014 SRAM (45 nm) scaled to 28 nm')
_add("systolic.dram_pj_per_bit", 20, 10, 40, "pJ/bit",
     "D: Horowitz DRAM 1.3-2.6 nJ per 64-bit access = 20-41 pJ/bit (DDR3)",
     evidence='DDR3 (Horowitz ISSCC 2014)')
_add("systolic.vector_pj_per_op", 1, 0.3, 3, "pJ/op", "A: int32 add + activation at 28 nm, plus a buffer read",
     evidence='28 nm-class logic (TPU v1 node); no measured figure')
_add("systolic.array_static_share", 0.25, 0.15, 0.5, "of idle and max power",
     "A: the share of an array's idle and maximum power drawn by its MAC array, which scales with rows x cols "
     "of an array off its preset's (SRAMs, I/O and control stay): TPU v1's floor plan gives the Matrix "
     "Multiply Unit 24 % of the die (Jouppi et al., ISCA 2017, R); the high end allows the array's clock "
     "tree more than its area share",
     evidence='hardware: TPU v1 floor plan (Jouppi et al., ISCA 2017)')

for _s in SYSTOLIC_PRESETS:
    assert has_power_limits(_s), _s

for _name in [n for n in CONSTANTS if n.endswith(".idle_w")]:  # a pinned idle power above the maximum is refused
    _max = _name[:-len("idle_w")] + "max_w"
    if _max in CONSTANTS:
        A.at_most(_name, _max, CONSTANTS[_max].value, "a device draws at least its idle power at work")
