"""Search-space conversion for Optuna, Ray Tune and NNI, checked against each backend's own API.

For each backend the same space is also written by hand ("native"), the way a user of that backend
would write it; with the same seed, the converted space and the native one must give the same
configurations. Then every shipped study is sampled through every backend: each point resolves
strictly, carries exactly its active knobs, and every value of every choice shows up.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")
tune = pytest.importorskip("ray.tune")
pytest.importorskip("nni")

import nni  # noqa: E402
from nni.algorithms.hpo.evolution_tuner import EvolutionTuner  # noqa: E402
from nni.algorithms.hpo.random_tuner import RandomTuner  # noqa: E402
from nni.algorithms.hpo.tpe_tuner import TpeTuner  # noqa: E402
from ray.tune.search.variant_generator import generate_variants  # noqa: E402

from searchspace.config import ArchConfig  # noqa: E402
from searchspace.convert import (  # noqa: E402
    from_nni,
    from_ray,
    optuna_distribution,
    optuna_search_space,
    optuna_suggest,
    to_nni,
    to_ray,
)
from searchspace.domains import Choice  # noqa: E402
from searchspace.space import SearchSpace  # noqa: E402
from searchspace.study import load_study  # noqa: E402
from searchspace.training import TRAINING_DEFAULTS  # noqa: E402
from tuners.planning.check import task_family  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = "studies/quickstart.yaml"
STUDIES = sorted(
    {
        QUICKSTART,
        *(
            str(p.relative_to(ROOT))
            for pattern in (
                "studies/tasks/*.yaml",
                "studies/full/*.yaml",
                "studies/paper-tables/*.yaml",
                "studies/tables/*.yaml",
            )
            for p in ROOT.glob(pattern)
        ),
    }
)

optuna.logging.set_verbosity(optuna.logging.WARNING)
pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")


@cache
def _study(path: str):
    return load_study(ROOT / path, task_family=task_family)


def _space(path: str) -> SearchSpace:
    return _study(path).space


def _typed(x: Any) -> Any:
    """A comparable form that keeps True apart from 1 and 2 apart from 2.0 (Python says they are equal)."""
    if isinstance(x, Mapping):
        return {k: _typed(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_typed(v) for v in x]
    return (type(x).__name__, x)


def _encode(value: Any) -> float:
    if value is None:
        return 0.5
    if isinstance(value, bool):
        return 1.0 + value
    if isinstance(value, str):
        return float(sum(map(ord, value)) % 11)
    return float(value)


def _objectives(params: Mapping[str, Any]) -> tuple[float, float]:
    """Two deterministic values computed from the params (no training)."""
    weight = {name: sum(map(ord, name)) % 13 + 1 for name in params}
    first = sum(weight[n] * _encode(v) for n, v in params.items())
    second = sum(math.log1p(abs(_encode(v))) / weight[n] for n, v in params.items())
    return first, second


# ---- independent check of which knobs are active ----------------------------------------------
# The architecture's activation rules, written here by hand (not read from searchspace.space.IMPLIED).
RULES = {
    "groups": lambda v: v["g_mha"] or v["g_ffn"],
    "weight_sharing": lambda v: v["g_mha"] or v["g_ffn"],
    "qk_expansion": lambda v: v["g_mha"],
    "g_lml": lambda v: v["g_mha"],
    "g_il": lambda v: v["g_ffn"],
    "sketch_n": lambda v: v["pooling"] == "sketch",
    "sketch_k": lambda v: v["pooling"] == "sketch",
    "sketch_d": lambda v: v["pooling"] == "sketch",
    "coupled_scale": lambda v: v["attention"] == "coupled",
}


def _member(value: Any, allowed: Any) -> bool:
    allowed = allowed if isinstance(allowed, list) else [allowed]
    return any(type(value) is type(a) and value == a for a in allowed)


def _when_holds(when: Any, values: Mapping[str, Any]) -> bool:
    clauses = when if isinstance(when, list) else [when]
    return any(all(_member(values[k], allowed) for k, allowed in clause.items()) for clause in clauses)


def _searched(spec: Any) -> bool:
    return isinstance(spec, Mapping) and any(k in spec for k in ("choice", "int", "float"))


def _expected_active(data: Mapping[str, Any], family: str, params: Mapping[str, Any]) -> set[str]:
    """The searched knobs of the YAML ``space`` mapping ``data`` that are active for ``params``."""
    base = ArchConfig(family=family)
    values = {name: getattr(base, name, TRAINING_DEFAULTS.get(name)) for name in ArchConfig.__dataclass_fields__}
    values.update(TRAINING_DEFAULTS)
    for name, spec in data.items():
        if not _searched(spec):
            values[name] = spec["value"] if isinstance(spec, Mapping) else spec
    values.update(params)
    active = set()
    for name, spec in data.items():
        if not _searched(spec):
            continue
        if name in RULES and not RULES[name](values):
            continue
        if "when" in spec and not _when_holds(spec["when"], values):
            continue
        active.add(name)
    return active


def _check_point(data: Mapping[str, Any], space: SearchSpace, params: Mapping[str, Any]) -> None:
    point = space.resolve(params, strict=True)  # raises SpaceError on a missing, extra or bad value
    assert _typed(point.params) == _typed(dict(params))
    assert set(params) == _expected_active(data, space.family, params), params


# ---- hand-written spaces ------------------------------------------------------------------------
# Decision order of quickstart's searched knobs (heads is fixed, so never suggested).
QUICKSTART_ORDER = [
    "d_model",
    "layers",
    "g_mha",
    "g_ffn",
    "groups",
    "weight_sharing",
    "layer_sharing",
    "attention",
    "pooling",
    "sketch_n",
    "sketch_k",
    "lr",
]


def native_optuna_quickstart(trial) -> dict[str, Any]:
    """quickstart.yaml's space, define-by-run by hand.

    Suggestions are made in the space's decision order (``study.space.names``, QUICKSTART_ORDER):
    the samplers draw from one RNG stream per study, so the order of suggestions must match the
    converted function's for the two to see the same random numbers.
    """
    p: dict[str, Any] = {}
    p["d_model"] = trial.suggest_categorical("d_model", [32, 64])
    p["layers"] = trial.suggest_int("layers", 1, 2)
    p["g_mha"] = trial.suggest_categorical("g_mha", [True, False])
    p["g_ffn"] = trial.suggest_categorical("g_ffn", [True, False])
    if p["g_mha"] or p["g_ffn"]:  # groups and weight sharing only with grouped MHA or FFN
        p["groups"] = trial.suggest_categorical("groups", [2, 4])
        p["weight_sharing"] = trial.suggest_categorical("weight_sharing", [True, False])
    p["layer_sharing"] = trial.suggest_categorical("layer_sharing", ["none", "albert"])
    p["attention"] = trial.suggest_categorical("attention", ["standard", "coupled"])
    p["pooling"] = trial.suggest_categorical("pooling", ["mean", "sketch"])
    if p["pooling"] == "sketch":  # T-EMDE sketch knobs only with sketch pooling
        p["sketch_n"] = trial.suggest_int("sketch_n", 2, 8)
        p["sketch_k"] = trial.suggest_categorical("sketch_k", [4, 8])
    p["lr"] = trial.suggest_float("lr", 5.0e-4, 5.0e-3, log=True)
    return p


# A small space with a float log range, int ranges with a step (aligned and not aligned to low), a
# log int range, a choice containing null, `when:` conditions listing several values (null among
# them), a conditional with two parents (user `when` & implied g_mha) and one on an int knob.
MIXED = {
    "d_model": {"choice": [32, 64]},
    "d_ff": {"choice": [None, 64, 128]},
    "heads": 4,
    "layers": {"int": [1, 3]},
    "dropout": {"float": [0.0, 0.3], "when": {"d_ff": [None, 128]}},
    "g_mha": {"choice": [True, False]},
    "groups": 2,
    "attention_sharing": {"choice": ["none", "qk", "kv"]},
    "qk_expansion": {"int": [1, 3], "when": {"attention_sharing": ["none", "qk"]}},
    "pooling": {"choice": ["mean", "attention", "sketch"]},
    "sketch_n": {"int": [2, 32], "step": 2},
    "sketch_k": {"int": [2, 32], "log": True},
    "sketch_d": {"int": [3, 15], "step": 4},
    "lr": {"float": [1.0e-4, 1.0e-2], "log": True},
    "weight_decay": {"float": [0.0, 0.1], "when": {"layers": [2, 3]}},
}
MIXED_ORDER = [
    "d_model",
    "d_ff",
    "layers",
    "dropout",
    "g_mha",
    "attention_sharing",
    "qk_expansion",
    "pooling",
    "sketch_n",
    "sketch_k",
    "sketch_d",
    "lr",
    "weight_decay",
]


def _mixed() -> SearchSpace:
    return SearchSpace.from_dict(MIXED, "encoder")


def native_optuna_mixed(trial) -> dict[str, Any]:
    """MIXED by hand, in its decision order (MIXED_ORDER) for the same reason as above."""
    p: dict[str, Any] = {}
    p["d_model"] = trial.suggest_categorical("d_model", [32, 64])
    p["d_ff"] = trial.suggest_categorical("d_ff", [None, 64, 128])
    p["layers"] = trial.suggest_int("layers", 1, 3)
    if p["d_ff"] is None or p["d_ff"] == 128:
        p["dropout"] = trial.suggest_float("dropout", 0.0, 0.3)
    p["g_mha"] = trial.suggest_categorical("g_mha", [True, False])
    p["attention_sharing"] = trial.suggest_categorical("attention_sharing", ["none", "qk", "kv"])
    if p["g_mha"] and p["attention_sharing"] in ("none", "qk"):
        p["qk_expansion"] = trial.suggest_int("qk_expansion", 1, 3)
    p["pooling"] = trial.suggest_categorical("pooling", ["mean", "attention", "sketch"])
    if p["pooling"] == "sketch":
        p["sketch_n"] = trial.suggest_int("sketch_n", 2, 32, step=2)
        p["sketch_k"] = trial.suggest_int("sketch_k", 2, 32, log=True)
        p["sketch_d"] = trial.suggest_int("sketch_d", 3, 15, step=4)
    p["lr"] = trial.suggest_float("lr", 1.0e-4, 1.0e-2, log=True)
    if p["layers"] in (2, 3):
        p["weight_decay"] = trial.suggest_float("weight_decay", 0.0, 0.1)
    return p


def native_ray_quickstart() -> dict[str, Any]:
    """quickstart.yaml's space as a flat Ray param_space (Ray samples every key, in this order)."""
    return {
        "d_model": tune.choice([32, 64]),
        "layers": tune.randint(1, 3),  # upper bound exclusive
        "g_mha": tune.choice([True, False]),
        "g_ffn": tune.choice([True, False]),
        "groups": tune.choice([2, 4]),
        "weight_sharing": tune.choice([True, False]),
        "layer_sharing": tune.choice(["none", "albert"]),
        "attention": tune.choice(["standard", "coupled"]),
        "pooling": tune.choice(["mean", "sketch"]),
        "sketch_n": tune.randint(2, 9),
        "sketch_k": tune.choice([4, 8]),
        "lr": tune.loguniform(5.0e-4, 5.0e-3),
    }


