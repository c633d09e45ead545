"""EmbeddingTracker: per-row dynamics of an nn.Embedding or nn.EmbeddingBag table, measured by
the C++ EmbeddingTracker on the table's own weight (shared, never copied).

    tracker = gradscope.EmbeddingTracker(model.item_emb, name="item")
    for users, items, negatives in loader:
        opt.zero_grad()
        with tracker.negatives():            # lookups of sampled negatives, if any
            neg = model.item_emb(negatives)
        loss(model(users, items), neg).backward()
        tracker.step(opt)                    # or: tracker.before_step(); opt.step(); tracker.after_step()
    print(tracker.report()["diagnostics"])

Every forward of the table is observed by a forward hook (its indices); the hook goes on
close() or at the end of a with-block.
"""
import contextlib
import json

from torch import nn

from . import _engine
from ._engine import Error


class EmbeddingTracker:
    def __init__(self, module, auto_fix=False, track_every=1, *, name="embedding", thresholds=None,
                 zombie_rule="windowed"):
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
        self.name = name
        self._module = module
        self._negative = False
        self._engine = _engine.EmbeddingEngine(module.weight, bag, getattr(module, "padding_idx", None), name,
                                               auto_fix, track_every, thresholds or _engine.Thresholds(),
                                               zombie_rule == "windowed")
        self._handle = module.register_forward_hook(self._observe_hook)

    def _observe_hook(self, module, inputs, output):
        self._engine.observe(inputs[0], self._negative)

    def observe(self, indices, negative=False):
        """Notes lookups made without calling the module (e.g. F.embedding on its weight)."""
        self._engine.observe(indices, negative)

    @contextlib.contextmanager
    def negatives(self):
        """Lookups inside this block are sampled negatives (for NEGATIVE_SAMPLER_SKEW)."""
        self._negative = True
        try:
            yield self
        finally:
            self._negative = False

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

    def close(self):
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
