"""The continuations after a depth-limited subgame's leaves as flat arrays (:class:`LeafModel`,
built by :func:`subgame.continuation.build_leaf_model`) and the work arrays of their walk
(:class:`LeafWork`), the data that :func:`subgame.depth_kernels.cont_walk` reads (see
:mod:`subgame.depth` for the method).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from subgame import depth_kernels as DK


@dataclasses.dataclass
class LeafModel:
    """Every leaf's continuation as flat arrays (the :func:`~subgame.depth_kernels.cont_walk`
    layout): leaf ``l``'s tree from node ``leaf_root[l]``; ``srow`` each decision's first row in
    the strategy tables ``s_me`` ``[rows, B]`` and ``s_op`` ``[k, rows, B]``; per board ``b`` of
    ``boards``: ``bucket[b, h]``, ``valid``, and on complete boards the showdown order."""

    me: int
    k: int
    leaf_nodes: np.ndarray
    leaf_of: np.ndarray
    leaf_root: np.ndarray
    kind: np.ndarray
    player: np.ndarray
    spent: np.ndarray
    child_start: np.ndarray
    num_actions: np.ndarray
    edge_child: np.ndarray
    board: np.ndarray
    deal_count: np.ndarray
    srow: np.ndarray
    s_me: np.ndarray
    s_op: np.ndarray
    boards: list
    bucket: np.ndarray
    valid: np.ndarray
    order: np.ndarray
    sstrength: np.ndarray
    nvalid: np.ndarray
    hands: np.ndarray
    dealt: np.ndarray
    depth: int
    build_s: float
    sample: Optional[np.ndarray] = None  # the cards the later deals come from (None: every card)
    leaf_deals: Optional[tuple] = None  # or the deals per later round of its sampled runouts

    def kernel_arrays(self) -> DK.ContModel:
        """The continuation trees as one kernel argument (fixed dtypes: one compilation)."""
        ka = self.__dict__.get("_kernel_arrays")
        if ka is None:
            ka = DK.ContModel(
                **{f: np.ascontiguousarray(getattr(self, f), dt) for f, (dt, _) in DK.CONT_DTYPES.items()}
            )
            self.__dict__["_kernel_arrays"] = ka
        return ka

    @property
    def num_leaves(self) -> int:
        return len(self.leaf_nodes)

    @property
    def num_nodes(self) -> int:
        return len(self.kind)

    @property
    def num_cards(self) -> int:
        return int(self.hands.max()) + 1 if len(self.hands) else 1

    def memory_bytes(self) -> int:
        return sum(a.nbytes for a in self.kernel_arrays())


class LeafWork:
    """Work arrays of :func:`~subgame.depth_kernels.cont_walk` for one model."""

    def __init__(self, m: LeafModel):
        H, k, D = len(m.hands), m.k, m.depth
        f = np.float32
        self.rin = np.zeros((k, H), f)
        self.rbuf = np.zeros((D, k, H), f)
        self.vbuf = np.zeros((D, k, H), f)
        self.rid = np.zeros(D, np.int64)
        self.fn = np.zeros(D, np.int64)
        self.fa = np.zeros(D, np.int64)
        self.nin = np.zeros(D, np.int64)
        self.tv = np.zeros(H, f)
        self.rho = np.zeros(H, f)
        self.card = np.zeros(m.num_cards)
        self.cout = np.zeros((k, H), f)
        self.sbuf = np.zeros(k)
        self.pick = np.full(H, -1, np.int64)

    def arrays(self) -> DK.ContWork:
        return DK.ContWork(
            self.pick,
            self.rin,
            self.rbuf,
            self.vbuf,
            self.rid,
            self.fn,
            self.fa,
            self.nin,
            self.tv,
            self.rho,
            self.card,
            self.cout,
            self.sbuf,
        )