def native_ray_mixed() -> dict[str, Any]:
    return {
        "d_model": tune.choice([32, 64]),
        "d_ff": tune.choice([None, 64, 128]),
        "layers": tune.randint(1, 4),
        "dropout": tune.uniform(0.0, 0.3),
        "g_mha": tune.choice([True, False]),
        "attention_sharing": tune.choice(["none", "qk", "kv"]),
        "qk_expansion": tune.randint(1, 4),
        "pooling": tune.choice(["mean", "attention", "sketch"]),
        "sketch_n": tune.qrandint(2, 32, 2),  # inclusive upper bound for q > 1
        "sketch_k": tune.lograndint(2, 33),
        "sketch_d": tune.choice([3, 7, 11, 15]),  # 3..15 step 4: not multiples of 4, so listed
        "lr": tune.loguniform(1.0e-4, 1.0e-2),
        "weight_decay": tune.uniform(0.0, 0.1),
    }


def _choice(*values: Any) -> dict[str, Any]:
    return {"_type": "choice", "_value": list(values)}


def native_nni_quickstart() -> dict[str, Any]:
    """quickstart.yaml's space as NNI search_space.json, sketch knobs nested under pooling: sketch."""
    return {
        "d_model": _choice(32, 64),
        "layers": {"_type": "randint", "_value": [1, 3]},
        "g_mha": _choice(True, False),
        "g_ffn": _choice(True, False),
        # groups/weight_sharing depend on two knobs (g_mha or g_ffn): NNI cannot nest them, so they
        # stay at the top level and are ignored where inactive.
        "groups": _choice(2, 4),
        "weight_sharing": _choice(True, False),
        "layer_sharing": _choice("none", "albert"),
        "attention": _choice("standard", "coupled"),
        "pooling": _choice(
            {"_name": "mean"},
            {"_name": "sketch", "sketch_n": {"_type": "randint", "_value": [2, 9]}, "sketch_k": _choice(4, 8)},
        ),
        "lr": {"_type": "loguniform", "_value": [5.0e-4, 5.0e-3]},
    }


