"""MCCFR variants as options of one kernel, with named presets.

* ``vanilla``: plain external-sampling MCCFR (no discounting, no pruning).
* ``linear``: linear CFR weighting (Brown & Sandholm 2019): at every ``discount_every``
  iterations, boundary ``k`` multiplies regrets and strategy sums by ``k / (k + 1)``, which weights
  iteration ``t`` by about ``t``.
* ``dcfr``: discounted CFR with alpha 1.5, beta 0, gamma 2: at boundary ``k`` positive regrets are
  multiplied by ``k^a / (k^a + 1)``, negative ones by ``k^b / (k^b + 1)`` (1/2 for beta 0) and
  strategy sums by ``(k / (k + 1))^g``; regret-based pruning and the regret floor as ``pluribus``'s
  (Leduc: the same exploitability per iteration as without, 5% fewer node visits).
* ``pluribus``: linear weighting for the first ``discount_until`` iterations, then plain sums;
  regret-based pruning after ``prune_start`` iterations in 95% of traversals, and a regret floor.

The pruning threshold and the regret floor are in pots: an action is pruned when its regret is
below ``prune_threshold_pots`` times the chips in the pot at its node, and no regret goes below
``floor_pots`` times the pot. A regret counts the evidence of the visits to its information set
(each adds about a pot's worth, win or lose), so the threshold asks for that many visits' worth
of loss whatever the iteration count, and discounting, which shrinks regrets toward 0, un-prunes
an action the visits stop pushing down. (Runs from before these two options compare the regret
with ``prune_threshold_bb`` and ``floor_bb`` big blinds per effective iteration ``W``, the
iteration count discounted as negative regrets are: an average over every iteration, which an
information set visited once in a thousand iterations never reaches; under DCFR the default
pruned 0.5% of actions on hunl100, and ``pluribus`` 0.0%.)
Boundaries are applied lazily, row by row (:mod:`blueprint.discount`).
The full-traversal solvers ``cfr`` (vanilla CFR) and ``cfr+`` (CFR+) use the same tree, tables and
buckets; they enumerate every deal, so they are for small games.
"""

from __future__ import annotations

import dataclasses
import math

SAMPLED_ALGOS = ("pluribus", "dcfr", "linear", "vanilla")
FULL_ALGOS = ("cfr", "cfr+")


#: DCFR's parameters (Brown & Sandholm 2019), the trainer's ``dcfr`` preset and the subgame solver's
DCFR_ALPHA, DCFR_BETA, DCFR_GAMMA = 1.5, 0.0, 2.0
DCFR_PARAMS = ("alpha", "beta", "gamma")  # their AlgoConfig fields, in that order


def dcfr_overrides(values) -> dict[str, float]:
    """``(alpha, beta, gamma)`` as :func:`get_algo` overrides."""
    return dict(zip(DCFR_PARAMS, (float(v) for v in values)))


#: the subgame solver's DCFR schedule (postflop-solver's, without its restarts of the strategy sum):
#: the strategy sum discounted with exponent 3, and the regrets' discount boundary one iteration
#: behind (the first iteration's regrets, those of the uniform strategy, are dropped at the second):
#: 0.5% of the pot in 82 iterations on the Libratus turn endgame and 73 on the river, against 96
#: and 84 with the trainer's schedule (BENCHMARKS.md, "Subgame solver against postflop-solver")
SUBGAME_DCFR_GAMMA = 3.0
SUBGAME_DCFR_REGRET_LAG = 1


class AlgoError(ValueError):
    pass


def dcfr_factors(
    k: int, alpha: float = DCFR_ALPHA, beta: float = DCFR_BETA, gamma: float = DCFR_GAMMA
) -> tuple[float, float, float]:
    """DCFR's (positive regret, negative regret, strategy sum) multipliers at discount boundary
    ``k >= 0``: ``k^a / (k^a + 1)``, ``k^b / (k^b + 1)`` and ``(k / (k + 1))^g``. The trainer
    discounts at boundary ``k`` every ``discount_every`` iterations (:meth:`AlgoConfig.factors`),
    the subgame solver before iteration ``k + 1`` (:func:`subgame.solver.iteration_weights`)."""
    pa = k**alpha
    pb = k**beta
    return pa / (pa + 1.0), pb / (pb + 1.0), (k / (k + 1.0)) ** gamma


