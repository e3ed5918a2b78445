"""``mccfr train`` builds a missing card-abstraction recipe explicitly, first (issue 15 item 4);
``mccfr export`` (a query) never builds one and names the command that does."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mccfr.cli import cli


class Built(Exception):
    pass


def _recipe_run(run: Path) -> None:
    """A hunl20 run whose card abstraction is the recipe ``small``, never built here (the
    abstraction object is stood in for: only its name, bucket counts and hash are written)."""
    import hashlib

    import numpy as np

    from abstraction.cards import TABLE, CardAbstraction
    from blueprint.tables import layout
    from blueprint.trainer import make_trainer

    tr = make_trainer("hunl20", bets="small", cards="rank", seed=0)
    tr.cards = CardAbstraction(
        "small", TABLE, (169, 50, 50, 50), source_hash="0123456789abcdef", method="ehs2"
    )
    tr.num_buckets = tr.cards.buckets_array()
    tr.row_offset, tr.size = layout(tr.tree, tr.num_buckets)
    tr.regret, tr.strat = np.zeros(tr.size, np.float32), np.zeros(tr.size, np.float32)
    tr.abstraction_hash = hashlib.blake2b(
        (tr.tree.content_hash() + tr.cards.content_hash()).encode(), digest_size=8
    ).hexdigest()
    tr.config_dict = {**tr.config_dict, "cards": "small"}
    tr.save(run)


def test_train_builds_a_missing_recipe_before_anything_else(tmp_path: Path, monkeypatch) -> None:
    import abstraction.buckets as buckets

    monkeypatch.setenv("MCCFR_CACHE", str(tmp_path / "cache"))
    calls = []

    def fake_ensure(game, name, **kw):
        calls.append((game.name, name, kw.get("build", True)))
        raise Built()  # stop here: the build is the first thing the command does

    monkeypatch.setattr(buckets, "ensure_recipe", fake_ensure)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli, ["train", "--game", "hunl20", "--abstraction", "small", "--iterations", "10", "--out", str(out)]
    )
    assert isinstance(result.exception, Built), result.output
    assert calls == [("hunl20", "small", True)]
    assert "building it first" in result.stderr
    assert not out.exists()  # nothing of the run exists before the abstraction


def test_export_of_a_run_without_its_abstraction_names_the_build(tmp_path: Path, monkeypatch) -> None:
    import abstraction.buckets as buckets

    cache = tmp_path / "cache"
    monkeypatch.setenv("MCCFR_CACHE", str(cache))
    monkeypatch.setattr(buckets, "build_buckets", lambda *a, **k: pytest.fail("a query started a build"))
    _recipe_run(tmp_path / "run")
    result = CliRunner().invoke(cli, ["export", str(tmp_path / "run"), "--out", str(tmp_path / "s.parquet")])
    assert result.exit_code == 2, result.output
    assert f"MCCFR_CACHE={cache} mccfr abstraction build --game hunl20 --abstraction small" in result.stderr
    assert not cache.exists()
