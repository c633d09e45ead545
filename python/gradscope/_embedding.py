"""EmbeddingTracker: per-row dynamics of an nn.Embedding or nn.EmbeddingBag table, measured by
the C++ EmbeddingTracker on the table's own weight (shared, never copied).

    tracker = gradscope.EmbeddingTracker(model.item_emb, name="item")
    for users, items, negatives in loader:
        opt.zero_grad()
        with tracker.negatives():            # lookups of sampled negatives (Role.NEGATIVE), if any
            neg = model.item_emb(negatives)
        loss(model(users, items), neg).backward()
        tracker.step(opt)                    # or: tracker.before_step(); opt.step(); tracker.after_step()
    print(tracker.report()["diagnostics"])

Options keep their C++ names: negative_sampler=gradscope.NegativeSampler("popularity") declares
the sampler the negatives should follow (NEGATIVE_SAMPLER_SKEW); on_intervention=fn(iv) gets
each auto-fix act (a gradscope.EmbeddingIntervention), on_step=fn(records) each tracked step's
records (gradscope.Record: the touched rows' gradient, then their update). An exception raised
in a callback propagates out of step() (docs/python.md says what state the tracker is in then).

Every forward of the table is observed by a forward hook (its indices); the hook goes on
close() or at the end of a with-block.

Findings reach the saved-run tools (gradscope report, ls, diff, html, lsp) through a run:
tracker.save(run) writes the table's summary and findings into a run (the one an Audit writes,
after audit.finish()); EmbeddingTracker(..., run="runs/emb") makes the tracker write its own run
(every tracked step's records, then at close() its findings).
"""
import contextlib
import json

from torch import nn

from . import _engine
from ._distributed import resolve_process_group
from ._engine import Error, NegativeSampler, Role
from ._run import run_path, run_spec


def _table(module, name, track_every, zombie_rule):
    """(bag, padding_idx) of an nn.Embedding or nn.EmbeddingBag; Error naming `name` otherwise.
    The numeric options are checked by the C++ tracker."""
    if isinstance(module, nn.EmbeddingBag):
        bag = True
    elif isinstance(module, nn.Embedding):
        bag = False
    else:
        raise Error(f"embedding '{name}': module of type {type(module).__name__} is not an nn.Embedding "
                    f"or nn.EmbeddingBag")
    if zombie_rule not in ("windowed", "gradtracer"):
        raise Error(f"embedding '{name}': zombie_rule must be 'windowed' or 'gradtracer', got {zombie_rule!r}")
    if isinstance(track_every, bool) or not isinstance(track_every, int) or track_every < 1:
        raise Error(f"embedding '{name}': track_every must be an integer >= 1, got {track_every!r}")
    return bag, getattr(module, "padding_idx", None)


def _options(name, auto_fix, track_every, thresholds, zombie_rule, more):
    """The C++ EmbeddingTrackerOptions; `more` holds the rest by their C++ names (gradient_ema,
    fix_min_scale, fix_max_scale, boost_undertrained, undertrained_exposure, boost_max,
    rank_sample_rows, negative_sampler, on_intervention, on_step, process_group)."""
    more = dict(more)
    group = resolve_process_group(more.pop("process_group", None), f"embedding '{name}'")
    for key in ("on_intervention", "on_step"):
        if more.get(key) is not None and not callable(more[key]):
            raise Error(f"embedding '{name}': {key} must be callable, got {type(more[key]).__name__}")
    sampler = more.get("negative_sampler")
    if sampler is not None and not isinstance(sampler, NegativeSampler):
        raise Error(f"embedding '{name}': negative_sampler must be a gradscope.NegativeSampler, got "
                    f"{type(sampler).__name__}")
    more = {k: v for k, v in more.items() if v is not None or k not in ("on_intervention", "on_step",
                                                                        "negative_sampler")}
    o = _engine.EmbeddingTrackerOptions()
    o.auto_fix = auto_fix
    o.track_every = track_every
    o.thresholds = thresholds or _engine.Thresholds()
    o.windowed = zombie_rule == "windowed"
    o.process_group = group
    for key, value in more.items():
        if key in ("thresholds", "windowed", "track_every", "auto_fix") or not hasattr(o, key):
            raise TypeError(f"unexpected option {key!r}")
        setattr(o, key, value)
    return o


