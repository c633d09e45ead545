"""The scalars of one audited step, for a logger other than TensorBoard: the names and values of
gradscope's TensorBoard tags (include/gradscope/tensorboard/step_scalars.h, docs/tensorboard.md),
so a W&B chart and a TensorBoard card of the same measure agree.

    step_scalars(records)  # {"grad_l2/fc1": 0.53, "update_ratio/fc1": 0.011, ...}

The C++ StepScalars is not bound to Python, so its five value formulas are repeated here; the
per-step flags (flag/<FLAG>/<node>) are not, since they need the rules' state across steps."""
import math

# The gradient the rules judge: the first recorded of these (kGradientSites, core/audit/record.h).
_GRADIENT_SITES = ("param_grad", "embedding_rows", "output_grad")


def step_scalars(records):
    """{"<measure>/<node>": float} of one step's records (gradscope.Record): grad_l2,
    update_ratio, activation_zero_frac, activation_saturated_frac, activation_nonfinite_frac,
    each only where its sites were recorded (the tags TensorBoard gets)."""
    sites_of = {}
    for r in records:
        # The engine merges the records of one node and site within a step before handing them
        # out, so each (node, site) comes once.
        sites_of.setdefault(r.node, {})[r.site] = r.stats
    out = {}
    for node, sites in sites_of.items():
        gradient = next((sites[s] for s in _GRADIENT_SITES if s in sites), None)
        if gradient is not None:
            out[f"grad_l2/{node}"] = _shown_l2(gradient)
        if "param" in sites and "update" in sites:
            ratio = _update_ratio(sites["param"], sites["update"])
            if ratio is not None:
                out[f"update_ratio/{node}"] = ratio
        a = sites.get("activation")
        if a is not None:
            out[f"activation_zero_frac/{node}"] = _fraction(a.zero, a.count)
            out[f"activation_saturated_frac/{node}"] = _fraction(a.saturated, a.count)
            out[f"activation_nonfinite_frac/{node}"] = _fraction(a.nan + a.pos_inf + a.neg_inf, a.count)
    return out


def _shown_l2(s):
    """The timeline's convention: NaN when the gradient held a NaN, +Inf for an Inf, else the
    L2; the finite part alone would show an all-NaN gradient as 0, a healthy-looking value."""
    if s.nan:
        return math.nan
    if s.pos_inf or s.neg_inf:
        return math.inf
    return s.l2


def _update_ratio(param, update):
    """||update|| / ||param||; NaN when either held NaN or Inf (no ratio of finite parts means
    anything); None, no scalar, when either is empty or the parameters' L2 is 0."""
    nonfinite = param.nan + param.pos_inf + param.neg_inf + update.nan + update.pos_inf + update.neg_inf
    if nonfinite:
        return math.nan
    if param.count == 0 or update.count == 0 or not param.l2 > 0:
        return None
    return update.l2 / param.l2


def _fraction(part, whole):
    return part / whole if whole > 0 else math.nan
