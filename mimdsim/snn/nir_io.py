"""NIR import and export (``mimdsim.from_nir``, ``mimdsim.to_nir``); see docs/neurons.md.

NIR nodes are continuous-time; mimdsim discretises them with forward Euler at step ``dt``
(default 1e-4, snnTorch's export step)::

    LIF      tau dv/dt = (v_leak - v) + r I   ->  leaky, beta = 1 - dt/tau, gain = r dt/tau
    IF       dv/dt = r I                      ->  leaky, beta = 1, gain = r dt
    LI       as LIF without spikes            ->  leaky, spiking=False (output layer only)
    CubaLIF  tau_syn dI/dt = -I + w_in S;  tau_mem dv/dt = (v_leak - v) + r I
                                              ->  synaptic, alpha = 1 - dt/tau_syn,
                                                  beta = 1 - dt/tau_mem,
                                                  gain = (w_in dt/tau_syn)(r dt/tau_mem)
    CubaLI   as CubaLIF without spikes        ->  synaptic, spiking=False
    Affine / Linear (weight [out, in])        ->  the layer's weights (W = weight^T) and bias
    Scale                                     ->  folded into the preceding weights and bias
    a cycle neuron <-> Affine/Linear          ->  all-to-all recurrence (one-to-one if diagonal)

A spiking NIR neuron resets to ``v_reset`` (which must be 0) in the step it spikes: reset
"zero" with ``reset_delay=False``, as snnTorch's ``import_from_nir``. ``v_leak`` is folded
into the bias (``b += v_leak / r``). NIR carries no surrogate, reset mechanism or graded
spikes; a graph's neurons take NeuronSpec's default surrogate (the fast sigmoid, slope 25, as
``--neuron``'s models); ``to_nir`` stores mimdsim's full spec in each node's ``metadata["mimdsim"]`` so
that ``from_nir(to_nir(net))`` is the identity, and other tools ignore it.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from ..errors import ConfigError, Message, Param, UnsupportedModel
from ..checks import check_choice, check_input_file, check_int, check_number
from .network import Network
from .neurons import NeuronSpec
from .readout import Readout

NEURONS = ("LIF", "IF", "LI", "CubaLIF", "CubaLI")
WEIGHTS = ("Affine", "Linear")
SUPPORTED = NEURONS + WEIGHTS + ("Scale", "Input", "Output", "NIRGraph")


def _nir():
    try:
        import nir
    except ImportError as e:  # pragma: no cover
        raise UnsupportedModel("NIR support needs the 'nir' package: pip install nir") from e
    return nir


def _load(graph_or_path):
    nir = _nir()
    if isinstance(graph_or_path, (str, Path)):
        path = Path(graph_or_path)
        check_input_file(path, "NIR file", "a .nir graph, e.g. one written by snnTorch's export_to_nir")
        try:
            return nir.read(str(path))
        except ValueError as e:
            if "type" not in str(e).lower():
                raise ConfigError(f"cannot read NIR file {str(path)!r}: {e}. Write it with nir.write (NIR 1.0 "
                                  f"HDF5)") from e
            try:  # NIR's type inference refuses types as exporters write them (a batch dimension): read unchecked
                graph = nir.read(str(path), type_check=False)
            except Exception:
                raise ConfigError(f"cannot read NIR file {str(path)!r}: {type(e).__name__}: {e}") from e
            warnings.warn(f"NIR file {str(path)!r}: NIR's type inference failed ({e}); read without it, "
                          f"taking the layer sizes from the weights", stacklevel=3)
            return graph
        except Exception as e:  # h5py/NIR raise many kinds
            raise ConfigError(f"cannot read NIR file {str(path)!r}: {type(e).__name__}: {e}. Write it with "
                              f"nir.write (NIR 1.0 HDF5)") from e
    if isinstance(graph_or_path, nir.NIRGraph):
        return graph_or_path
    raise ConfigError(f"from_nir needs a NIRGraph or a path to a .nir file, got {type(graph_or_path).__name__}")


def _flatten(graph, prefix=""):
    """Nodes and edges of a graph with nested graphs inlined (``sub.node``) and their Input/
    Output nodes bypassed."""
    nir = _nir()
    nodes, edges = {}, []
    inner_in, inner_out = {}, {}
    for name, node in graph.nodes.items():
        full = prefix + name
        if isinstance(node, nir.NIRGraph):
            sub_nodes, sub_edges = _flatten(node, full + ".")
            ins = [n for n, v in sub_nodes.items() if type(v).__name__ == "Input"]
            outs = [n for n, v in sub_nodes.items() if type(v).__name__ == "Output"]
            inner_in[full] = [b for a, b in sub_edges if a in ins]
            inner_out[full] = [a for a, b in sub_edges if b in outs]
            nodes.update({k: v for k, v in sub_nodes.items() if k not in ins + outs})
            edges += [(a, b) for a, b in sub_edges if a not in ins and b not in outs]
        else:
            nodes[full] = node
    for a, b in graph.edges:
        a, b = prefix + a, prefix + b
        for src in inner_out.get(a, [a]):
            for dst in inner_in.get(b, [b]):
                edges.append((src, dst))
    return nodes, list(dict.fromkeys(edges))


def _arr(v, n=None):
    a = np.asarray(v, dtype=np.float64).ravel()
    if n is not None and a.size == 1:
        a = np.full(n, a[0])
    return a


def _scalar_or_tuple(a):
    a = np.asarray(a, dtype=np.float64).ravel()
    return float(a[0]) if np.all(a == a[0]) else tuple(float(x) for x in a)


def _neuron_spec(name, node, dt, n, reset=None):
    """NeuronSpec, input gain and bias offset (v_leak) of a NIR neuron node."""
    kind = type(node).__name__
    meta = (node.metadata or {}).get("mimdsim") if hasattr(node, "metadata") else None
    v_th = _arr(getattr(node, "v_threshold", np.ones(n)), n)
    v_reset = _arr(getattr(node, "v_reset", np.zeros(n)), n)
    if np.any(v_reset != 0):
        raise UnsupportedModel(f"node {name!r} ({kind}) resets to v_reset={_scalar_or_tuple(v_reset)}; mimdsim "
                               f"supports reset to 0 (snnTorch's 'zero') or subtraction; shift the threshold and "
                               f"reset to 0")
    r = _arr(node.r, n)
    leak = _arr(getattr(node, "v_leak", np.zeros(n)), n)
    spiking = kind in ("LIF", "IF", "CubaLIF")

    def decay(tau_name):
        tau = _arr(getattr(node, tau_name), n)
        if np.any(tau <= 0):
            raise ConfigError(f"node {name!r} ({kind}): {tau_name} must be > 0, got {_scalar_or_tuple(tau)}")
        d = 1 - dt / tau
        if np.any(d < 0):
            raise ConfigError(f"node {name!r} ({kind}): {tau_name}={float(tau.min())} is below dt={dt}, so the "
                              f"forward-Euler decay 1 - dt/{tau_name} = {float(d.min()):.3g} lies outside [0, 1]; "
                              f"pass a smaller dt to from_nir")
        return d, tau
    if kind in ("LIF", "LI"):
        beta, tau = decay("tau")
        gain = r * dt / tau
        model, alpha = "leaky", None
    elif kind == "IF":
        beta, gain, model, alpha = np.ones(n), r * dt, "leaky", None
    else:
        alpha, tau_syn = decay("tau_syn")
        beta, tau_mem = decay("tau_mem")
        gain = _arr(node.w_in, n) * dt / tau_syn * (r * dt / tau_mem)
        model = "synaptic"
    if not np.allclose(gain, gain[0], rtol=1e-6):
        raise UnsupportedModel(f"node {name!r} ({kind}): the input gain differs between neurons "
                               f"({float(gain.min()):.4g}..{float(gain.max()):.4g}); mimdsim has one gain per layer: "
                               f"fold it into the weights")
    bias_offset = leak / r if np.any(leak != 0) else None
    if meta is not None:
        d = json.loads(meta)
        return NeuronSpec.from_dict(d["spec"]), bias_offset, d.get("params", {})
    kw = dict(model=model, beta=_scalar_or_tuple(beta), threshold=_scalar_or_tuple(v_th), gain=float(gain[0]),
              spiking=spiking)
    if alpha is not None:
        kw["alpha"] = _scalar_or_tuple(alpha)
    if spiking and reset == "subtract":  # snnTorch's default Leaky/Synaptic, which it exports as this same node
        kw.update(reset="subtract")
    elif spiking:
        kw.update(reset="zero", reset_delay=False)
    else:
        kw.update(reset="none")
    return NeuronSpec(**kw), bias_offset, {}


def _chain(nodes, edges):
    """The layer chain of a flattened graph: its nodes in order from the Input to the Output,
    and each neuron's recurrent weight node (neuron -> weight -> neuron, a cycle of two).

    The graph (of the nodes the Input reaches) may hold no other cycle; with the recurrent
    weight nodes taken out it is acyclic, and its topological order must be a chain: every
    node up to the Output leads to exactly one next node.
    """
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    for a, b in edges:
        if a not in nodes or b not in nodes:
            raise ConfigError(f"NIR edge ({a!r}, {b!r}) names a node that does not exist")
        g.add_edge(a, b)
    kind = {n: type(v).__name__ for n, v in nodes.items()}
    inputs = [n for n in nodes if kind[n] == "Input"]
    if len(inputs) != 1:
        raise UnsupportedModel(f"the graph has {len(inputs)} Input nodes; mimdsim needs exactly one")
    g = g.subgraph(nx.descendants(g, inputs[0]) | {inputs[0]}).copy()
    recurrent = {}
    for cycle in nx.simple_cycles(g):
        neuron = next((n for n in cycle if kind[n] in NEURONS), None)
        if neuron is None or len(cycle) > 2:
            raise UnsupportedModel(f"the graph has the cycle {' -> '.join(cycle + cycle[:1])}; mimdsim imports "
                                   f"recurrence only as a neuron in a cycle with one Affine or Linear node")
        other = cycle[cycle.index(neuron) - 1]  # the neuron itself in a self-loop
        if kind[other] not in WEIGHTS:
            raise UnsupportedModel(f"node {other!r} ({kind[other]}) closes a cycle with {neuron!r}; recurrence "
                                   f"must go through an Affine or Linear node")
        if neuron in recurrent:
            raise UnsupportedModel(f"node {neuron!r} ({kind[neuron]}) is in cycles with {recurrent[neuron]!r} and "
                                   f"{other!r}; mimdsim takes one recurrent weight node per neuron layer")
        recurrent[neuron] = other
    g.remove_nodes_from(recurrent.values())
    g = g.subgraph(nx.descendants(g, inputs[0]) | {inputs[0]})
    chain = []
    for cur in nx.topological_sort(g):
        chain.append(cur)
        if kind[cur] == "Output":
            break
        nxt = list(g.successors(cur))
        if not nxt:
            raise UnsupportedModel(f"node {cur!r} ({kind[cur]}) leads nowhere; the chain must end in an Output node")
        if len(nxt) > 1:
            raise UnsupportedModel(f"node {cur!r} ({kind[cur]}) branches to {nxt}; mimdsim imports feed-forward "
                                   f"chains (with recurrent cycles) only")
    return chain, recurrent


def _input_shape(node):
    """The Input node's type as a tuple of ints, or None when it has none."""
    t = getattr(node, "input_type", None) or {}
    vals = list(t.values()) if isinstance(t, dict) else [t]
    if not vals or vals[0] is None:
        return None
    try:
        return tuple(int(d) for d in np.asarray(vals[0]).ravel())
    except (TypeError, ValueError):
        return None


