"""Every published parameter and MAdds figure in studies/papers is reproduced by the cost model."""

from pathlib import Path

import pytest

from searchspace.files import find_config_files, load_config_file
from trainers import cost
from trainers.reference import Figure, compare

ROOT = Path(__file__).resolve().parents[1]
PAPER_FILES = find_config_files([ROOT / "studies" / "papers"])


def test_every_table_is_covered():
    tables = {(f.parent.name, load_config_file(f).reference["table"]) for f in PAPER_FILES}
    expected = {("lw-transformer", t) for t in ("II", "III")} | {("acort", t) for t in ("1", "6", "7", "8", "9", "10")}
    assert expected <= tables
    assert len(PAPER_FILES) >= 44


@pytest.mark.parametrize("path", PAPER_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_row_reproduces_the_paper(path):
    f = load_config_file(path)
    report = cost(f.config, memory=False)
    rows = compare(f.config, report, f.reference)
    assert rows, "a paper row must carry at least one published figure"
    for c in rows:
        if c.asserted:
            assert c.matches, f"{c.metric}/{c.scope}: paper {c.paper.text}, ours {c.ours:,} ({c.rel_error:+.2%})"
        else:
            # The three LW-Transformer rows the paper's own other rows contradict (DESIGN.md): ours is
            # what those rows imply, about 1.6-1.7M below the printed figure. MAdds still match.
            assert c.metric == "params" and 1.5e6 < c.paper.value - c.ours < 1.8e6, c


def test_figure_precision():
    assert Figure.parse("0.3M").half_unit == pytest.approx(0.05e6)
    assert Figure.parse("2.58G").value == pytest.approx(2.58e9)
    with pytest.raises(ValueError, match="44.1M"):
        Figure.parse("about 44")