def native_nni_mixed() -> dict[str, Any]:
    dropout = {"_type": "uniform", "_value": [0.0, 0.3]}
    return {
        "d_model": _choice(32, 64),
        "d_ff": _choice({"_name": None, "dropout": dropout}, {"_name": 64}, {"_name": 128, "dropout": dropout}),
        "layers": {"_type": "randint", "_value": [1, 4]},
        "g_mha": _choice(True, False),
        "attention_sharing": _choice("none", "qk", "kv"),
        "qk_expansion": {"_type": "randint", "_value": [1, 4]},  # two parents: top level
        "pooling": _choice(
            {"_name": "mean"},
            {"_name": "attention"},
            {
                "_name": "sketch",
                "sketch_n": {"_type": "quniform", "_value": [2, 32, 2]},
                "sketch_k": {"_type": "qloguniform", "_value": [2, 32, 1]},
                "sketch_d": _choice(3, 7, 11, 15),
            },
        ),
        "lr": {"_type": "loguniform", "_value": [1.0e-4, 1.0e-2]},
        "weight_decay": {"_type": "uniform", "_value": [0.0, 0.1]},  # parent is an int range: top level
    }


def _quickstart_without_redundant_when() -> SearchSpace:
    """quickstart's space with sketch_n's `when: {pooling: sketch}` dropped: the implied rule says the same."""
    data = dict(_study(QUICKSTART).source["space"])
    assert data["sketch_n"] == {"int": [2, 8], "when": {"pooling": "sketch"}}
    data["sketch_n"] = {"int": [2, 8]}
    return SearchSpace.from_dict(data, _study(QUICKSTART).family)


