"""poplibs as the programs build on it: the library calls a Poplar program is made of, as poplibs
plans and lowers them, between the engine below and the workloads' programs above.

* :mod:`.matmul_plan`: poplin's matmul planner (how ``[M x K] . [K x N]`` splits over the tiles
  and in time, by poplin's own estimate);
* :mod:`.matmul`: a planned matmul lowered onto a :class:`~mimdsim.program.Program`'s vertex sets
  and transfers (:class:`~.matmul.MatmulLowering`);
* :mod:`.reduce`: popops' reduction of a tensor over its rows, stage by stage;
* :mod:`.linear`: a tensor's elements on its linear mapping over the tiles;
* :mod:`.ops`: one operation on its own (``mimdsim.op``, ``mimdsim op``), built from these and
  run by the engine.

May import the codelets (``mimdsim.kernels``), the hardware specs, the program IR, the compiler's
transfers and the engine; knows no model and no workload (nothing of ``mimdsim.snn`` or
``mimdsim.workloads``).

Imported by: workloads (the PopTorch and MLP programs), cli (``mimdsim op``), mimdsim (``mimdsim.op``).
"""
