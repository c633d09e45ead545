"""Comparisons the GPU check's tests share: statistics as dicts, records keyed by (step, node,
site), and nested report dicts whose numbers agree within a tolerance."""
import math

COUNTS = ("count", "finite", "nan", "pos_inf", "neg_inf", "zero", "saturated")
VALUES = ("sum", "sum_sq", "sum_abs", "min", "max", "max_abs")


def stats_dict(s):
    return {k: getattr(s, k) for k in COUNTS + VALUES}


def records(audit):
    """{(step, node, site): stats dict} of everything the audit kept."""
    return {(r.step, r.node, r.site): stats_dict(r.stats) for r in audit.records()}


def close(a, b, rel, abs_=0.0):
    if a == b:  # equal infinities too
        return True
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_)


def assert_records_close(got, want, rel, what, count_slack=0):
    """Two runs' records: the same keys; the counts of elements equal (zero and saturated within
    `count_slack`: an element at a threshold may round to either side on another device); every
    value within `rel`, a sum within `rel` of its sum of magnitudes (a sum may cancel to ~0)."""
    assert got.keys() == want.keys(), (what, sorted(set(got) ^ set(want))[:10])
    for key, w in want.items():
        g = got[key]
        for f in ("count", "finite", "nan", "pos_inf", "neg_inf"):
            assert g[f] == w[f], (what, key, f, g[f], w[f])
        for f in ("zero", "saturated"):
            assert abs(g[f] - w[f]) <= count_slack, (what, key, f, g[f], w[f])
        for f in ("sum_sq", "sum_abs", "min", "max", "max_abs"):
            assert close(g[f], w[f], rel), (what, key, f, g[f], w[f])
        assert close(g["sum"], w["sum"], 0.0, rel * w["sum_abs"]), (what, key, "sum", g["sum"], w["sum"])


def assert_tree_close(got, want, rel, abs_=0.0, path="report"):
    """Nested dicts and lists (report.to_dict()): the same keys, lengths and strings, numbers within
    `rel` (or `abs_`), booleans and None equal."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (path, got, want)
        for k in want:
            assert_tree_close(got[k], want[k], rel, abs_, f"{path}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_tree_close(g, w, rel, abs_, f"{path}[{i}]")
    elif isinstance(want, bool) or want is None or isinstance(want, str):
        assert got == want, (path, got, want)
    else:
        assert isinstance(got, (int, float)) and close(float(got), float(want), rel, abs_), (path, got, want)
