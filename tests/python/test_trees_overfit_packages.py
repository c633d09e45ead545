"""The demo's boosted-tree fault (src/demo/demo_trees.cpp) trained live with each package and its
callback: breast_cancer, a fifth of the rows to train on, depth 8, no L2 penalty, no minimum
child weight, learning rate 0.3, 200 rounds. gradscope must name OVERFITTING at the round where
the library's own validation curve is lowest (recomputed here from the library's predictions
after every prefix of rounds), `gradscope report` must say so with exit 1, and the healthy
control (70% of the rows to train on, shallow trees) must stay quiet, exit 0."""
import subprocess

import catboost
import lightgbm
import numpy as np
import pytest
import xgboost

import gradscope.trees as gt
from tree_data import sklearn_table, split

ROUNDS = {"overfit": 200, "healthy": 100}
VALID_FRACTION = {"overfit": 0.8, "healthy": 0.3}


def logloss(margins, y):
    """The definition in double, probabilities clipped as XGBoost's metrics clip them."""
    p = np.clip(1.0 / (1.0 + np.exp(-np.asarray(margins, dtype=np.float64).reshape(-1))), 1e-16, 1 - 1e-16)
    return float(np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p))))


def train_xgboost(case, run, xt, yt, xv, yv):
    params = {"objective": "binary:logistic", "base_score": 0.5, "nthread": 2, "seed": 1, "eta": 0.3}
    params.update({"max_depth": 8, "lambda": 0, "min_child_weight": 0} if case == "overfit" else {"max_depth": 3})
    cb = gt.xgboost_callback(run, data=(xt, yt), valid=(xv, yv), print_report=False)
    booster = xgboost.train(params, xgboost.DMatrix(xt, label=yt), ROUNDS[case], callbacks=[cb])
    dv = xgboost.DMatrix(xv)
    curve = [logloss(booster.predict(dv, output_margin=True, iteration_range=(0, k)), yv)
             for k in range(1, booster.num_boosted_rounds() + 1)]
    return cb.summary, curve


def train_lightgbm(case, run, xt, yt, xv, yv):
    params = {"objective": "binary", "verbose": -1, "num_threads": 2, "seed": 1}
    if case == "overfit":  # LightGBM's own minimums are its min_data_in_leaf and min_sum_hessian
        params.update(learning_rate=0.3, max_depth=8, num_leaves=255, lambda_l2=0, min_data_in_leaf=2)
    else:
        params.update(learning_rate=0.1, num_leaves=8)
    cb = gt.lightgbm_callback(run, data=(xt, yt), valid=(xv, yv), print_report=False)
    booster = lightgbm.train(params, lightgbm.Dataset(xt, yt), ROUNDS[case], callbacks=[cb])
    # LightGBM stops adding trees once no leaf can be split (the overfit model memorises its 114
    # rows after some 50 rounds): the rounds are those it kept.
    curve = [logloss(booster.predict(xv, raw_score=True, num_iteration=k), yv)
             for k in range(1, booster.current_iteration() + 1)]
    return cb.summary, curve


def train_catboost(case, run, xt, yt, xv, yv):
    if case == "overfit":  # and CatBoost's own guards off: ordered boosting, bagging, random strength
        params = dict(learning_rate=0.3, depth=8, l2_leaf_reg=0, boosting_type="Plain", bootstrap_type="No",
                      random_strength=0)
    else:
        params = dict(learning_rate=0.1, depth=4)
    model = catboost.CatBoostClassifier(iterations=ROUNDS[case], verbose=0, thread_count=2, random_seed=1, **params)
    cb = gt.catboost_callback(run, data=(xt, yt), valid=(xv, yv), print_report=False)
    model.fit(xt, yt, eval_set=(xv, yv), use_best_model=False, callbacks=[cb])
    summary = cb.finish(model)
    curve = [logloss(model.predict(xv, prediction_type="RawFormulaVal", ntree_end=k), yv)
             for k in range(1, model.tree_count_ + 1)]
    return summary, curve


TRAIN = {"xgboost": train_xgboost, "lightgbm": train_lightgbm, "catboost": train_catboost}


@pytest.mark.parametrize("library", sorted(TRAIN))
@pytest.mark.parametrize("case", ["overfit", "healthy"])
def test_demo_case_with_each_library(library, case, tmp_path, gradscope_cli):
    x, y = sklearn_table("breast_cancer")
    xt, yt, xv, yv = split(x, y, VALID_FRACTION[case])
    run = tmp_path / library
    summary, curve = TRAIN[library](case, str(run), xt, yt, xv, yv)
    report = summary.report
    assert summary.rounds == report.rounds == len(curve) > ROUNDS[case] // 5
    # The validation curve gradscope measured is the library's own, round by round.
    np.testing.assert_allclose(report.valid_loss, curve, rtol=1e-6)
    best = 1 + int(np.argmin(curve))
    assert report.best_valid_rounds == best
    out = subprocess.run([gradscope_cli, "report", str(run)], capture_output=True, text=True)
    if case == "overfit":
        overfit = [f for f in summary.findings if f.flag == "OVERFITTING"]
        assert len(overfit) == 1 and not overfit[0].tentative, summary.findings
        assert overfit[0].first_round == best < len(curve) - 10
        assert curve[-1] > curve[best - 1] * 1.02
        assert not summary.healthy
        assert out.returncode == 1, out.stderr
        assert f"OVERFITTING from round {best}" in out.stdout
    else:
        assert summary.findings == [] and summary.healthy, summary.findings
        assert out.returncode == 0, out.stdout + out.stderr
        assert "verdict: healthy" in out.stdout
