"""The trainer on one machine: numba MCCFR kernels over flat regret and strategy tables,
checkpoints, and the :class:`Blueprint` (load a run, query its strategy, export it).

Names load on first use (:mod:`mccfr_util.lazy`), so importing one module of this package does not
load the others' kernels."""

from mccfr_util.lazy import lazy_exports

_LAZY = {
    "Blueprint": "blueprint.blueprint",
    "BlueprintError": "blueprint.blueprint",
    "Answer": "blueprint.blueprint",
    "Trainer": "blueprint.trainer",
    "RunConfig": "blueprint.trainer",
    "make_trainer": "blueprint.trainer",
    "Player": "blueprint.player",
    "CheckpointError": "blueprint.io.errors",
    "exploitability": "blueprint.best_response",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
