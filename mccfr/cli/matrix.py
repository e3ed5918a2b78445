"""``mccfr matrix``: regret matching on a zero-sum matrix game."""

from __future__ import annotations

import json

import click

from blueprint.matrix import MatrixGameError, RegretMatching, load_csv, report_points
from mccfr.cli.common import CLIError, json_opt


def _probabilities(text: str | None, option: str) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise CLIError(
            f"{option} {text!r}: expected comma-separated probabilities, e.g. 0.4,0.3,0.3"
        ) from None


@click.command()
@click.argument("csv_file", metavar="FILE.csv")
@click.option("--iterations", type=click.IntRange(min=1), default=100_000, show_default=True)
@click.option(
    "--positive-only",
    is_flag=True,
    help="Add only the positive part of each instantaneous regret (a variant of some course notes).",
)
@click.option(
    "--fixed-row",
    default=None,
    metavar="P1,P2,...",
    help="Fix the row player's strategy (it does not learn).",
)
@click.option(
    "--fixed-column",
    default=None,
    metavar="P1,P2,...",
    help="Fix the column player's strategy (it does not learn).",
)
@json_opt
def matrix(csv_file, iterations, positive_only, fixed_row, fixed_column, as_json):
    """Regret matching for both players of a zero-sum matrix game.

    FILE.csv: no header, one line per row-player action, one number per column-player action,
    the row player's payoff. Prints the average strategies, the value (row player's payoff) and
    the exploitability (NashConv / 2) as they converge.
    """

    try:
        game = load_csv(csv_file)
        rm = RegretMatching(
            game,
            positive_only=positive_only,
            fixed_row=_probabilities(fixed_row, "--fixed-row"),
            fixed_column=_probabilities(fixed_column, "--fixed-column"),
        )
    except MatrixGameError as exc:
        raise CLIError(str(exc)) from None
    m, n = game.shape
    click.echo(
        f"{csv_file}: {m} x {n} zero-sum game, regret matching"
        + (" (positive-only regret updates)" if positive_only else "")
    )

    def vec(p) -> str:
        return "(" + ", ".join(f"{v:.4f}" for v in p) + ")"

    click.echo(
        f"{'iteration':>12}  {'row':<{9 * m}}  {'column':<{9 * n}}  {'value':>10}  {'exploitability':>14}"
    )

    def report(r) -> None:
        s = r.summary()
        click.echo(
            f"{s['iterations']:>12,}  {vec(s['row']):<{9 * m}}  {vec(s['column']):<{9 * n}}  "
            f"{s['value']:>+10.6f}  {s['exploitability']:>14.6g}"
        )

    rm.run(iterations, callback=report, report_at=report_points(iterations))
    if as_json:
        out = rm.summary()
        out["positive_only"] = positive_only
        click.echo(json.dumps(out))
