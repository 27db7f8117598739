"""The proposer of a sweep: the Optuna sampler a study's `tuner` section names, seeded so a resume draws new points."""

from __future__ import annotations

import numpy as np
import optuna

from searchspace.study import Study
from tuners.driver.windowed_sampler import WindowedSampler


def proposer_seed(study: Study, trials_so_far: int) -> int:
    """The seed of a sweep's proposer. A resumed sweep (trials already in storage) derives a new one:
    the study's own seed would make it replay the points the first driver already drew."""
    if not trials_so_far:
        return study.tuner.seed
    return int(np.random.SeedSequence([study.tuner.seed, trials_so_far]).generate_state(1)[0])


def make_sampler(study: Study, trials_so_far: int = 0) -> optuna.samplers.BaseSampler:
    sampler = _proposer(study, proposer_seed(study, trials_so_far))
    window = study.tuner.window()
    if window is None:
        return sampler
    return WindowedSampler(sampler, window)  # tpe/gp read the last `window` finished trials (and the running)


def _proposer(study: Study, seed: int) -> optuna.samplers.BaseSampler:
    t, trials = study.tuner, study.budget.trials
    if t.sampler == "nsga2":
        population = t.population_size or max(4, min(50, trials // 3))
        return optuna.samplers.NSGAIISampler(population_size=population, seed=seed)
    if t.sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=max(2, min(10, trials // 3)))
    if t.sampler == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=max(2, min(10, trials // 3)))
    if t.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if t.sampler == "grid":  # every point in a fixed order: no seed to draw with
        from tuners.driver.grid import GridSampler

        return GridSampler(study)
    return optuna.samplers.RandomSampler(seed=seed)  # NNI proposes; Optuna only records
