"""A healthy CatBoost training that EXPLODING once misread (docs/trees.md, "Rules"): breast_cancer,
70% of the rows to train on, depth 3, learning rate 0.1. Its rounds shrink to near nothing, then
a few late rounds move again; window means of such rounds jump more than twofold while the
training loss keeps falling. Judged against CatBoost's own predictions after every prefix of
rounds: the jump is there, the growth and the rising loss a diverging model shows are not."""
import catboost
import numpy as np
import pytest

import gradscope.trees as gt
from tree_data import sklearn_table, split


def logloss(margins, y):
    p = np.clip(1.0 / (1.0 + np.exp(-np.asarray(margins, dtype=np.float64).reshape(-1))), 1e-16, 1 - 1e-16)
    return float(np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p))))


@pytest.mark.parametrize("iterations", [100, 200])
def test_catboost_late_corrections_are_not_exploding(iterations, tmp_path):
    x, y = sklearn_table("breast_cancer")
    xt, yt, xv, yv = split(x, y, 0.3)
    model = catboost.CatBoostClassifier(iterations=iterations, learning_rate=0.1, depth=3, verbose=0,
                                        thread_count=2, random_seed=1)
    cb = gt.catboost_callback(str(tmp_path / "cb"), data=(xt, yt), valid=(xv, yv), print_report=False)
    model.fit(xt, yt, eval_set=(xv, yv), use_best_model=False, callbacks=[cb])
    summary = cb.finish(model)
    report = summary.report

    # CatBoost's own margins on the training rows after every prefix: each round's step, and the
    # training loss after it.
    margins = [model.predict(xt, prediction_type="RawFormulaVal", ntree_end=k) for k in range(1, iterations + 1)]
    steps = np.array([np.mean(np.abs(b - a)) for a, b in zip(margins, margins[1:])])
    np.testing.assert_allclose(report.contribution[1:], steps, rtol=1e-6, atol=1e-12)
    train = np.array([logloss(m, yt) for m in margins])
    np.testing.assert_allclose(report.train_loss, train, rtol=1e-6)

    # The shape the window rule alone read as growth: a later window's mean more than twice the
    # smallest window mean before it (windows of the rules' size, rounds 1.. from CatBoost's steps).
    size = max(5, -(-iterations // 20))
    means = [np.mean(steps[max(w - 1, 0):w + size - 1]) for w in range(0, iterations, size)]
    jumps = [w for w in range(1, len(means)) if means[w] > report.thresholds.exploding_growth * min(means[:w])]
    assert jumps, means
    # ...while every window lowered CatBoost's training loss: a converging model.
    assert all(train[w * size + size - 1] < train[w * size - 1] for w in jumps), train

    assert summary.findings == [] and summary.healthy, summary.findings
