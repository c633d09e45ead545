"""gradscope.trees' live callbacks with the real xgboost, lightgbm and catboost packages: the run
each writes at the end of training (read back by the engine and by `gradscope report`), the
losses it measured against the library's own evaluation log, the library containers as rows,
training that ends early (early stopping, an exception, a process that dies), zero rounds, and
the run folder rules."""
import os
import subprocess
import sys
import textwrap

import catboost
import lightgbm
import numpy as np
import pytest
import xgboost

import gradscope._engine as engine
import gradscope.trees as gt
from tree_data import sklearn_table, split

PARAMS = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "nthread": 2}


@pytest.fixture(scope="module")
def cancer():
    x, y = sklearn_table("breast_cancer")
    return split(x, y, 0.3)


def test_xgboost_run_and_its_losses(cancer, tmp_path, gradscope_cli):
    xt, yt, xv, yv = cancer
    dt, dv = xgboost.DMatrix(xt, label=yt), xgboost.DMatrix(xv, label=yv)
    log = {}
    cb = gt.xgboost_callback(tmp_path / "xgb", data=dt, valid=dv, print_report=False)  # DMatrix rows
    booster = xgboost.train(PARAMS, dt, 40, evals=[(dt, "train"), (dv, "valid")], evals_result=log,
                            callbacks=[cb], verbose_eval=False)
    s = cb.summary
    assert s.run == os.fspath(tmp_path / "xgb") and s.rounds == 40 and s.healthy
    # No margin here passes XGBoost's float32 saturation (docs/trees.md): its log is ours.
    np.testing.assert_allclose(s.report.train_loss, log["train"]["logloss"], rtol=1e-5)
    np.testing.assert_allclose(s.report.valid_loss, log["valid"]["logloss"], rtol=1e-5)
    saved = engine.load_tree_run(s.run)
    assert saved.report.rounds == 40 and saved.report.valid_loss == s.report.valid_loss
    model = gt.read_model(os.path.join(s.run, "model.ubj"))  # the booster's own model beside the run
    np.testing.assert_array_equal(model.predict_raw(xv).reshape(-1), booster.predict(dv, output_margin=True))
    out = subprocess.run([gradscope_cli, "report", s.run], capture_output=True, text=True)
    assert out.returncode == 0 and "verdict: healthy" in out.stdout, out.stdout + out.stderr


def test_lightgbm_run_losses_and_early_stopping(cancer, tmp_path):
    xt, yt, xv, yv = cancer
    log = {}
    params = {"objective": "binary", "learning_rate": 0.1, "num_leaves": 8, "verbose": -1, "num_threads": 2}
    cb = gt.lightgbm_callback(tmp_path / "lgb", data=(xt, yt), valid=(xv, yv), print_report=False)
    lightgbm.train(params, lightgbm.Dataset(xt, yt), 60, valid_sets=[lightgbm.Dataset(xv, yv)], valid_names=["v"],
                   callbacks=[cb, lightgbm.record_evaluation(log)])
    assert cb.summary.rounds == 60  # written after the last round, with no call from the user
    np.testing.assert_allclose(cb.summary.report.valid_loss, log["v"]["binary_logloss"], rtol=1e-9)
    # Early stopping raises past every later callback: the run waits for finish() or `with`.
    params.update(learning_rate=0.5, num_leaves=31, min_data_in_leaf=2)
    with gt.lightgbm_callback(tmp_path / "early", data=(xt, yt), valid=(xv, yv), print_report=False) as early:
        booster = lightgbm.train(params, lightgbm.Dataset(xt, yt), 500, valid_sets=[lightgbm.Dataset(xv, yv)],
                                 callbacks=[early, lightgbm.early_stopping(5, verbose=False)],
                                 keep_training_booster=True)
        assert early.summary is None
    assert booster.current_iteration() < 500
    # Every round trained, the five after the best included.
    assert early.summary.rounds == booster.current_iteration() == booster.best_iteration + 5
    assert engine.load_tree_run(early.summary.run).report.rounds == early.summary.rounds
    # Without keep_training_booster, lgb.train keeps the rounds up to the best: said, not hidden.
    late = gt.lightgbm_callback(None, data=(xt, yt), valid=(xv, yv), print_report=False)
    booster = lightgbm.train(params, lightgbm.Dataset(xt, yt), 500, valid_sets=[lightgbm.Dataset(xv, yv)],
                             callbacks=[late, lightgbm.early_stopping(5, verbose=False)])
    with pytest.warns(RuntimeWarning, match=f"lightgbm kept {booster.best_iteration} of the "
                                            f"{booster.best_iteration + 5} rounds it trained"):
        assert late.finish().rounds == booster.best_iteration


