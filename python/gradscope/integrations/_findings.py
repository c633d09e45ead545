"""The findings of a report as rows of a table, for loggers that show tables (W&B): one row per
flag of a flagged node, worst node first, with the evidence the report holds for it, then the
loss's (DIVERGENCE, LOSS_SPIKE).

    columns = FINDING_COLUMNS
    rows = finding_rows(audit.report())  # [["fc1", "DEAD", 0, 1.0, 0.95, "max over steps ...", ...]]
"""

FINDING_COLUMNS = ("node", "flag", "since_step", "value", "threshold", "measure", "site", "detail")

# The loss is not a node: its rows name this instead, which no module path can be.
LOSS_NODE = "(loss)"


def finding_rows(report):
    """The rows of FINDING_COLUMNS for `report` (a gradscope.Report); [] for a healthy one. A
    value the report does not hold (a flag without evidence, a spike's threshold) is None."""
    rows = []
    for node_id in report.flagged():
        node = report.node(node_id)
        evidence = {e.flag: e for e in node.evidence}
        for flag in node.flags:
            e = evidence.get(flag)
            if e is None:
                rows.append([node_id, flag, None, None, None, None, None, None])
            else:
                rows.append([node_id, flag, _step(e.first_step), e.value, e.threshold, e.measure, e.site, e.detail])
    return rows + _loss_rows(report.series)


def _loss_rows(series):
    rows = []
    if series.divergence_step >= 0:
        rows.append([LOSS_NODE, "DIVERGENCE", series.divergence_step, series.divergence_value,
                     series.divergence_level, "the loss at the onset, against the highest loss before it", "loss",
                     f"last loss {series.last_loss:.4g}"])
    for spike in series.spikes:  # the first 100; spike_count has them all
        rows.append([LOSS_NODE, "LOSS_SPIKE", spike.step, spike.value, None, "the loss at the spike", "loss",
                     f"z {spike.z:.3g} against its band (mean {spike.band_mean:.4g}, sd {spike.band_sd:.4g})"])
    return rows


def _step(step):
    return None if step < 0 else step