@dataclasses.dataclass(frozen=True)
class AlgoConfig:
    name: str
    discount: str = "none"  # none | linear | dcfr
    alpha: float = DCFR_ALPHA
    beta: float = DCFR_BETA
    gamma: float = DCFR_GAMMA
    discount_every: int = 1000
    discount_until: int = -1  # iterations; -1: for the whole run
    prune: bool = False
    prune_start: int = 0
    prune_prob: float = 0.95
    prune_threshold_bb: float = -0.02  # per effective iteration: runs without the pot options
    floor_bb: float = -0.03
    # pots at the node (see the module docstring); None in runs from before them
    prune_threshold_pots: float | None = None
    floor_pots: float | None = None
    regret_dtype: str = "float32"
    # opponent actions in external sampling drawn from (1 - explore) * sigma + explore * uniform
    # (blueprint.kernels: a trembling opponent, without importance weights)
    explore: float = 0.0
    # 32: float32 (or int32) regrets and float32 strategy sums; 16: both as bfloat16 (the upper
    # half of a float32) with stochastic rounding (blueprint.numerics, "Compact tables")
    table_bits: int = 32

    def __post_init__(self) -> None:
        if not all(math.isfinite(x) for x in (self.alpha, self.beta, self.gamma)) or self.gamma < 0:
            raise AlgoError(
                f"DCFR's alpha and beta must be finite and gamma finite and >= 0, got "
                f"{self.alpha}, {self.beta}, {self.gamma}"
            )
        if not 0.0 <= self.explore < 1.0:
            raise AlgoError(f"explore must be in [0, 1), got {self.explore}")
        if self.explore and self.name in FULL_ALGOS:
            raise AlgoError("explore applies to sampled algorithms only (full-traversal CFR samples nothing)")
        if self.discount not in ("none", "linear", "dcfr"):
            raise AlgoError(f"discount must be none, linear or dcfr, got {self.discount!r}")
        if self.discount_every < 1:
            raise AlgoError(f"discount_every must be >= 1, got {self.discount_every}")
        if not 0.0 <= self.prune_prob <= 1.0:
            raise AlgoError(f"prune_prob must be in [0, 1], got {self.prune_prob}")
        if self.prune and not self.floor_bb <= self.prune_threshold_bb < 0:
            raise AlgoError("need floor_bb <= prune_threshold_bb < 0")
        if (self.prune_threshold_pots is None) != (self.floor_pots is None):
            raise AlgoError("prune_threshold_pots and floor_pots go together")
        if self.floor_pots is not None and self.prune_threshold_pots is not None:
            if not all(math.isfinite(x) for x in (self.floor_pots, self.prune_threshold_pots)) or not (
                self.floor_pots <= self.prune_threshold_pots < 0
            ):
                raise AlgoError(
                    f"need floor_pots <= prune_threshold_pots < 0, got {self.floor_pots}, "
                    f"{self.prune_threshold_pots}"
                )
        if self.regret_dtype not in ("float32", "int32"):
            raise AlgoError(f"regret_dtype must be float32 or int32, got {self.regret_dtype!r}")
        if self.name in FULL_ALGOS and self.regret_dtype != "float32":
            raise AlgoError("full-traversal CFR keeps float32 regrets")
        if self.table_bits not in (16, 32):
            raise AlgoError(f"table_bits must be 16 or 32, got {self.table_bits!r}")
        if self.table_bits == 16 and (self.name in FULL_ALGOS or self.regret_dtype != "float32"):
            raise AlgoError(
                "16-bit tables (bfloat16) are for sampled algorithms with float32 regrets, not "
                + (
                    f"--algo {self.name}"
                    if self.name in FULL_ALGOS
                    else f"--regret-dtype {self.regret_dtype}"
                )
            )

    @property
    def full_traversal(self) -> bool:
        return self.name in FULL_ALGOS

    def factors(self, k: int) -> tuple[float, float, float]:
        """(positive regret, negative regret, strategy sum) multipliers at discount boundary k >= 1."""
        if self.discount == "linear":
            f = k / (k + 1.0)
            return f, f, f
        if self.discount == "dcfr":
            return dcfr_factors(k, self.alpha, self.beta, self.gamma)
        return 1.0, 1.0, 1.0

    def discounts_at(self, t: int) -> bool:
        """Whether a discount boundary falls after iteration count ``t``."""
        if self.discount == "none" or t <= 0 or t % self.discount_every:
            return False
        return self.discount_until < 0 or t <= self.discount_until


#: The presets' pruning threshold and floor, in pots at the node (docs/training.md, "Algorithms", has
#: the measurements behind -64: -4 measured weaker, -256 and -1,024 save fewer node visits).
PRUNE_POTS = {"prune_threshold_pots": -64.0, "floor_pots": -80.0}

PRESETS = {
    "vanilla": AlgoConfig("vanilla", **PRUNE_POTS),  # the thresholds for --prune
    "linear": AlgoConfig("linear", discount="linear", **PRUNE_POTS),
    "dcfr": AlgoConfig("dcfr", discount="dcfr", prune=True, prune_start=20_000, **PRUNE_POTS),
    "pluribus": AlgoConfig(
        "pluribus", discount="linear", discount_until=400_000, prune=True, prune_start=20_000, **PRUNE_POTS
    ),
    "cfr": AlgoConfig("cfr"),
    "cfr+": AlgoConfig("cfr+"),
}


def algo_dict(a: AlgoConfig) -> dict:
    """``a`` as the run config stores (and hashes) it: fields added later are left out at their
    default (``explore`` 0, ``table_bits`` 32), so runs from before them keep their config hash."""
    d = dataclasses.asdict(a)
    if d["explore"] == 0.0:
        del d["explore"]
    if d["table_bits"] == 32:
        del d["table_bits"]
    for k in ("prune_threshold_pots", "floor_pots"):
        if d[k] is None:  # TOML has no null, and runs from before keep their hash
            del d[k]
    return d


def get_algo(name: str, **overrides) -> AlgoConfig:
    if name not in PRESETS:
        raise AlgoError(f"unknown algorithm {name!r}: choose one of {', '.join(PRESETS)}")
    return dataclasses.replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})
