"""Report: the findings of an audit or a saved run, as the CLI shows them, or as data."""
import json

from ._engine import HealthError

# Node-table columns of to_dataframe(), in the order of `gradscope report`.
_COLUMNS = ("node", "steps", "act_mean_abs", "act_std", "out_grad_l2", "param_grad_l2", "param_l2",
            "grad_param_ratio", "update_ratio", "nan", "inf", "first_step", "last_step")


class Report:
    """Per-node flags and evidence (gradscope::Report). str() is the CLI's table."""

    def __init__(self, native):
        self._native = native

    @property
    def nodes(self):
        """NodeReport per node, in execution order (node, flags, evidence, measures)."""
        return list(self._native.nodes)

    @property
    def steps(self):
        return self._native.steps

    @property
    def nonfinite_origin(self):
        """Where NaN/Inf first appeared (step, node, phase, site, rank), or None when nowhere.
        `rank` is the lowest rank that saw them there in a job merged across processes (-1: one
        process)."""
        origin = self._native.nonfinite_origin
        return origin if origin.found() else None

    @property
    def loss_scale(self):
        """Mixed precision: the steps a loss scaler skipped on overflow and how the scale moved
        (steps, skipped, first_skipped, first_fit, first_scale, last_scale, min_scale,
        skipped_steps, scale_changes as (step, scale) pairs, verdict "none", "info" or
        "warning"), or None when no loss scale was set."""
        ls = self._native.loss_scale
        return ls if ls.steps > 0 else None

    @property
    def series(self):
        """The loss and the global gradient norm per step, as judged: loss_steps, first_loss,
        last_loss, min_loss, spike_count and spikes (LOSS_SPIKE: step, value, band_mean, band_sd,
        z, early_rule), divergence_step (-1: none), divergence_nonfinite, divergence_value,
        divergence_level, grad_norm_median, grad_norm_p99, grad_norm_max, clipped_steps, and
        leads (the nodes whose gradient burst first: node, step, lead in steps, z, ratio)."""
        return self._native.series

    def node(self, name):
        """The NodeReport of `name`; KeyError naming the known nodes when there is none."""
        for n in self._native.nodes:
            if n.node == name:
                return n
        raise KeyError(f"no node '{name}' in the report; nodes: {[n.node for n in self._native.nodes]}")

    def flags(self):
        """{node: [FLAG, ...]} for every node (HEALTHY when none)."""
        return {n.node: list(n.flags) for n in self._native.nodes}

    def healthy(self):
        return self._native.healthy()

    def flagged(self):
        """Flagged node ids, worst first."""
        return self._native.flagged_worst_first()

    def table(self, with_verdict=True):
        """The node table of `gradscope report` (with its verdict line unless asked not to)."""
        return self._native.table(with_verdict)

    def verdict(self):
        return self._native.verdict()

    def assert_healthy(self):
        """Raises HealthError naming every flagged node, worst first, with its flags."""
        self._native.assert_healthy()

    def to_json(self, indent=2):
        """The JSON of `gradscope report --json`'s report part (non-finite numbers are null)."""
        return self._native.json(indent)

    def to_dict(self):
        return json.loads(self._native.json(0))

    def to_csv(self):
        return self._native.csv()

    def to_dataframe(self):
        """One row per node (pandas.DataFrame); ImportError when pandas is not installed."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Report.to_dataframe() needs pandas (Debian: apt install python3-pandas); "
                              "to_dict() and to_csv() need nothing") from e
        rows = []
        for n in self._native.nodes:
            row = {c: getattr(n, c) for c in _COLUMNS}
            row["flags"] = ",".join(n.flags)
            rows.append(row)
        return pandas.DataFrame(rows, columns=list(_COLUMNS) + ["flags"])

    def __str__(self):
        return self._native.table(True)

    def __repr__(self):
        return f"<gradscope.Report {self.steps} steps, {len(self._native.nodes)} nodes: {self.verdict().strip()}>"


__all__ = ["Report", "HealthError"]
