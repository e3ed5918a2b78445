"""Small combinatorics kernels shared by the abstraction builders."""

from __future__ import annotations

import numba


@numba.njit(cache=True, inline="always", error_model="numpy")
def next_combination(idx, k, n):
    """Advance ``idx[:k]`` (increasing indices into ``range(n)``) to the next ``k``-subset in
    lexicographic order, in place; False when ``idx`` was the last one."""
    p = k - 1
    while p >= 0 and idx[p] == n - k + p:
        p -= 1
    if p < 0:
        return False
    idx[p] += 1
    for j in range(p + 1, k):
        idx[j] = idx[j - 1] + 1
    return True
