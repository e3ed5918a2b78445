"""The files of a checkpoint, one module each: the container format they share and its reference
(:mod:`blueprint.io.container`), shard files (:mod:`blueprint.io.shard_file`), the blueprint file
(:mod:`blueprint.io.blueprint_file`), manifests (:mod:`blueprint.io.manifest`), generator states
(:mod:`blueprint.io.rng_state`), and what they are built on: :mod:`blueprint.io.errors`
(:class:`CheckpointError`), :mod:`blueprint.io.codec` (msgpack) and :mod:`blueprint.io.streams`
(atomic writes, readers that trust nothing). Whole checkpoint directories are
:mod:`blueprint.checkpoints`.

Names load on first use (:mod:`mccfr_util.lazy`)."""

from mccfr_util.lazy import lazy_exports

_LAZY = {
    "CheckpointError": "blueprint.io.errors",
    "ArraySpec": "blueprint.io.container",
    "read_shard": "blueprint.io.shard_file",
    "write_shard": "blueprint.io.shard_file",
    "read_blueprint": "blueprint.io.blueprint_file",
    "write_blueprint": "blueprint.io.blueprint_file",
    "read_manifest": "blueprint.io.manifest",
    "write_manifest": "blueprint.io.manifest",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