def test_decision_orders_are_the_ones_the_native_functions_use():
    assert [n for n in _space(QUICKSTART).names if _space(QUICKSTART).knob(n).searched] == QUICKSTART_ORDER
    assert [k.name for k in _space(QUICKSTART).searched] == QUICKSTART_ORDER
    assert [k.name for k in _mixed().searched] == MIXED_ORDER


# ---- 1. Optuna ------------------------------------------------------------------------------------
SAMPLERS = {
    "random": (lambda seed: optuna.samplers.RandomSampler(seed=seed), 1),
    "tpe": (lambda seed: optuna.samplers.TPESampler(seed=seed, n_startup_trials=5), 1),
    "tpe-multivariate-group": (
        lambda seed: optuna.samplers.TPESampler(seed=seed, n_startup_trials=5, multivariate=True, group=True),
        1,
    ),
    "nsga2": (lambda seed: optuna.samplers.NSGAIISampler(seed=seed, population_size=8), 2),
}


def _run_optuna(suggest, sampler, n_objectives: int, n_trials: int = 40, storage=None, study_name=None):
    study = optuna.create_study(
        sampler=sampler, storage=storage, study_name=study_name, directions=["minimize", "maximize"][:n_objectives]
    )
    returned = []

    def objective(trial):
        params = suggest(trial)
        returned.append(params)
        values = _objectives(params)
        return values[0] if n_objectives == 1 else values

    study.optimize(objective, n_trials=n_trials)
    assert len(study.trials) == n_trials
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    return study, returned


CASES = {
    "quickstart": (lambda: _space(QUICKSTART), native_optuna_quickstart, lambda: _study(QUICKSTART).source["space"]),
    "mixed": (_mixed, native_optuna_mixed, lambda: MIXED),
}