def _input_size(name, shape, first_weight) -> int:
    """Inputs per sample: the Input node's type, read as exporters write it. A type whose
    leading dimensions are a batch (``[1, 64]``, ``[B, 64]``) or that is missing is taken
    from the first weight node's input width, with a warning saying what was assumed."""
    width = None if first_weight is None else int(np.asarray(first_weight.weight).shape[-1])
    n = None if shape is None else int(np.prod(shape))
    if n is not None and (width is None or n == width):
        return n
    if width is None:
        raise UnsupportedModel(f"Input node {name!r} has no type and no weight node follows it; give it an "
                               f"input_type")
    if shape is None:
        why = "has no type"
    elif len(shape) >= 2 and int(np.prod(shape[1:])) == width:
        why = f"has type {list(shape)}, read as a batch of {shape[0]} (exporters write the sample batch)"
    else:
        raise ConfigError(f"Input node {name!r} has type {list(shape)} ({n} values) but the first weight node "
                          f"takes {width}; export the graph with one sample's shape (snnTorch: ignore_dims=[0])")
    warnings.warn(f"NIR Input node {name!r} {why}; assumed {width} inputs per sample from the first weight "
                  f"node", stacklevel=3)
    return width


def from_nir(graph_or_path, *, dt: float = 1e-4, max_activity=None, capacities=None, delay=None, loss=None,
             num_classes=None, dtype=np.float32, reset=None, input_capacity=None) -> Network:
    """A mimdsim Network from a NIR graph or ``.nir`` file (forward Euler with step ``dt``).

    The graph must be a chain Input -> (Affine | Linear) [-> Scale] -> neuron -> ... ->
    Output, each neuron optionally in a cycle with an Affine/Linear (recurrence). Anything
    else raises :class:`UnsupportedModel` naming the node and its type. ``delay`` (default
    0, or what ``to_nir`` stored), ``loss``, ``num_classes``, ``max_activity`` and
    ``capacities`` are as for :meth:`Network.build`; ``input_capacity`` sets the input list's K alone
    (as ``--input-capacity``), so inputs denser than ``max_activity`` are not dropped.

    ``reset``: NIR's spiking nodes reset to ``v_reset`` (0) in the step they spike, which is
    how they are imported by default (with a warning when the graph does not come from
    ``to_nir``). snnTorch exports its default subtract reset as the same node, so a graph
    cannot say which; ``reset="subtract"`` imports every spiking layer with snnTorch's
    subtract reset (delayed, its default) and ``reset="zero"`` confirms NIR's.
    """
    check_choice("reset", reset, (None, "zero", "subtract"))
    check_number("dt", dt, low=0, open_low=True, unit="seconds", fix="the simulation step, e.g. dt=1e-3")
    graph = _load(graph_or_path)
    nodes, edges = _flatten(graph)
    for name, node in nodes.items():
        kind = type(node).__name__
        if kind not in SUPPORTED:
            raise UnsupportedModel(f"node {name!r} has type {kind}, which mimdsim cannot simulate; supported: "
                                   f"{', '.join(k for k in SUPPORTED if k != 'NIRGraph')}")
    chain, recurrent = _chain(nodes, edges)
    layers, learned, guessed = [], [], []
    in_type = _input_shape(nodes[chain[0]])
    first_w = next((nodes[c] for c in chain[1:] if type(nodes[c]).__name__ in WEIGHTS), None)
    n_in = _input_size(chain[0], in_type, first_w)
    sizes = [n_in]
    W = b = None
    for cur in chain[1:]:
        node = nodes[cur]
        kind = type(node).__name__
        if kind in WEIGHTS:
            if W is not None:
                raise UnsupportedModel(f"node {cur!r} ({kind}) follows another weight node; mimdsim needs one "
                                       f"Affine/Linear between neuron layers")
            w = np.asarray(node.weight, dtype=np.float64)
            if w.ndim != 2 or w.shape[1] != sizes[-1]:
                raise ConfigError(f"node {cur!r} ({kind}) has weight shape {w.shape}; it follows {sizes[-1]} "
                                  f"values, so it needs [out, {sizes[-1]}]")
            W = w.T.copy()
            b = np.asarray(node.bias, dtype=np.float64).copy() if kind == "Affine" else None
        elif kind == "Scale":
            if W is None:
                raise UnsupportedModel(f"node {cur!r} (Scale) must follow an Affine or Linear node")
            s = _arr(node.scale, W.shape[1])
            W = W * s[None, :]
            b = None if b is None else b * s
        elif kind in NEURONS:
            if W is None:
                raise UnsupportedModel(f"neuron node {cur!r} ({kind}) has no Affine/Linear before it")
            n = W.shape[1]
            spec, leak, params = _neuron_spec(cur, node, float(dt), n, reset)
            if reset is None and spec.spiking and not (node.metadata or {}).get("mimdsim"):
                guessed.append(cur)
            if leak is not None:
                b = (np.zeros(n) if b is None else b) + leak
            V = Vb = None
            if cur in recurrent:
                wn = nodes[recurrent[cur]]
                w = np.asarray(wn.weight, dtype=np.float64)
                if w.shape != (n, n):
                    raise ConfigError(f"recurrent node {recurrent[cur]!r} has weight shape {w.shape}; {cur!r} has "
                                      f"{n} neurons, so it needs [{n}, {n}]")
                vb = np.asarray(wn.bias, dtype=np.float64) if type(wn).__name__ == "Affine" else None
                meta_rec = spec.recurrence
                if meta_rec == "one-to-one" or (meta_rec == "none" and vb is None and
                                                np.count_nonzero(w - np.diag(np.diag(w))) == 0):
                    spec = spec.replace(recurrence="one-to-one")
                    V = np.diag(w).copy()
                else:
                    spec = spec.replace(recurrence="all-to-all")
                    V, Vb = w.T.copy(), (np.zeros(n) if vb is None else vb)
            layers.append((spec, W, b, V, Vb))
            learned.append(params)
            sizes.append(n)
            W = b = None
        elif kind == "Output":
            if W is not None:
                raise UnsupportedModel(f"the graph ends in a weight node before {cur!r}; mimdsim needs a neuron "
                                       f"layer last (add an LI node for a membrane readout)")
            break
        else:
            raise UnsupportedModel(f"node {cur!r} has type {kind}, which mimdsim cannot place in a layer chain")
    if not layers:
        raise UnsupportedModel("the graph has no neuron layer")
    if guessed:
        warnings.warn(Message(f"NIR carries no reset mechanism: {', '.join(map(repr, guessed))} imported as NIR's "
                              f"reset to v_reset = 0 in the spike's step (snnTorch reset_mechanism='zero', "
                              f"reset_delay=False); snnTorch exports its default subtract reset as the same node: for "
                              f"such a model pass ", Param("reset", "subtract", key="model.nir_reset",
                                                           python="from_nir(..., reset='subtract')")), stacklevel=2)
    meta = json.loads((graph.metadata or {}).get("mimdsim", "{}")) if getattr(graph, "metadata", None) else {}
    readout = loss if loss is not None else Readout(**meta["readout"]) if "readout" in meta else (
        "ce_count" if layers[-1][0].spiking else "ce_max_membrane")
    net = Network.build(sizes, [s for s, *_ in layers], delay=meta.get("delay", 0) if delay is None else delay,
                        loss=readout, num_classes=num_classes, max_activity=max_activity,
                        capacities=capacities if capacities is not None else meta.get("capacities"), dtype=dtype)
    if input_capacity is not None:
        k0 = check_int("input_capacity", input_capacity, low=1, high=sizes[0],
                       fix=f"the input list holds 1 to the graph's {sizes[0]} inputs")
        net.capacities = (k0,) + tuple(net.capacities[1:])
    net.weights = [w.astype(dtype) for _, w, *_ in layers]
    net.biases = [None if bb is None else bb.astype(dtype) for _, _, bb, *_ in layers]
    net.recurrent = [None if v is None else v.astype(dtype) for *_, v, _ in layers]
    net.recurrent_biases = [None if v is None else v.astype(dtype) for *_, v in layers]
    for l, params in enumerate(learned):
        for key, v in params.items():
            net.neuron_params[l][key] = np.asarray(v, dtype=dtype)
    return net


