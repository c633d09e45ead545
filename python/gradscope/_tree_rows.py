"""The rows a boosted model is judged on, as float64 arrays for the engine, from what a user of
XGBoost, LightGBM or CatBoost already holds: an (x, y) pair of anything numpy reads (pandas
included), an xgboost.DMatrix, a lightgbm.Dataset that kept its rows, a catboost.Pool.

    x, y = rows_of((x_train, y_train), "data")
    x, y = rows_of(dtrain, "data")          # a DMatrix: its cells, absent ones NaN, and its labels
"""
from ._engine import Error

# numpy is imported where rows are read, not here: `import gradscope` (which imports
# gradscope.trees) must work in an environment with torch alone, and torch does not need numpy.


def rows_of(data, what):
    """(x, y): x a C-contiguous float64 rows x features array, y float64 labels or None; (None,
    None) for None. `what` names `data` in errors ("data", "valid")."""
    if data is None:
        return None, None
    import numpy as np
    library = type(data).__module__.split(".")[0]
    if isinstance(data, tuple):
        if len(data) != 2:
            raise Error(f"{what}: a pair (rows, labels) expected, got a tuple of {len(data)}")
        x, y = data
    elif library == "xgboost" and hasattr(data, "get_data"):
        x, y = _dmatrix_cells(data), data.get_label()
    elif library == "lightgbm" and hasattr(data, "get_label"):
        # lgb.train frees a Dataset's rows once it is built, unless free_raw_data=False.
        if data.data is None:
            raise Error(f"{what}: the lightgbm Dataset no longer holds its rows (free_raw_data=True); "
                        f"pass {what}=(x, y), or build it with free_raw_data=False")
        x, y = data.data, data.get_label()
    elif library == "catboost" and hasattr(data, "get_features"):
        x, y = data.get_features(), data.get_label()
    else:
        x, y = data, None
    try:
        x = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
        y = None if y is None or len(y) == 0 else np.ascontiguousarray(np.asarray(y, dtype=np.float64).reshape(-1))
    except (TypeError, ValueError) as e:
        raise Error(f"{what}: not numbers gradscope can read ({e}); categorical columns must be numeric codes") from e
    if x.ndim != 2:
        raise Error(f"{what}: rows x features expected, got an array of {x.ndim} dimensions")
    if y is not None and len(y) != len(x):
        raise Error(f"{what}: {len(x)} rows but {len(y)} labels")
    return x, y


def _dmatrix_cells(dmatrix):
    """The DMatrix's rows, dense: XGBoost keeps missing cells out of its sparse storage, so a
    cell absent from get_data() is NaN, as XGBoost itself reads it."""
    import numpy as np
    csr = dmatrix.get_data()
    x = np.full(csr.shape, np.nan)
    x[np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr)), csr.indices] = csr.data
    return x
