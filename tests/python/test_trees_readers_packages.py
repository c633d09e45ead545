"""gradscope's tree readers against the libraries' own predict: models written by the pinned
xgboost, lightgbm and catboost packages (requirements.txt), for every objective the readers
claim, read back by the engine, must give each library's margins and its transformed outputs
on real rows (breast_cancer, digits, diabetes), after all rounds and after a prefix of them.
XGBoost sums in float32 exactly as gradscope does (equality to float32 rounding); LightGBM and
CatBoost in double."""
import json
import os

import catboost
import lightgbm
import numpy as np
import pytest
import xgboost

import gradscope.trees as gt
from tree_data import sklearn_table


def close(ours, theirs, rtol):
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64).reshape(ours.shape)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * max(1.0, float(np.abs(theirs).max())))


def table(name, missing=0.0):
    x, y = sklearn_table(name)
    x = x[::2].copy()  # half the rows: enough rows per leaf, quicker
    y = y[::2].copy()
    if missing:
        x[np.random.default_rng(3).random(x.shape) < missing] = np.nan
    return x, y


# ---- XGBoost: the link of each objective (src/trees/xgboost_json.cpp objective_of)
CANCER, DIGITS, DIABETES = "breast_cancer", "digits", "diabetes"
XGB_CASES = {
    "binary:logistic": (CANCER, {}),
    "reg:logistic": (CANCER, {}),
    "binary:logitraw": (CANCER, {"base_score": 0.3}),
    "binary:hinge": (CANCER, {}),
    "multi:softprob": (DIGITS, {"num_class": 10}),
    "multi:softmax": (DIGITS, {"num_class": 10}),
    "reg:squarederror": (DIABETES, {}),
    "reg:squaredlogerror": (DIABETES, {}),
    "reg:pseudohubererror": (DIABETES, {"huber_slope": 50.0}),
    "reg:absoluteerror": (DIABETES, {}),
    "reg:quantileerror": (DIABETES, {"quantile_alpha": 0.3}),
    "count:poisson": (DIABETES, {}),
    "reg:gamma": (DIABETES, {}),
    "reg:tweedie": (DIABETES, {"tweedie_variance_power": 1.3}),
    "survival:cox": (DIABETES, {}),
    "rank:pairwise": (DIABETES, {}),
}


def xgb_matrix(objective, x, y):
    if objective.startswith("rank:"):
        d = xgboost.DMatrix(x, label=(y > np.median(y)).astype(float), qid=np.arange(len(x)) // 20)
    else:
        d = xgboost.DMatrix(x, label=y)
    return d


def check_xgboost(booster, d, x, saved):
    for name, data in saved.items():
        m = gt.parse_model(data, name)
        assert m.dialect == "xgboost" and m.rounds == booster.num_boosted_rounds()
        close(m.predict_raw(x), booster.predict(d, output_margin=True), 1e-6)
        close(m.predict(x), booster.predict(d), 1e-6)
        half = m.rounds // 2
        close(m.predict_raw(x, half), booster.predict(d, output_margin=True, iteration_range=(0, half)), 1e-6)


@pytest.mark.parametrize("objective", sorted(XGB_CASES))
def test_xgboost_objectives_in_every_format(objective, tmp_path):
    data, extra = XGB_CASES[objective]
    x, y = table(data)
    d = xgb_matrix(objective, x, y)
    booster = xgboost.train({"objective": objective, "max_depth": 3, "eta": 0.3, "nthread": 2, **extra}, d, 12)
    booster.save_model(tmp_path / "m.json")
    booster.save_model(tmp_path / "m.ubj")
    saved = {"default": booster.save_raw(),  # XGBoost 3's default: UBJSON
             "json": booster.save_raw("json"),
             "m.json file": (tmp_path / "m.json").read_bytes(),
             "m.ubj file": (tmp_path / "m.ubj").read_bytes()}
    assert gt.read_model(tmp_path / "m.ubj").rounds == 12
    check_xgboost(booster, d, x, saved)


@pytest.mark.parametrize("case", ["survival:aft", "dart", "missing", "categorical", "parallel", "multi_quantile",
                                  "multi_target"])
def test_xgboost_boosters_and_data(case):
    x, y = table(CANCER, missing=0.2 if case == "missing" else 0.0)
    params = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "nthread": 2}
    d = xgboost.DMatrix(x, label=y)
    if case == "survival:aft":
        x, y = table(DIABETES)
        d = xgboost.DMatrix(x)
        d.set_float_info("label_lower_bound", y)
        d.set_float_info("label_upper_bound", np.where(np.arange(len(y)) % 3 == 0, np.inf, y))
        params["objective"] = "survival:aft"
    elif case == "dart":
        params.update(booster="dart", rate_drop=0.3, skip_drop=0.0)
    elif case == "categorical":
        x, y = table(DIGITS)
        x = np.floor(x / 4)  # pixel levels 0..4 as categories
        d = xgboost.DMatrix(x, label=y, feature_types=["c"] * x.shape[1], enable_categorical=True)
        params.update(objective="multi:softprob", num_class=10, tree_method="hist", max_cat_to_onehot=1)
    elif case == "parallel":
        params.update(num_parallel_tree=3, subsample=0.7)
    elif case in ("multi_quantile", "multi_target"):
        x, y = table(DIABETES)
        if case == "multi_quantile":
            params.update(objective="reg:quantileerror", quantile_alpha=np.array([0.2, 0.5, 0.8]))
            d = xgboost.DMatrix(x, label=y)
        else:
            params.update(objective="reg:squarederror")
            d = xgboost.DMatrix(x, label=np.stack([y, np.sqrt(y)], axis=1))
    booster = xgboost.train(params, d, 10)
    check_xgboost(booster, d, x, {"default": booster.save_raw(), "json": booster.save_raw("json")})


