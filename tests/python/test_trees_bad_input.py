"""Bad input to gradscope.trees: every mistake is a gradscope.Error naming what is wrong (the
model, the rows, the option), never a crash or a wrong number."""
import numpy as np
import pytest
import xgboost

import gradscope.trees as gt


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    x = rng.random((100, 3))
    return gt.parse_model(xgboost.train({"objective": "binary:logistic"}, xgboost.DMatrix(x, label=x[:, 0] > 0.5),
                                        3).save_raw())


def test_models_that_are_not_models(tmp_path):
    with pytest.raises(gt.Error, match="model 'junk': not a model gradscope reads"):
        gt.parse_model(b"hello", "junk")
    with pytest.raises(gt.Error, match="model 'empty': empty file"):
        gt.parse_model(b"", "empty")
    with pytest.raises(gt.Error, match="xgboost model 'cut': "):
        gt.parse_model(b'{"learner": {', "cut")
    with pytest.raises(gt.Error, match="model format 'onnx': not one of auto, xgboost-json"):
        gt.parse_model(b"{}", "m", "onnx")
    with pytest.raises(gt.Error, match="no such file"):
        gt.read_model(tmp_path / "missing.json")


def test_rows_that_do_not_fit(model):
    with pytest.raises(gt.Error, match="rows: 2 columns, the model has 3 features"):
        model.predict_raw(np.zeros((4, 2)))
    with pytest.raises(gt.Error, match="rows: a 2-dimensional array of rows x features expected, got 1"):
        model.predict(np.zeros(3))
    with pytest.raises(gt.Error, match="data: 4 rows but 3 labels"):
        gt.analyze(model, data=(np.zeros((4, 3)), np.zeros(3)))
    with pytest.raises(gt.Error, match="data: a pair .rows, labels. expected, got a tuple of 3"):
        gt.analyze(model, data=(1, 2, 3))
    with pytest.raises(gt.Error, match="data: not numbers gradscope can read"):
        gt.analyze(model, data=(np.array([["a", "b", "c"]]), np.zeros(1)))
    with pytest.raises(gt.Error, match="data: 5 feature columns, the model has 3 features"):
        gt.analyze(model, data=(np.zeros((4, 5)), np.zeros(4)))
    with pytest.raises(gt.Error, match=r"data: row 1: label 3.000000 is outside \[0, 1\]"):
        gt.analyze(model, data=(np.zeros((4, 3)), np.full(4, 3.0)))


def test_callback_options(tmp_path):
    with pytest.raises(gt.Error, match="xgboost callback: run must be a folder or None, got int"):
        gt.xgboost_callback(3)
    with pytest.raises(gt.Error, match="valid: validation rows need their labels"):
        gt.xgboost_callback(None, valid=np.zeros((4, 3)))
    bad = gt.TreeThresholds()
    bad.overfit_rise = -1
    with pytest.raises(gt.Error, match="overfit_rise"):
        gt.lightgbm_callback(None, thresholds=bad)
