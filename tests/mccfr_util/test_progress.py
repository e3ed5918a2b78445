"""Progress: a tqdm bar on a terminal, plain lines (one per interval, one at the end) elsewhere."""

from __future__ import annotations

import io

from abstraction.bucket_common import run_chunks
from mccfr_util.progress import PlainProgress, progress_bar


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_progress_writes_one_line_per_interval_and_one_at_the_end():
    out, clock = io.StringIO(), Clock()
    bar = PlainProgress(1000, "build", "boards", file=out, interval=20.0, clock=clock)
    for _ in range(50):  # 50 updates within 6.25 s: nothing yet
        clock.t += 0.125
        bar.update(4)
    assert out.getvalue() == ""
    clock.t += 13.75  # 20 s since the start
    bar.set_postfix(changed=7, refresh=False)
    bar.update(200)
    assert out.getvalue().splitlines() == [
        "build: 400/1,000 boards (40%), 20 boards/s, 0:20 elapsed, ETA 0:30, changed=7"
    ]
    clock.t += 10.0
    bar.update(600)  # 10 s later: not due
    bar.write("a note")
    bar.close()
    bar.close()  # once
    lines = out.getvalue().splitlines()
    assert lines[1:] == ["a note", "build: 1,000/1,000 boards (100%), 60 boards/s, 0:30 elapsed, changed=7"]
    assert "\r" not in out.getvalue()


def test_plain_progress_without_a_total_and_nothing_new_at_close():
    out, clock = io.StringIO(), Clock()
    bar = PlainProgress(None, "leduc", file=out, interval=5.0, clock=clock)
    clock.t += 5.0
    bar.set_postfix_str("mem 1 MB", refresh=False)
    bar.update(2500)
    bar.close()  # the last line already said this
    assert out.getvalue() == "leduc: 2,500 it, 500 it/s, 0:05 elapsed, mem 1 MB\n"


def test_progress_bar_is_tqdm_on_a_terminal_only():
    term = Terminal()
    bar = progress_bar(10, "t", "it", file=term, mininterval=0)
    assert type(bar).__name__ == "tqdm"
    bar.update(10)
    bar.close()
    assert "\r" in term.getvalue()  # the live bar, as before
    plain = io.StringIO()
    bar = progress_bar(10, "t", "it", file=plain)
    assert isinstance(bar, PlainProgress)
    bar.update(10)
    bar.close()
    assert plain.getvalue().startswith("t: 10/10 it (100%), ") and "\r" not in plain.getvalue()


def test_card_abstraction_chunks_report_plain_lines_in_a_log(capsys):
    out = run_chunks(lambda lo, hi: hi - lo, 5000, 2, "round 2 hand strength", progress=True)
    assert sum(out) == 5000
    err = capsys.readouterr().err
    assert "\r" not in err
    assert err.splitlines()[-1].startswith("round 2 hand strength: 5,000/5,000 boards (100%)")
