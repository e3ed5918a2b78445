"""``mccfr abstraction build``: card abstractions into the cache or a directory."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import click

from abstraction.buckets import (
    RECIPES,
    AbstractionError,
    build_buckets,
    ensure_recipe,
)
from abstraction.storage import read_abstraction
from blueprint.defaults import DEFAULT_GAME
from holdem.gamedef import load_gamedef
from mccfr.cli.common import json_opt, user_input


@click.group()
def abstraction() -> None:
    """Card abstractions: build hand-strength buckets (cached, reused by training)."""


@abstraction.command(name="build")
@click.option("--game", default=DEFAULT_GAME, show_default=True, help="A preset or an ACPC .game file.")
@click.option(
    "--abstraction",
    "recipe",
    default=None,
    help="A recipe name: small (E[HS^2] percentiles, 169/50/50/50), medium (potential-aware, "
    "169/100/100/100), large (potential-aware, 169/200/200/200), fine (E[HS^2] percentiles, "
    "169/1000/1000/1000).",
)
@click.option(
    "--buckets", default=None, help="Bucket counts per round, e.g. 169,50,50,50 (preflop 169 = lossless)."
)
@click.option(
    "--method",
    default="ehs2",
    show_default=True,
    help="ehs, ehs2 (percentile buckets of E[HS] / E[HS^2]), distribution (k-medians of final-strength "
    "histograms under EMD, OCHS last round) or potential (EMD over next-round bucket histograms; "
    "exact on small decks, k-means on samples then every class assigned on 52 cards); "
    "distribution is for small decks only.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="k-means seed (distribution, potential)."
)
@click.option(
    "--out", "out", default=None, help="Directory to build into [default: the cache, for a recipe]."
)
@click.option(
    "--fill",
    is_flag=True,
    help="ehs, ehs2: deal the percentile buckets out again where tied strengths would leave some "
    "empty (exact river strengths tie often: the fine recipe uses 787 of its 1,000 river buckets).",
)
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Threads [default: all cores].")
@json_opt
def abstraction_build(game, recipe, buckets, method, out, threads, seed, fill, as_json):
    """Build a card abstraction (resumes a partial build in the same directory)."""
    if (recipe is None) == (buckets is None):
        raise click.UsageError("give --abstraction NAME or --buckets B1,B2,... (one of them)")
    if fill and (recipe is not None or method not in ("ehs", "ehs2")):
        raise click.UsageError("--fill applies to --buckets with --method ehs or ehs2")
    t0 = time.perf_counter()
    with user_input():
        gd = load_gamedef(game)
        # (any number of seats: buckets depend on the deck and the deal, not on who holds the hands)
        if recipe is not None:
            if recipe not in RECIPES:
                raise AbstractionError(
                    f"unknown abstraction recipe {recipe!r}: choose one of {', '.join(RECIPES)}"
                )
            if out is None:
                path = ensure_recipe(gd, recipe, log=lambda m: click.echo(m, err=True), threads=threads)
            else:
                rec = RECIPES[recipe]
                path = build_buckets(
                    gd,
                    rec.buckets,
                    rec.method,
                    out,
                    threads=threads,
                    spec=rec.spec,
                    log=lambda m: click.echo(m, err=True),
                )
        else:
            try:
                counts = tuple(int(x) for x in buckets.split(","))
            except ValueError:
                raise AbstractionError(f"--buckets {buckets!r}: expected comma-separated integers") from None
            if out is None:
                raise click.UsageError("--buckets needs --out DIR")
            path = build_buckets(
                gd,
                counts,
                method,
                out,
                threads=threads,
                seed=seed,
                fill=fill,
                log=lambda m: click.echo(m, err=True),
            )
        header, _ = read_abstraction(path, gd)
    res = {
        "path": str(path),
        "buckets": header["buckets"],
        "method": header["method"],
        "hash": header["hash"],
        "seconds": time.perf_counter() - t0,
    }
    click.echo(f"abstraction: {path} ({header['method']} buckets {header['buckets']}, hash {header['hash']})")
    click.echo(
        f"train with it: mccfr train --game {shlex.quote(game)} --abstraction {shlex.quote(str(Path(path).parent))}"
    )
    if as_json:
        click.echo(json.dumps(res))