@pytest.mark.parametrize("seed", [0, 11])
@pytest.mark.parametrize("sampler_name", list(SAMPLERS))
@pytest.mark.parametrize("case", list(CASES))
def test_optuna_converted_equals_native(case, sampler_name, seed):
    make_space, native, data = CASES[case]
    space = make_space()
    make_sampler, n_objectives = SAMPLERS[sampler_name]
    converted_study, converted_params = _run_optuna(optuna_suggest(space), make_sampler(seed), n_objectives)
    native_study, native_params = _run_optuna(native, make_sampler(seed), n_objectives)

    converted = [_typed(t.params) for t in converted_study.trials]
    assert converted == [_typed(t.params) for t in native_study.trials]
    assert [t.values for t in converted_study.trials] == [t.values for t in native_study.trials]
    # the suggestion function returns the trial's params, in the space's decision order
    assert [_typed(p) for p in converted_params] == converted
    assert [list(p) for p in converted_params] == [list(p) for p in native_params]
    # the model actually kicked in: not every trial is a copy of another, and the conditionals vary
    assert len({json.dumps(p, sort_keys=True) for p in converted_params}) > len(converted_params) // 2
    assert len({frozenset(p) for p in converted_params}) > 1
    for params in converted_params:
        _check_point(data(), space, params)


def test_optuna_distributions_match_optuna_search_space():
    space = _space("studies/full/encoder.yaml")
    table = optuna_search_space(space)
    assert list(table) == [k.name for k in space.searched]
    d = optuna.distributions
    assert table["sketch_n"] == d.IntDistribution(2, 32, step=2)
    assert table["sketch_k"] == d.IntDistribution(2, 32, log=True)
    assert table["lr"] == d.FloatDistribution(1.0e-4, 1.0e-2, log=True)
    assert table["dropout"] == d.FloatDistribution(0.0, 0.3)
    assert table["d_ff"] == d.CategoricalDistribution([None, 128, 256, 512])
    assert table["layers"] == d.IntDistribution(1, 6)
    with pytest.raises(TypeError):
        optuna_distribution(_space(QUICKSTART).knob("heads"))  # fixed (heads: 4), not searched


N_RDB_TRIALS = 15  # past TPE's 5 startup trials; sqlite commits make each trial slow-ish


@pytest.mark.parametrize("path", [QUICKSTART, "studies/full/encoder.yaml"])
def test_optuna_rdb_storage_accepts_every_trial(tmp_path, path):
    """Each knob always has the same distribution, so an RDB storage never sees a dynamic value space."""
    space = _space(path)
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'study.db'}")
    if path == QUICKSTART:  # the study's seed config goes in first, as a sweep would enqueue it
        study = optuna.create_study(
            storage=storage,
            study_name="s",
            directions=["minimize"],
            sampler=optuna.samplers.TPESampler(seed=0, n_startup_trials=5),
        )
        baseline = _study(QUICKSTART).seed_configs["baseline"]
        study.enqueue_trial(baseline)
        study.optimize(lambda t: _objectives(optuna_suggest(space)(t))[0], n_trials=N_RDB_TRIALS)
        assert _typed(study.trials[0].params) == _typed(baseline)
    else:
        _run_optuna(
            optuna_suggest(space),
            optuna.samplers.TPESampler(seed=0, n_startup_trials=5),
            1,
            n_trials=N_RDB_TRIALS,
            storage=storage,
            study_name="s",
        )
    reloaded = optuna.load_study(study_name="s", storage=storage)
    assert len(reloaded.trials) == N_RDB_TRIALS
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in reloaded.trials)
    for trial in reloaded.trials:
        assert trial.distributions == {n: optuna_distribution(space.knob(n)) for n in trial.params}
        space.resolve(trial.params, strict=True)


# ---- 2. Ray Tune ----------------------------------------------------------------------------------
def _ray_signature(domain) -> Any:
    sampler = domain.get_sampler()
    inner = getattr(sampler, "sampler", sampler)
    return [
        type(domain).__name__,
        _typed(getattr(domain, "categories", None)),
        getattr(domain, "lower", None),
        getattr(domain, "upper", None),
        type(inner).__name__,
        getattr(sampler, "q", None),
    ]