def _role(role):
    if not isinstance(role, Role):
        raise TypeError(f"embedding: role must be gradscope.Role.LOOKUP or gradscope.Role.NEGATIVE, got {role!r}")
    return role


class EmbeddingTracker:
    def __init__(self, module, auto_fix=False, track_every=1, *, name="embedding", thresholds=None,
                 zombie_rule="windowed", run=None, run_name=None, overwrite=False, **options):
        """`run`: a directory for the tracker's own run (records each tracked step, findings at
        close(); `run_name` defaults to the directory's name, `overwrite` replaces a run there).
        `options`: gradient_ema, fix_min_scale, fix_max_scale, boost_undertrained,
        undertrained_exposure, boost_max, rank_sample_rows (docs/embedding.md), negative_sampler,
        on_intervention, on_step (docs/python.md), process_group (a torch.distributed ProcessGroup,
        or True / "default" for the default group: per-row state merged across the group's ranks;
        constructing the tracker is then a collective; docs/distributed.md)."""
        bag, padding_idx = _table(module, name, track_every, zombie_rule)
        o = _options(name, auto_fix, track_every, thresholds, zombie_rule, options)
        spec = run_spec(run, run_name, overwrite, f"embedding '{name}'")
        self._attach(module, name, _engine.EmbeddingEngine(module.weight, bag, padding_idx, name, o, spec))

    @classmethod
    def _of_hub(cls, module, name, table):
        """The tracker of a hub's table: `table` is the hub engine's view of it."""
        tracker = cls.__new__(cls)
        tracker._attach(module, name, table)
        return tracker

    def _attach(self, module, name, engine):
        self.name = name
        self._module = module
        self._role = Role.LOOKUP
        self._engine = engine
        self._handle = module.register_forward_hook(self._observe_hook)

    def _observe_hook(self, module, inputs, output):
        self._engine.observe(inputs[0], self._role)

    def observe(self, indices, role=Role.LOOKUP):
        """Notes lookups made without calling the module (e.g. F.embedding on its weight);
        role=gradscope.Role.NEGATIVE for rows drawn by a negative sampler."""
        self._engine.observe(indices, _role(role))

    @contextlib.contextmanager
    def negatives(self):
        """The module's lookups inside this block are sampled negatives (Role.NEGATIVE, for
        NEGATIVE_SAMPLER_SKEW)."""
        self._role = Role.NEGATIVE
        try:
            yield self
        finally:
            self._role = Role.LOOKUP

    def before_step(self):
        """After backward: reads the touched rows' gradient (and applies auto-fix)."""
        self._engine.before_step()

    def after_step(self):
        """After the optimizer step: folds the rows' real update into the state."""
        self._engine.after_step()

    def step(self, optimizer):
        """before_step(); optimizer.step(); after_step()."""
        update = optimizer if callable(optimizer) and not hasattr(optimizer, "step") else optimizer.step
        self._engine.step(lambda: update())

    @property
    def current_step(self):
        return self._engine.current_step()

    def report(self):
        """The table's report as a dict: {"layer", "embedding_stats", "diagnostics"} (to_json() is the C++ JSON)."""
        return json.loads(self._engine.report_json())["gradscope_embedding_report"]

    def to_json(self):
        return self._engine.report_json()

    def warnings(self):
        return self._engine.warnings()

    def touched_rows(self):
        return self._engine.touched_rows()

    def row_counts(self):
        """Per-row counts, one list each indexed by row: {"exposure" (steps the row was in a batch),
        "lookups", "negatives", "last_seen" (-1: never)}; across processes, the job's."""
        return self._engine.row_counts()

    def save(self, run):
        """Writes the table's summary and findings into the run `run` (a directory holding a
        run.db, e.g. the Audit's after audit.finish()), where gradscope report, ls, diff, html
        and lsp find them; replaces what an earlier save wrote there."""
        self._engine.save(run_path(run, f"embedding '{self.name}'"))

    def close(self):
        """Removes the forward hook; with run=, commits the tracker's run and saves its findings."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        if hasattr(self._engine, "close"):
            self._engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _HubTable:
    """One table of an EmbeddingHubEngine with the EmbeddingEngine methods a tracker calls."""

    def __init__(self, hub, layer):
        self._hub, self._layer = hub, layer

    def observe(self, indices, role=Role.LOOKUP):
        self._hub.observe(self._layer, indices, role)

    def _steps_with_hub(self, *_):
        # The hub reads every table's gradient before one optimizer step and every update after
        # it; a table stepped on its own would see the others' rows change under it.
        raise Error(f"embedding hub: table '{self._layer}' is stepped by its hub: call hub.step(opt)")

    before_step = after_step = step = _steps_with_hub

    def current_step(self):
        return self._hub.current_step(self._layer)

    def report_json(self):
        return self._hub.table_report_json(self._layer)

    def warnings(self):
        return self._hub.warnings(self._layer)

    def touched_rows(self):
        return self._hub.touched_rows(self._layer)

    def row_counts(self):
        return self._hub.row_counts(self._layer)

    def gradient_norms(self):
        return self._hub.gradient_norms(self._layer)

    def save(self, run):
        # The hub's summary holds every table and their correlations: one document per run.
        raise Error(f"embedding hub: table '{self._layer}' is saved with its hub: call hub.save(run)")


class EmbeddingHub:
    """Several tables tracked together (two towers, several feature tables): one step for all
    of them, and the correlation over steps between every pair's gradient norms.

        hub = gradscope.EmbeddingHub()
        users = hub.track(model.user_emb, name="user")      # an EmbeddingTracker (its report(), ...)
        items = hub.track(model.item_emb, name="item")
        ...; loss.backward(); hub.step(opt)
        hub.report()   # {"tables": [per-table reports], "gradient_norm_correlations": [{a, b, pearson, steps}]}
    """

    def __init__(self):
        self._engine = _engine.EmbeddingHubEngine()
        self._tables = {}

    def track(self, module, auto_fix=False, track_every=1, *, name="embedding", thresholds=None,
              zombie_rule="windowed", **options):
        """Starts tracking a table (the same options as EmbeddingTracker); returns its tracker."""
        bag, padding_idx = _table(module, name, track_every, zombie_rule)
        self._engine.track(module.weight, bag, padding_idx, name,
                           _options(name, auto_fix, track_every, thresholds, zombie_rule, options))
        table = EmbeddingTracker._of_hub(module, name, _HubTable(self._engine, name))
        self._tables[name] = table
        return table

    def __getitem__(self, name):
        if name not in self._tables:
            raise Error(f"embedding hub: no table '{name}' (tables: {list(self._tables)})")
        return self._tables[name]

    def step(self, optimizer):
        """before_step() on every table, optimizer.step() (or `optimizer()`), after_step() on every table."""
        update = optimizer if callable(optimizer) and not hasattr(optimizer, "step") else optimizer.step
        self._engine.step(lambda: update())

    def report(self):
        """{"tables": [each table's report, as its tracker's report()], "gradient_norm_correlations":
        [{"a", "b", "pearson", "steps"} for every pair, in tracking order]}."""
        return json.loads(self._engine.report_json())["gradscope_embedding_hub"]

    def to_json(self):
        return self._engine.report_json()

    def save(self, run):
        """Writes every table's summary and findings, and the correlations of their gradient
        norms, into the run `run` (as EmbeddingTracker.save)."""
        self._engine.save(run_path(run, "embedding hub"))

    def close(self):
        """Removes every table's forward hook."""
        for table in self._tables.values():
            table.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
