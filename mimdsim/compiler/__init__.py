"""The compiler's shared parts: memory planning (:mod:`.memory`: code and exchange-code footprints, the
fit check) and transfer builders (:mod:`.transfers`), used by every lowering.

Imported by: poplibs, workloads.
"""