def test_lightgbm_dataset_rows(cancer):
    xt, yt, _, _ = cancer
    kept = lightgbm.Dataset(xt, yt, free_raw_data=False)
    cb = gt.lightgbm_callback(None, data=kept, print_report=False)
    lightgbm.train({"objective": "binary", "verbose": -1, "num_threads": 2}, kept, 5, callbacks=[cb])
    assert cb.summary.report.reference_rows == len(xt) and cb.summary.run is None
    freed = lightgbm.Dataset(xt, yt).construct()
    with pytest.raises(gt.Error, match=r"no longer holds its rows \(free_raw_data=True\); pass data=\(x, y\)"):
        gt.lightgbm_callback(None, data=freed)


def test_catboost_run_losses_and_best_model(cancer, tmp_path):
    xt, yt, xv, yv = cancer
    model = catboost.CatBoostClassifier(iterations=50, learning_rate=0.1, depth=4, verbose=0, thread_count=2)
    cb = gt.catboost_callback(tmp_path / "cb", data=catboost.Pool(xt, yt), valid=(xv, yv), print_report=False)
    model.fit(xt, yt, eval_set=(xv, yv), use_best_model=False, callbacks=[cb])
    assert cb.summary is None  # CatBoost shows callbacks no model: finish(model) writes the run
    s = cb.finish(model)
    assert s.rounds == 50 and cb.summary is s and cb.finish(model) is s
    np.testing.assert_allclose(s.report.valid_loss, model.get_evals_result()["validation"]["Logloss"],
                               rtol=1e-6)
    assert os.path.exists(os.path.join(s.run, "model.json"))
    # use_best_model (CatBoost's default with an eval_set) drops the rounds after the best.
    best = catboost.CatBoostClassifier(iterations=200, learning_rate=0.5, depth=6, verbose=0, thread_count=2)
    cb = gt.catboost_callback(None, data=(xt, yt), valid=(xv, yv), print_report=False)
    best.fit(xt, yt, eval_set=(xv, yv), callbacks=[cb])
    with pytest.warns(RuntimeWarning, match=f"catboost kept {best.tree_count_} of the 200 rounds"):
        assert cb.finish(best).rounds == best.tree_count_ < 200


def test_catboost_finish_needs_the_fitted_model():
    cb = gt.catboost_callback(None)
    with pytest.raises(gt.Error, match="needs the CatBoost model that was fitted, got str"):
        cb.finish("model")
    with pytest.raises(gt.Error, match="the model is not fitted .CatBoost keeps no trees when fit raises."):
        cb.finish(catboost.CatBoostClassifier())


class _Boom(xgboost.callback.TrainingCallback):
    def after_iteration(self, model, epoch, evals_log):
        if epoch == 9:
            raise RuntimeError("boom")
        return False


