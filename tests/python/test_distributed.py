"""process_group=...: the audit and the embedding trackers of 2 and 4 processes (Gloo over
loopback, a FileStore) merge into what one process fed the concatenated batches measures.
The ranks are subprocesses (distributed_worker.py) under a timeout, so a hang fails the test
instead of blocking the suite; the one-process reference runs here, with the same code."""
import json
import os
import subprocess
import sys
import time

import pytest
import torch

import gradscope

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import distributed_worker as worker  # noqa: E402

JOB_TIMEOUT = 150  # seconds for a whole job, torch imports included (20 s and more each on a loaded
# 2-core machine); a hang fails here


def run_job(mode, world, out, worker_script="distributed_worker.py"):
    """Starts `world` ranks of `mode` (of `worker_script`, here); returns their exit codes and
    output (a rank still running past JOB_TIMEOUT is killed, code -9: the test fails, showing
    where the ranks got to)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]),
               GRADSCOPE_RANK_TIMEOUT=str(JOB_TIMEOUT - 5))
    logs = [open(os.path.join(out, f"rank{r}.log"), "w+") for r in range(world)]  # no pipe to fill
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, worker_script), mode, str(r), str(world),
                               str(out)], env=env, stdout=logs[r], stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    deadline = time.monotonic() + JOB_TIMEOUT
    codes = []
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        codes.append(p.returncode)
    texts = []
    for f in logs:
        f.seek(0)
        texts.append(f.read())
        f.close()
    return codes, texts


def read(out, rank):
    with open(os.path.join(out, f"rank{rank}.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """One 2-rank job running the reduce, nan and embedding modes in turn: DIR/<mode>/..."""
    out = tmp_path_factory.mktemp("two_ranks")
    codes, logs = run_job("reduce,nan,embedding", 2, out)
    assert codes == [0, 0], logs
    return out


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("four_ranks")
    codes, logs = run_job("reduce", 4, out)
    assert codes == [0] * 4, logs
    return out


def keyed(records):
    return {(step, node, site): s for step, node, site, s in records}


def close(a, b, rel):
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


@pytest.mark.parametrize("world", [2, 4])
def test_merged_records_equal_one_process_fed_the_concatenated_batches(world, request, tmp_path):
    job = request.getfixturevalue("two_ranks" if world == 2 else "four_ranks")
    ref = worker.run(f"reduce:{world}", 0, 0, str(tmp_path))
    tmp_path = job / "reduce"
    want = keyed(ref["records"])
    # Per step: activation, output gradient, parameter gradient, parameter and update of both
    # nodes, and node '0''s pre-activation (the Tanh's input).
    assert len(want) == worker.STEPS * 11
    for rank in range(world):
        got = keyed(read(tmp_path, rank)["records"])
        assert got.keys() == want.keys(), rank
        for key, w in want.items():
            g = got[key]
            for field in ("count", "finite", "nan", "pos_inf", "neg_inf", "zero", "saturated"):
                assert g[field] == w[field], (rank, key, field)  # parameter sites once, not `world` times
            # At step 0 (the same weights everywhere) activations and output gradients are the
            # same numbers row by row: min and max exact. From step 1 on the summed gradients
            # differ from the one process's in rounding, and so does what they change.
            exact = key[0] == 0 and key[2] in ("activation", "pre_activation", "output_grad")
            for field in ("min", "max", "max_abs"):
                assert close(g[field], w[field], 0 if exact else 1e-12), (rank, key, field, g[field], w[field])
            for field in ("sum", "sum_sq", "sum_abs"):
                assert close(g[field], w[field], 1e-12), (rank, key, field, g[field], w[field])
    # Node '0''s activation checked against torch itself: each rank's hook saw its own rows.
    merged = keyed(read(tmp_path, 0)["records"])
    per_rank = [read(tmp_path, r)["torch_acts"] for r in range(world)]
    for step in range(worker.STEPS):
        s = merged[(step, "0", "activation")]
        assert s["count"] == sum(acts[step][0] for acts in per_rank) == world * worker.ROWS * 8
        assert s["min"] == min(acts[step][1] for acts in per_rank)
        assert s["max"] == max(acts[step][2] for acts in per_rank)
    # Rank 0 wrote the run, with the job in its metadata; no other rank created anything.
    run = gradscope.load_run(tmp_path / "run0", records=True)
    assert (run.metadata.world_size, run.metadata.backend, run.steps) == (world, "gloo", worker.STEPS)
    assert keyed([[r.step, r.node, r.site, worker.stats_dict(r.stats)] for r in run.records]) == merged
    assert os.path.isdir(tmp_path / "tb0")
    for rank in range(1, world):
        assert not os.path.exists(tmp_path / f"run{rank}") and not os.path.exists(tmp_path / f"tb{rank}")
    assert read(tmp_path, 0)["origin"] is None and read(tmp_path, 0)["error"] is None


def test_nan_origin_names_the_rank_that_fed_it(two_ranks, tmp_path):
    job = two_ranks / "nan"  # rank 1 feeds a NaN at step 1
    # The Tanh's input (node '0''s pre-activation) is measured first, so the NaN begins there.
    for rank in range(2):
        assert read(job, rank)["origin"] == [1, "0", "pre_activation", 1]
    origin = gradscope.load_run(job / "run0").report.nonfinite_origin
    assert (origin.step, origin.node, origin.site, origin.rank) == (1, "0", "pre_activation", 1)
    # One process: the same origin, no rank.
    ref = worker.run("nan:2", 1, 0, str(tmp_path))  # as rank 1, which plants the NaN
    assert ref["origin"] == [1, "0", "pre_activation", -1]


def test_a_rank_that_dies_makes_the_others_raise_not_hang(tmp_path):
    start = time.monotonic()
    codes, logs = run_job("die", 2, tmp_path)
    assert codes == [0, 7], logs
    tmp_path = tmp_path / "die"
    got = read(tmp_path, 0)
    assert "rank 0 of 2 (gloo)" in got["error"] and "merge of step 1 failed" in got["error"], got["error"]
    assert got["seconds"] < 3 + 2  # the group's 3 s timeout bounds it (a closed connection: at once)
    assert time.monotonic() - start < JOB_TIMEOUT
    run = gradscope.load_run(tmp_path / "run0", partial=True)
    assert run.steps == 1  # the step before the failed merge, whole


def test_calls_that_meet_the_group_let_other_threads_have_the_gil(tmp_path):
    # Each call made while Gloo's worker thread must take the GIL to finish an earlier
    # collective (distributed_worker.gil_job): a call that kept the GIL deadlocked here.
    codes, logs = run_job("gil", 2, tmp_path)
    assert codes == [0, 0], logs
    for rank in range(2):
        assert read(tmp_path / "gil", rank)["steps"] == worker.STEPS


def test_embedding_row_counts_equal_one_process(two_ranks, tmp_path):
    ref = worker.run("embedding:2", 0, 0, str(tmp_path))
    assert sum(ref["items"]["exposure"]) > 0 and max(ref["items"]["lookups"]) > 1
    assert sum(ref["users"]["negatives"]) == 4 * worker.STEPS
    for rank in range(2):
        got = read(two_ranks / "embedding", rank)
        for table in ("items", "users"):
            assert got[table] == ref[table], (rank, table)
        assert got["items_stats"]["exposed_rows"] == ref["items_stats"]["exposed_rows"]


def test_bad_process_groups_are_errors_naming_the_option():
    net = worker.model()
    with pytest.raises(gradscope.Error, match="audit: process_group must be a torch.distributed ProcessGroup"):
        gradscope.Audit(net, process_group=3)
    with pytest.raises(gradscope.Error, match="embedding 'items': process_group must be .* got str"):
        gradscope.EmbeddingTracker(torch.nn.Embedding(4, 2), name="items", process_group="world")
    assert not torch.distributed.is_initialized()
    for spelling in (True, "default"):
        with pytest.raises(gradscope.Error, match="default group, but torch.distributed is not initialised"):
            gradscope.Audit(net, process_group=spelling)
        with pytest.raises(gradscope.Error, match="embedding 'e': process_group=.* not initialised"):
            gradscope.EmbeddingHub().track(torch.nn.Embedding(4, 2), name="e", process_group=spelling)
    # The engine's own check, behind the Python one: the option object refuses other types too.
    options = gradscope._engine.AuditOptions()
    with pytest.raises(gradscope.Error, match="audit: process_group must be .* got list"):
        options.process_group = []
    assert options.process_group is None
