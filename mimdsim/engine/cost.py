"""Compute cost of a vertex set: routes its static geometry and the step's work counts
into the codelet's own cycle estimator. This is the only place the engine learns costs
of compute, and it does so through the codelets."""
from __future__ import annotations

from kernels import bptt, dense_snn, lif, loss, optim, reduce, spikes
from kernels.tile import Tile

from ..program import VertexSet


def vertex_cycles(vs: VertexSet, work: dict, tile: Tile):
    """(tiles, cycles) of one vertex set for one step."""
    g, name = vs.geometry, vs.codelet
    role = g.get("role")
    if name == "dense_forward":
        return vs.tiles, dense_snn.dense_forward_cycles(g["n_local"], g["n_in"], g["batch"], tile, g["update"],
                                                        g["precision"])
    if name == "dense_scatter":
        return vs.tiles, dense_snn.dense_scatter_cycles(g["n_local"], g["batch"], tile, g["carry"], g["own"])
    if name == "dense_weight_grad":
        return vs.tiles, dense_snn.dense_weight_grad_cycles(g["n_local"], g["n_in"], g["batch"], tile, g["precision"])
    if name == "dense_input_grad":
        return vs.tiles, dense_snn.dense_input_grad_cycles(g["n_local"], g["n_in"], g["batch"], tile, g["precision"])
    if role == "forward" or name == "lif_forward":
        return vs.tiles, lif.lif_forward_cycles(g["n_local"], work["in_spikes"], tile,
                                                g.get("update", lif.UPDATE_PER_VECTOR))
    if role == "scatter" or name == "surrogate_scatter":
        return vs.tiles, bptt.surrogate_scatter_cycles(g["n_local"], work["listed"], work["own_listed"], tile,
                                                       g.get("carry", bptt.CARRY_PER_VECTOR),
                                                       g.get("own", bptt.SCATTER_OWN_PER_ID))
    if name == "spike_scan":  # vs.tiles: one entry per (sample, chunk) job
        return spikes.spike_scan_cycles(vs.tiles, g["widths"], work["entries"].ravel(), tile)
    if name == "spike_combine":
        return spikes.spike_combine_cycles(vs.tiles, g["partials"], work["listed"], tile, work.get("random", False))
    if name == "count_spikes":
        return loss.count_cycles(vs.tiles, work["spikes"], tile)
    if name in ("count_cross_entropy", "readout_loss"):
        return vs.tiles, loss.loss_cycles(g["batch"], g["classes"], tile, g.get("kind", "ce_count"),
                                          g.get("outputs"), g.get("timesteps", 1), g.get("listed", 0))
    if name == "weight_grad":
        return vs.tiles, bptt.weight_grad_cycles(g["n_local"], work["in_spikes"], tile)
    if name == "input_grad":
        return vs.tiles, bptt.input_grad_cycles(g["n_local"], work["in_listed"], tile)
    if name == "partial_reduce":
        return reduce.partial_reduce_cycles(vs.tiles, g["inputs"], g["length"], tile)
    if name == "grad_copies_reduce":
        return vs.tiles, reduce.grad_copies_cycles(g["elements"], g["copies"], tile)
    if name == "sgd":
        return vs.tiles, optim.sgd_cycles(g["elements"], g["copies"], tile)
    if name == "adam":
        return vs.tiles, optim.adam_cycles(g["elements"], g["copies"], tile)
    raise KeyError(f"no cost route for codelet {name!r}")


STATIC = {"count_cross_entropy", "readout_loss", "partial_reduce", "grad_copies_reduce", "sgd", "adam",
          "dense_forward", "dense_scatter", "dense_weight_grad", "dense_input_grad"}