# ---- LightGBM: src/trees/internal/objective_names.cpp lightgbm_objective
LGB_CASES = {
    "binary": (CANCER, {}),
    "cross_entropy": (CANCER, {}),
    "cross_entropy_lambda": (CANCER, {}),
    "multiclass": (DIGITS, {"num_class": 10}),
    "multiclassova": (DIGITS, {"num_class": 10}),
    "regression": (DIABETES, {}),
    "regression_l1": (DIABETES, {}),
    "huber": (DIABETES, {}),
    "fair": (DIABETES, {}),
    "quantile": (DIABETES, {"alpha": 0.3}),
    "mape": (DIABETES, {}),
    "poisson": (DIABETES, {}),
    "gamma": (DIABETES, {}),
    "tweedie": (DIABETES, {}),
    "binary sigmoid": (CANCER, {"sigmoid": 0.5}),
    "rf": (CANCER, {"boosting": "rf", "bagging_fraction": 0.7, "bagging_freq": 1}),
    "dart": (CANCER, {"boosting": "dart"}),
    "missing": (CANCER, {}),
    "categorical": (DIGITS, {"num_class": 10}),
}


@pytest.mark.parametrize("case", sorted(LGB_CASES))
def test_lightgbm_objectives_text_and_json(case):
    data, extra = LGB_CASES[case]
    x, y = table(data, missing=0.2 if case == "missing" else 0.0)
    objective = {"binary sigmoid": "binary", "rf": "binary", "dart": "binary", "missing": "binary",
                 "categorical": "multiclass"}.get(case, case)
    params = {"objective": objective, "num_leaves": 15, "learning_rate": 0.2, "verbose": -1, "num_threads": 2,
              **extra}
    categorical = "auto"
    if case == "categorical":
        x = np.floor(x / 4)
        categorical = list(range(x.shape[1]))
    booster = lightgbm.train(params, lightgbm.Dataset(x, y, categorical_feature=categorical), 12)
    for name, data in {"text": booster.model_to_string(), "json": json.dumps(booster.dump_model())}.items():
        m = gt.parse_model(data, name)
        assert m.dialect == "lightgbm" and m.rounds == booster.current_iteration()
        # A random forest's raw_score is LightGBM's un-averaged sum (PredictRaw does not average,
        # Predict does): gradscope's margin is the average that predict() transforms.
        times = m.rounds if case == "rf" else 1
        close(m.predict_raw(x) * times, booster.predict(x, raw_score=True), 1e-9)
        if name == "text":  # dump_model's JSON names no objective: no transform to check
            close(m.predict(x), booster.predict(x), 1e-9)
        close(m.predict_raw(x, 5) * (5 if case == "rf" else 1), booster.predict(x, raw_score=True, num_iteration=5),
              1e-9)


# ---- CatBoost: catboost_link
CB_CASES = {
    "Logloss": (CANCER, catboost.CatBoostClassifier, "Probability"),
    "CrossEntropy": (CANCER, catboost.CatBoostClassifier, "Probability"),
    "MultiClass": (DIGITS, catboost.CatBoostClassifier, "Probability"),
    "MultiClassOneVsAll": (DIGITS, catboost.CatBoostClassifier, "Probability"),
    "RMSE": (DIABETES, catboost.CatBoostRegressor, "RawFormulaVal"),
    "MAE": (DIABETES, catboost.CatBoostRegressor, "RawFormulaVal"),
    "Quantile:alpha=0.3": (DIABETES, catboost.CatBoostRegressor, "RawFormulaVal"),
    "Poisson": (DIABETES, catboost.CatBoostRegressor, "Exponent"),
    "Tweedie:variance_power=1.5": (DIABETES, catboost.CatBoostRegressor, "Exponent"),
    "Logloss missing": (CANCER, catboost.CatBoostClassifier, "Probability"),
}


@pytest.mark.parametrize("loss", sorted(CB_CASES))
def test_catboost_objectives(loss, tmp_path):
    data, kind, prediction = CB_CASES[loss]
    x, y = table(data, missing=0.2 if "missing" in loss else 0.0)
    model = kind(iterations=15, depth=4, learning_rate=0.3, loss_function=loss.split(" ")[0], verbose=0,
                 thread_count=2, random_seed=1)
    model.fit(x, y)
    model.save_model(os.fspath(tmp_path / "m.json"), format="json")
    m = gt.read_model(tmp_path / "m.json")
    assert m.dialect == "catboost" and m.rounds == model.tree_count_
    close(m.predict_raw(x), model.predict(x, prediction_type="RawFormulaVal"), 1e-9)
    theirs = model.predict(x, prediction_type=prediction)
    if loss.startswith(("Logloss", "CrossEntropy")):
        theirs = theirs[:, 1]  # CatBoost gives both classes, the model's one output is the second
    close(m.predict(x), theirs, 1e-9)
    close(m.predict_raw(x, 5), model.predict(x, prediction_type="RawFormulaVal", ntree_end=5), 1e-9)