def _ray_samples(param_space: Mapping[str, Any], seed: int, n: int) -> list[dict[str, Any]]:
    """``n`` configs from one seeded Generator, as BasicVariantGenerator(random_state=...) draws them.

    (An int ``random_state`` would not do: generate_variants then seeds a fresh RNG for every knob,
    so all knobs of a config see the same first draw and are perfectly correlated.)
    """
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        variants = list(generate_variants({"config": dict(param_space)}, random_state=rng))
        assert len(variants) == 1
        out.append(variants[0][1]["config"])
    return out


RAY_CASES = {
    "quickstart": (lambda: _space(QUICKSTART), native_ray_quickstart, lambda: _study(QUICKSTART).source["space"]),
    "mixed": (_mixed, native_ray_mixed, lambda: MIXED),
}


@pytest.mark.parametrize("case", list(RAY_CASES))
def test_ray_param_space_equals_native(case):
    make_space, native, _ = RAY_CASES[case]
    converted = to_ray(make_space())
    assert list(converted) == list(native())
    assert {k: _ray_signature(v) for k, v in converted.items()} == {k: _ray_signature(v) for k, v in native().items()}


@pytest.mark.parametrize("case", list(RAY_CASES))
def test_ray_converted_samples_equal_native(case):
    make_space, native, data = RAY_CASES[case]
    space = make_space()
    converted = [c for seed in (0, 1, 2) for c in _ray_samples(to_ray(space), seed, 60)]
    native_configs = [c for seed in (0, 1, 2) for c in _ray_samples(native(), seed, 60)]
    assert [_typed(c) for c in converted] == [_typed(c) for c in native_configs]
    assert len({json.dumps(c, sort_keys=True) for c in converted}) == len(converted)
    for config in converted:
        params = from_ray(space, config)
        _check_point(data(), space, params)
        # from_ray keeps the sampled value of every active knob and drops only the inactive ones
        assert _typed(params) == _typed({k: v for k, v in config.items() if k in params})


# ---- 3. NNI ---------------------------------------------------------------------------------------
def _nni_run(tuner, search_space: Mapping[str, Any], n: int, score=None) -> list[dict[str, Any]]:
    tuner.update_search_space(json.loads(json.dumps(search_space)))  # as read from search_space.json
    out = []
    for i in range(n):
        params = tuner.generate_parameters(i)
        out.append(params)
        if score is not None:
            tuner.receive_trial_result(i, params, score(params))
    return out


# A knob whose `when:` holds for the value its parent takes where the parent itself is inactive:
# weight_sharing is inactive (neutral false) unless g_mha or g_ffn, so dropout is then searched.
INACTIVE_PARENT = {
    "g_mha": {"choice": [True, False]},
    "g_ffn": {"choice": [True, False]},
    "groups": 2,
    "weight_sharing": {"choice": [True, False]},
    "dropout": {"float": [0.0, 0.3], "when": {"weight_sharing": False}},
}
# A chain of conditionals: dropout only with g_lml, g_lml only with g_mha (choices nested two deep).
TWO_DEEP = {
    "g_mha": {"choice": [True, False]},
    "groups": 2,
    "g_lml": {"choice": [True, False]},
    "dropout": {"float": [0.0, 0.3], "when": {"g_lml": True}},
}


def native_nni_inactive_parent() -> dict[str, Any]:
    """INACTIVE_PARENT by hand. dropout cannot go under weight_sharing's false option: it is also
    searched where weight_sharing is inactive (both groupings off), where NNI may still draw true for
    it. So dropout is drawn every time and ignored where inactive."""
    return {
        "g_mha": _choice(True, False),
        "g_ffn": _choice(True, False),
        "weight_sharing": _choice(True, False),  # two parents (g_mha or g_ffn): top level
        "dropout": {"_type": "uniform", "_value": [0.0, 0.3]},
    }


def native_nni_two_deep() -> dict[str, Any]:
    """TWO_DEEP by hand: g_lml under g_mha's true option; dropout under g_lml's would nest choices two
    deep, which NNI 3.0's tuners cannot sample, so dropout is drawn every time and ignored where inactive."""
    return {
        "g_mha": _choice({"_name": True, "g_lml": _choice(True, False)}, {"_name": False}),
        "dropout": {"_type": "uniform", "_value": [0.0, 0.3]},
    }