def test_exception_inside_with_writes_the_rounds_so_far(cancer, tmp_path):
    xt, yt, xv, yv = cancer
    with pytest.raises(RuntimeError, match="boom"):
        with gt.xgboost_callback(tmp_path / "x", data=(xt, yt), valid=(xv, yv), print_report=False) as cb:
            xgboost.train(PARAMS, xgboost.DMatrix(xt, label=yt), 100, callbacks=[cb, _Boom()])
    assert cb.summary.rounds == 10 and engine.load_tree_run(cb.summary.run).report.rounds == 10


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_a_process_that_dies_in_training_leaves_its_rounds(library, tmp_path):
    # As the C++ recorder's destructor: the callback, collected at exit, writes what was trained.
    script = textwrap.dedent(f"""
        import numpy as np, xgboost, lightgbm, gradscope.trees as gt
        rng = np.random.default_rng(0)
        x = rng.random((200, 4)); y = (x[:, 0] > 0.5).astype(float)
        cb = gt.{library}_callback({os.fspath(tmp_path / "run")!r}, data=(x, y), print_report=False)
        def boom(env):
            if env.iteration == 6: raise KeyboardInterrupt
        class Boom(xgboost.callback.TrainingCallback):
            def after_iteration(self, model, epoch, log):
                if epoch == 6: raise KeyboardInterrupt
        if "{library}" == "xgboost":
            xgboost.train({{"objective": "binary:logistic"}}, xgboost.DMatrix(x, label=y), 50, callbacks=[cb, Boom()])
        else:
            lightgbm.train({{"objective": "binary", "verbose": -1}}, lightgbm.Dataset(x, y), 50, callbacks=[cb, boom])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ)
    assert done.returncode != 0 and "KeyboardInterrupt" in done.stderr
    assert engine.load_tree_run(os.fspath(tmp_path / "run")).report.rounds == 7, done.stderr


def test_zero_rounds_is_empty_healthy_and_says_so(cancer, tmp_path):
    xt, yt, _, _ = cancer
    cb = gt.xgboost_callback(tmp_path / "none", data=(xt, yt), print_report=False)
    xgboost.train(PARAMS, xgboost.DMatrix(xt, label=yt), 0, callbacks=[cb])
    s = cb.summary
    assert s.rounds == 0 and s.healthy and s.findings == [] and s.run is None and s.report is None
    assert s.verdict == "verdict: healthy: xgboost trained no round, nothing to judge (no run written)"
    assert str(s) == s.verdict and not os.path.exists(tmp_path / "none")
    s.assert_healthy()
    # LightGBM refuses zero rounds itself, before any callback: the callback says it saw none.
    cb = gt.lightgbm_callback(tmp_path / "none", data=(xt, yt), print_report=False)
    with pytest.raises(ValueError, match="must be greater than 0"):
        lightgbm.train({"objective": "binary", "verbose": -1}, lightgbm.Dataset(xt, yt), 0, callbacks=[cb])
    assert cb.summary.rounds == 0 and cb.summary.verdict.startswith("verdict: healthy: lightgbm trained no round")


def test_unhealthy_summary_raises_and_an_existing_run_is_kept(cancer, tmp_path, capsys):
    xt, yt, xv, yv = cancer
    stalled = dict(PARAMS, eta=1e-4)
    cb = gt.xgboost_callback(tmp_path / "r", data=(xt, yt), valid=(xv, yv))
    xgboost.train(stalled, xgboost.DMatrix(xt, label=yt), 60, callbacks=[cb])
    assert "STAGNANT from round 0" in capsys.readouterr().out  # print_report: the findings at the end
    with pytest.raises(engine.HealthError, match="verdict: unhealthy: trees: STAGNANT from round 0"):
        cb.summary.assert_healthy()
    with pytest.raises(gt.Error, match="run '.*r' exists: pass overwrite=True"):
        gt.xgboost_callback(tmp_path / "r")
    again = gt.xgboost_callback(tmp_path / "r", data=(xt, yt), overwrite=True, print_report=False)
    xgboost.train(PARAMS, xgboost.DMatrix(xt, label=yt), 5, callbacks=[again])
    assert engine.load_tree_run(os.fspath(tmp_path / "r")).report.rounds == 5


def test_dmatrix_missing_cells_are_nan(cancer):
    xt, yt, _, _ = cancer
    x = xt.copy()
    x[::7, 3] = np.nan
    booster = xgboost.train(PARAMS, xgboost.DMatrix(x, label=yt), 5)
    model = gt.parse_model(booster.save_raw())
    from_matrix = gt.analyze(model, data=xgboost.DMatrix(x, label=yt))
    from_arrays = gt.analyze(model, data=(x, yt))
    assert from_matrix.train_loss == from_arrays.train_loss and from_matrix.contribution == from_arrays.contribution