def to_nir(net: Network, *, dt: float = 1e-4):
    """A NIR graph of ``net`` (forward Euler inverted with step ``dt``); mimdsim's full
    spec rides along in ``metadata["mimdsim"]`` of each neuron node and of the graph."""
    nir = _nir()
    if not isinstance(net, Network):
        raise ConfigError(f"to_nir needs a mimdsim.Network, got {type(net).__name__}")
    nodes = {"input": nir.Input(input_type=np.array([net.sizes[0]]))}
    edges, prev = [], "input"
    for l, (spec, n) in enumerate(zip(net.specs, net.sizes[1:]), start=1):
        if spec.model in ("alpha", "lapicque"):
            raise UnsupportedModel(f"layer {l} is a {spec.model} neuron, which NIR has no node for; NIR knows "
                                   f"LIF, IF, LI, CubaLIF and CubaLI")
        w = np.asarray(net.weights[l - 1], dtype=np.float64).T
        b = net.biases[l - 1]
        wname, nname = f"w{l}", f"lif{l}"
        nodes[wname] = nir.Linear(weight=w) if b is None else nir.Affine(weight=w, bias=np.asarray(b, np.float64))
        params = net.neuron_params[l - 1]
        beta = np.broadcast_to(np.asarray(params.get("beta", spec.beta), dtype=np.float64), (n,))
        vth = np.broadcast_to(np.asarray(params.get("threshold", spec.threshold), dtype=np.float64), (n,)).copy()
        meta = {"mimdsim": json.dumps({"spec": spec.to_dict(),
                                       "params": {k: np.asarray(v).tolist() for k, v in params.items()}})}
        with np.errstate(divide="ignore"):
            tau_mem = np.where(beta < 1, dt / np.where(beta < 1, 1 - beta, 1), np.inf)
        r = tau_mem / dt * spec.gain
        if spec.model == "synaptic":
            alpha = np.broadcast_to(np.asarray(spec.alpha, dtype=np.float64), (n,))
            tau_syn = dt / (1 - alpha)
            kw = dict(tau_syn=tau_syn, tau_mem=tau_mem, r=tau_mem / dt, v_leak=np.zeros(n),
                      w_in=tau_syn / dt * spec.gain, metadata=meta)
            node = nir.CubaLIF(v_threshold=vth, v_reset=np.zeros(n), **kw) if spec.spiking else nir.CubaLI(**kw)
        elif np.all(beta == 1):
            node = nir.IF(r=np.full(n, spec.gain / dt), v_threshold=vth, v_reset=np.zeros(n), metadata=meta)
        elif spec.spiking:
            node = nir.LIF(tau=tau_mem, r=r, v_leak=np.zeros(n), v_threshold=vth, v_reset=np.zeros(n), metadata=meta)
        else:
            node = nir.LI(tau=tau_mem, r=r, v_leak=np.zeros(n), metadata=meta)
        nodes[nname] = node
        edges += [(prev, wname), (wname, nname)]
        if spec.recurrence != "none":
            V = np.asarray(net.recurrent[l - 1], dtype=np.float64)
            rname = f"w_rec{l}"
            if spec.recurrence == "one-to-one":
                nodes[rname] = nir.Linear(weight=np.diag(np.broadcast_to(V, (n,))))
            else:
                nodes[rname] = nir.Affine(weight=V.T, bias=np.asarray(net.recurrent_biases[l - 1], np.float64))
            edges += [(nname, rname), (rname, nname)]
        prev = nname
    nodes["output"] = nir.Output(output_type=np.array([net.sizes[-1]]))
    edges.append((prev, "output"))
    meta = {"mimdsim": json.dumps({"delay": net.delay, "readout": net.readout.to_dict(),
                                   "capacities": list(net.capacities)})}
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata=meta)
