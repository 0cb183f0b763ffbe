"""The seam a second chip family plugs into: a chip family declares its execution model and its specs,
and the SNN workload picks its lowering by that model (mimdsim/arch/execution.py, LOWERINGS in
mimdsim/workloads/snn/simulate.py)."""
import dataclasses

import pytest

from mimdsim import Network, simulate
from mimdsim.arch import chip
from mimdsim.arch.execution import BULK_SYNCHRONOUS, FAMILIES, ChipFamily, family_of, register
from mimdsim.arch.presets import Family
from mimdsim.errors import ConfigError


def test_every_ipu_preset_is_bulk_synchronous():
    for name in ("ipu-mk1", "ipu-mk2", "bow"):
        assert family_of(name).execution == BULK_SYNCHRONOUS
        assert family_of(chip(name, tiles=64)).name == "graphcore-ipu"  # an overridden spec keeps its family
    with pytest.raises(ConfigError, match="unknown chip 'ipu-mk3'.*ipu-mk2"):
        family_of("ipu-mk3")


@dataclasses.dataclass(frozen=True)
class _StreamingCore:  # a stand-in for another family's spec: its own dataclass and presets
    name: str
    cores: int = 64


def test_a_family_with_another_execution_model_is_refused_by_name_until_it_has_a_lowering(monkeypatch):
    monkeypatch.setattr("mimdsim.arch.execution.FAMILIES", dict(FAMILIES))
    other = register(ChipFamily("streaming", "dataflow", Family(_StreamingCore, "chip", "chip",
                                                                  {"stream-64": {}}, {}), "a stand-in"))
    assert family_of("stream-64") is other and family_of(_StreamingCore("stream-64")) is other
    assert chip("stream-64", cores=32) == _StreamingCore("stream-64", 32)  # chip() finds it by its family
    with pytest.raises(ValueError, match="already"):  # a preset name picks one family
        register(ChipFamily("again", "dataflow", other.specs, ""))
    system = type("System", (), {"chip": _StreamingCore("stream-64"), "chips": 1, "tiles": 64})()
    net = Network.feedforward([16, 8, 2], max_activity=0.5)
    from mimdsim.workloads.snn import simulate as sim
    with pytest.raises(ConfigError, match="executes dataflow.*no lowering.*bulk-synchronous"):
        sim._compiled.__wrapped__(tuple(net.sizes), tuple(net.capacities), system, 4, 2, None, True, "adam")
    assert simulate(net, "ipu-mk2", timesteps=4, batch_size=2, activity=0.25, band=False).report.seconds_per_step > 0
