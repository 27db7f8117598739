"""Checking a study costs the same whatever its range widths and choice counts, and its error messages
quote values at a bounded size (an alias bomb in `seed_configs` must not print megabytes).

Each case runs `lwnas space validate` in a subprocess under a generous time limit: before the checks
stopped enumerating domains, `layers: {int: [1, 100000000]}` did not finish in 5 minutes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers.procs import lwnas

LIMIT_S = 120  # generous: the checks themselves take well under a second


def validate(study: Path) -> subprocess.CompletedProcess:
    """`lwnas space validate` without costing sampled points (costs grow with widths; the check must not)."""
    return lwnas(study.parent, "space", "validate", str(study), "--samples", "0", timeout=LIMIT_S)


def study(tmp_path: Path, space: str, extra: str = "") -> Path:
    path = tmp_path / "wide.yaml"
    path.write_text(
        "name: wide\ntask: digits\nobjectives: [accuracy, params]\nbudget: {trials: 2, epochs: 1}\n"
        f"{extra}space:\n{space}"
    )
    return path


def test_wide_int_ranges_validate_without_enumerating(tmp_path):
    # as wide as the knobs' limits allow (d_model 65,536, d_ff 262,144, layers 256): 34 billion points
    result = validate(
        study(
            tmp_path,
            "  d_model: {int: [16, 65536], step: 16}\n  heads: {choice: [1, 2]}\n"
            "  d_ff: {int: [16, 262144], step: 16}\n  layers: {int: [1, 256]}\n",
        )
    )
    assert result.returncode == 0, result.stderr
    assert "34,359,738,368 discrete combinations" in result.stderr, result.stderr


def test_a_long_choice_validates_and_a_wide_range_still_finds_broken_rules(tmp_path):
    # 30,000 values (a quadratic check took minutes), within d_ff's limit of 262,144
    choices = ", ".join(str(8 * i) for i in range(1, 30001))
    result = validate(study(tmp_path, f"  d_ff: {{choice: [{choices}]}}\n  d_model: 64\n  heads: 2\n  layers: 1\n"))
    assert result.returncode == 0, result.stderr
    assert "30,000 discrete combinations" in result.stderr, result.stderr
    # heads beyond 64 never divide d_model 64: found among a wide range's checked values
    result = validate(study(tmp_path, "  d_model: 64\n  heads: {int: [1, 1024]}\n  layers: 1\n"))
    assert result.returncode == 2 and "must be divisible by `heads`" in result.stderr, result.stderr


def test_a_range_beyond_a_knobs_limit_is_one_line(tmp_path):
    result = validate(study(tmp_path, "  d_model: {int: [16, 1600000000], step: 16}\n  heads: 2\n  layers: 1\n"))
    lines = [line for line in result.stderr.splitlines() if line.startswith("error ")]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[:3000]
    assert "space.d_model.int: must be at most 65,536 (the knob's limit), got " in lines[0], lines
    assert "more of the values checked)" in lines[0], lines


def test_huge_values_in_seed_configs_are_quoted_truncated(tmp_path):
    space = "  d_model: {choice: [16, 32]}\n  heads: 2\n  layers: 1\n"
    result = validate(study(tmp_path, space, extra=f"seed_configs:\n  s: {{d_model: {'x' * 1_000_000}}}\n"))
    assert result.returncode == 2 and "seed_configs.s.d_model: 'xxxx" in result.stderr, result.stderr[:2000]
    assert len(result.stderr) < 5000, len(result.stderr)
    # an alias bomb (10**9 leaves): refused by the loader or quoted truncated, never printed whole
    anchors = (
        "x0: &x0 ["
        + ", ".join(["lol"] * 10)
        + "]\n"
        + "".join(f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 10) + "]\n" for i in range(1, 9))
    )
    result = validate(study(tmp_path, space, extra=anchors + "seed_configs:\n  s: {d_model: *x8}\n  t: *x8\n"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[:2000]
    assert len(result.stderr) < 5000, len(result.stderr)