NNI_CASES = {
    "quickstart": (lambda: _space(QUICKSTART), native_nni_quickstart, lambda: _study(QUICKSTART).source["space"]),
    "quickstart-without-redundant-when": (
        _quickstart_without_redundant_when,
        native_nni_quickstart,
        lambda: _study(QUICKSTART).source["space"],
    ),
    "mixed": (_mixed, native_nni_mixed, lambda: MIXED),
    "inactive-parent": (
        lambda: SearchSpace.from_dict(INACTIVE_PARENT, "encoder"),
        native_nni_inactive_parent,
        lambda: INACTIVE_PARENT,
    ),
    "two-deep": (lambda: SearchSpace.from_dict(TWO_DEEP, "encoder"), native_nni_two_deep, lambda: TWO_DEEP),
}
NNI_CASE_PARAMS = list(NNI_CASES)
# The tuners a study can name (nni-tpe, nni-evolution) and NNI's random one. EvolutionTuner takes no
# seed (it draws from an unseeded RandomState), so it is checked for valid points, not for equality.
NNI_TUNERS = {
    "random": lambda: RandomTuner(seed=5),
    "tpe": lambda: TpeTuner(optimize_mode="minimize", seed=5, tpe_args={"n_startup_jobs": 5}),
    "evolution": lambda: EvolutionTuner(optimize_mode="minimize", population_size=8),
}


@pytest.mark.parametrize("case", NNI_CASE_PARAMS)
def test_nni_search_space_equals_native(case):
    make_space, native, _ = NNI_CASES[case]
    # json text: key order, nesting and value types (true vs 1, 2 vs 2.0) all count
    assert json.dumps(to_nni(make_space())) == json.dumps(native())


@pytest.mark.parametrize("tuner_name", ["random", "tpe"])
@pytest.mark.parametrize("case", NNI_CASE_PARAMS)
def test_nni_tuners_give_the_same_parameters_on_converted_and_native(case, tuner_name):
    make_space, native, data = NNI_CASES[case]
    space = make_space()
    make = NNI_TUNERS[tuner_name]

    def score(params):
        return _objectives(from_nni(space, params))[0]

    n = 30
    converted = _nni_run(make(), to_nni(space), n, score if tuner_name == "tpe" else None)
    native_params = _nni_run(make(), native(), n, score if tuner_name == "tpe" else None)
    assert [_typed(p) for p in converted] == [_typed(p) for p in native_params]
    for raw in converted:
        _check_point(data(), space, from_nni(space, raw))


@pytest.mark.parametrize("data", [INACTIVE_PARENT, TWO_DEEP], ids=["inactive-parent", "two-deep"])
def test_awkward_conditionals_through_optuna_and_ray(data):
    space = SearchSpace.from_dict(data, "encoder")
    if data is INACTIVE_PARENT:  # the space itself says dropout is searched with both groupings off
        assert space.resolve({"g_mha": False, "g_ffn": False, "dropout": 0.1}).params == {
            "g_mha": False,
            "g_ffn": False,
            "dropout": 0.1,
        }
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(30):
        _check_point(data, space, optuna_suggest(space)(study.ask()))
    for config in _ray_samples(to_ray(space), seed=0, n=30):
        _check_point(data, space, from_ray(space, config))


@pytest.mark.parametrize("tuner_name", list(NNI_TUNERS))
@pytest.mark.parametrize("data", [INACTIVE_PARENT, TWO_DEEP], ids=["inactive-parent", "two-deep"])
def test_nni_awkward_conditionals_give_valid_points(data, tuner_name):
    """Every tuner samples the space, and each point maps back to exactly its active knobs; dropout is
    kept where active (including, for INACTIVE_PARENT, with weight_sharing itself inactive) and
    dropped elsewhere."""
    space = SearchSpace.from_dict(data, "encoder")
    raws = _nni_run(NNI_TUNERS[tuner_name](), to_nni(space), 40, lambda p: _objectives(from_nni(space, p))[0])
    points = [from_nni(space, raw) for raw in raws]
    for raw, params in zip(raws, points):
        _check_point(data, space, params)
        assert "dropout" in raw  # always drawn (top level) ...
        if "dropout" in params:  # ... and kept as drawn where active
            assert params["dropout"] == raw["dropout"]
    assert any("dropout" in p for p in points) and not all("dropout" in p for p in points)
    if data is INACTIVE_PARENT:
        assert any(not p["g_mha"] and not p["g_ffn"] and "dropout" in p for p in points)


