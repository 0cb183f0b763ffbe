"""Mapping, memory plan and lowering."""
import numpy as np
import pytest

import mimdsim
from mimdsim.workloads.snn.programs.compile import compile_program
from mimdsim.workloads.snn.mapping import map_network
from mimdsim.errors import ConfigError
from mimdsim.program import Loop


def test_mapping_contiguous_ranges_reserved_tile0_and_auto_npt():
    lay = map_network([978, 978, 976, 10], chips=1, tiles_per_chip=1472)
    assert lay.neurons_per_tile == 2 and lay.reserved_tiles == (0,)
    assert [(p.first_tile, p.tiles) for p in lay.layers] == [(1, 489), (490, 489), (979, 488), (1467, 5)]
    assert lay.tiles_used == 1471
    p = lay.layers[3]
    assert p.n_local.tolist() == [2] * 5 and p.local_tile([0, 1, 2, 9]).tolist() == [0, 0, 1, 4]
    # the same layers on 1216 tiles need 4 neurons per tile
    assert map_network([978, 978, 976, 10], chips=1, tiles_per_chip=1216).neurons_per_tile == 4
    # without the reservation tile 0 is used
    assert map_network([10], chips=1, tiles_per_chip=8, reserve_tile0=False).layers[0].first_tile == 0


def test_uneven_last_tile():
    p = map_network([7], chips=1, tiles_per_chip=8, neurons_per_tile=3).layers[0]
    assert p.tiles == 3 and p.n_local.tolist() == [3, 3, 1] and p.neuron_starts.tolist() == [0, 3, 6, 7]


def test_whole_layers_per_chip():
    lay = map_network([6, 6, 6], chips=3, tiles_per_chip=8, neurons_per_tile=2)
    # chip 0: tile 0 reserved, layer 1 on 1..3, layer 2 on 4..6; layer 3 does not fit the last tile
    assert [(p.chip, p.first_tile) for p in lay.layers] == [(0, 1), (0, 4), (1, 8)]
    lay = map_network([14, 16], chips=2, tiles_per_chip=8, neurons_per_tile=2)
    assert [(p.chip, p.first_tile, p.tiles) for p in lay.layers] == [(0, 1, 7), (1, 8, 8)]
    with pytest.raises(ConfigError, match="layer 2 \\(18 neurons\\) needs 9 tiles"):
        map_network([14, 18], chips=2, tiles_per_chip=8, neurons_per_tile=2)


def test_program_structure():
    net = mimdsim.Network.feedforward([40, 30, 20, 5])
    prog = compile_program(net.sizes, net.capacities, mimdsim.system("ipu-mk2", tiles=64), schedule="fused", timesteps=7, batch_size=3)
    loops = [s for s in prog.schedule if isinstance(s, Loop)]
    assert [(l.name, l.count, l.reverse) for l in loops] == [("forward", 7, False), ("backward", 7, True)]
    names = [s.name for s in prog.supersteps()]
    assert names == ["io.inputs", "fwd.neuron", "fwd.scan", "fwd.combine", "loss", "loss.grad",
                     "bwd.neuron", "bwd.reduce1", "bwd.reduce2", "update.copies", "update.optimizer"]
    fwd = {s.name: s for s in loops[0].body}
    assert {v.codelet for v in fwd["fwd.neuron"].compute} == {"lif_forward"}
    # layer 1's list goes to every tile of layer 2: (K + 2) ids of 2 B per sample, multicast
    lists = [t for t in fwd["fwd.neuron"].exchange if t.name == "L1.list"][0]
    K1 = net.capacities[1]
    p2 = prog.mapping.layers[1]
    assert lists.src.size == 3 * p2.tiles and set(lists.nbytes) == {(K1 + 2) * 2}
    assert len(np.unique(lists.group)) == 3


def test_memory_plan_by_hand():
    net = mimdsim.Network.feedforward([40, 30, 5], capacities=[6, 4, 2])
    T, B = 10, 4
    prog = compile_program(net.sizes, net.capacities, mimdsim.system("ipu-mk2", tiles=64), schedule="fused", timesteps=T,
                           batch_size=B, neurons_per_tile=2)
    t = prog.mapping.layers[0].first_tile
    by_name = {}
    for a in prog.tensors:
        hit = a.tiles == t
        if hit.any():
            by_name[a.name] = by_name.get(a.name, 0) + int(a.nbytes[hit].sum())
    assert by_name["L1.weights"] == 40 * 2 * 4
    assert by_name["L1.grad_copies"] == 6 * 40 * 2 * 4
    assert by_name["L1.adam_moments"] == 2 * 40 * 2 * 4
    assert by_name["L1.membrane_history"] == T * B * 2 * 4
    assert by_name["L1.input_list_history"] == T * B * (6 + 2) * 2
    assert prog.tile_bytes()[t] == sum(by_name.values())
    sgd = compile_program(net.sizes, net.capacities, mimdsim.system("ipu-mk2", tiles=64), schedule="fused", timesteps=T,
                          batch_size=B, neurons_per_tile=2, optimizer="sgd")
    assert not any(a.name.endswith("adam_moments") for a in sgd.tensors)


def test_activity_l1_costs_one_add_per_listed_hidden_id():
    """Readout(activity_l1) adds ACTIVITY_L1_OWN per listed id to hidden layers' backward only."""
    from mimdsim.kernels.mimdsim_snn.bptt import ACTIVITY_L1_OWN, SCATTER_OWN_PER_ID
    chip = mimdsim.chip("ipu-mk2", tiles=64)
    plain = mimdsim.Network.feedforward([32, 48, 48, 10], max_activity=0.1)
    l1 = mimdsim.Network.feedforward([32, 48, 48, 10], max_activity=0.1)
    l1.readout = mimdsim.Readout(activity_l1=1e-3)
    runs = [mimdsim.simulate(n, chip, timesteps=5, batch_size=4, activity=0.05, schedule="fused") for n in (plain, l1)]
    own = [{(vs.layer, vs.codelet): vs.geometry.get("own") for st in r.program.supersteps() for vs in st.compute
            if vs.geometry.get("role") == "scatter"} for r in runs]
    for (layer, codelet), v in own[0].items():
        extra = ACTIVITY_L1_OWN if layer < 3 else 0
        assert own[1][(layer, codelet)] == v + extra and v == SCATTER_OWN_PER_ID
    fwd = [r.report.cycles["forward"]["compute"] for r in runs]
    bwd = [r.report.cycles["backward"]["compute"] for r in runs]
    assert fwd[0] == fwd[1] and bwd[1] > bwd[0]