@pytest.mark.parametrize("tuner_name", ["tpe", "evolution"])
@pytest.mark.parametrize("path", STUDIES)
def test_nni_model_based_tuners_sample_every_shipped_study(path, tuner_name):
    """nni-tpe and nni-evolution (with results fed back, as a sweep does) on every shipped study's
    converted space: every point maps back to a valid point with exactly its active knobs."""
    study = _study(path)
    space, data = study.space, study.source["space"]
    raws = _nni_run(NNI_TUNERS[tuner_name](), to_nni(space), 40, lambda p: _objectives(from_nni(space, p))[0])
    for raw in raws:
        _check_point(data, space, from_nni(space, raw))


# ---- 4. every shipped study, every backend --------------------------------------------------------
N_SAMPLES = 200


def _nni_size(search_space: Mapping[str, Any]) -> float:
    """How many distinct points an NNI space has (inf with a continuous or quantised range)."""
    total = 1.0
    for spec in search_space.values():
        kind, value = spec["_type"], spec["_value"]
        if kind == "choice":
            total *= sum(
                _nni_size({k: v for k, v in o.items() if k != "_name"}) if isinstance(o, Mapping) else 1 for o in value
            )
        elif kind == "randint":
            total *= value[1] - value[0]
        else:
            return math.inf
    return total


def _samples_optuna(space: SearchSpace) -> list[dict[str, Any]]:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    suggest = optuna_suggest(space)
    out = []
    for _ in range(N_SAMPLES):
        trial = study.ask()
        out.append(suggest(trial))
        study.tell(trial, 0.0)
    distributions: dict[str, Any] = {}
    frozen = study.get_trials(deepcopy=False)
    assert len(frozen) == N_SAMPLES
    for params, trial in zip(out, frozen):
        assert _typed(params) == _typed(trial.params)
        for name, dist in trial.distributions.items():  # one distribution per knob, in every trial
            assert distributions.setdefault(name, dist) == dist
            assert dist == optuna_distribution(space.knob(name))
    return out


def _samples_ray(space: SearchSpace) -> list[dict[str, Any]]:
    return [from_ray(space, c) for c in _ray_samples(to_ray(space), seed=0, n=N_SAMPLES)]


def _samples_nni(space: SearchSpace) -> list[dict[str, Any]]:
    search_space = to_nni(space)
    tuner = RandomTuner(seed=0)
    tuner.update_search_space(search_space)
    raw = []
    try:
        for i in range(N_SAMPLES):
            raw.append(tuner.generate_parameters(i))
    except nni.NoMoreTrialError:  # NNI deduplicates: a small discrete space runs out
        assert len(raw) == _nni_size(search_space) < N_SAMPLES
    return [from_nni(space, p) for p in raw]


BACKENDS = {"optuna": _samples_optuna, "ray": _samples_ray, "nni": _samples_nni}


def test_every_shipped_study_is_covered():
    assert QUICKSTART in STUDIES and len(STUDIES) >= 9, STUDIES


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("path", STUDIES)
def test_shipped_study_samples_are_valid_and_cover_every_choice(path, backend):
    study = _study(path)
    space, data = study.space, study.source["space"]
    samples = BACKENDS[backend](space)
    assert len(samples) >= min(N_SAMPLES, 100)
    seen: dict[str, list] = {k.name: [] for k in space.searched}
    for params in samples:
        _check_point(data, space, params)
        for name, value in params.items():
            seen[name].append(_typed(value))
    for knob in space.searched:
        assert seen[knob.name], f"{knob.name} is never active"  # every shipped knob can be active
        if isinstance(knob.domain, Choice):
            missing = [v for v in knob.domain.choices if _typed(v) not in seen[knob.name]]
            assert not missing, f"{backend} never suggests {knob.name} = {missing}"
        else:
            assert all(knob.domain.contains(v) for _, v in seen[knob.name])
