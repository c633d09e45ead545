"""TensorBoard event files from `gradscope export --format tensorboard` and from the live
TensorBoardSink, read back by an independent reader (tb_reader.py) and checked value by value
against the run as RunReader reads it (`gradscope export --format jsonl`)."""
import json
import math
import os
import subprocess

import pytest

import tb_reader

CLI = os.environ["GRADSCOPE_CLI"]
FIXTURE = os.environ["GRADSCOPE_TB_FIXTURE"]
PROTO = os.environ["GRADSCOPE_TB_PROTO"]
GRADIENT_SITES = ["param_grad", "embedding_rows", "output_grad"]


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    return tb_reader.proto_module(PROTO, str(tmp_path_factory.mktemp("pb")))


def run(*args, check=True):
    r = subprocess.run(list(args), capture_output=True)
    if check and r.returncode != 0:
        raise AssertionError(f"{args}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
    return r


def make_run(tmp_path, kind, live=False):
    run_dir = str(tmp_path / kind)
    args = [FIXTURE, kind, run_dir]
    if live:
        args += ["--live", str(tmp_path / (kind + "-live"))]
    run(*args)
    return run_dir


def tag_text(name):
    """terminal_text (io/render/safe_text.h) for the characters the tests use: the C0 controls
    escaped, printable UTF-8 kept. (Bytes that are not UTF-8 do not survive the JSONL the
    expectations come from; event_writer_test checks their \\xNN.)"""
    out = []
    for ch in name:
        code = ord(ch)
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append("\\x%02x" % code)
        else:
            out.append(ch)
    return "".join(out)


def merged_steps(run_dir):
    """step -> node -> site -> merged counts, from RunReader's records (jsonl export)."""
    out = run(CLI, "export", run_dir, "--format", "jsonl").stdout.decode("utf-8", "surrogateescape")
    steps = {}
    for line in out.splitlines():
        r = json.loads(line)
        node = steps.setdefault(r["step"], {}).setdefault(r["node"], {})
        m = node.setdefault(r["site"], dict.fromkeys(["count", "finite", "nan", "inf", "zero", "saturated", "sum_sq"], 0))
        for k in ["count", "finite", "nan", "zero", "saturated"]:
            m[k] += r[k]
        m["inf"] += r["pos_inf"] + r["neg_inf"]
        m["sum_sq"] += r["sum_sq"] or 0.0
    return steps


def thresholds(run_dir):
    r = run(CLI, "report", run_dir, "--json", check=False)
    return json.loads(r.stdout)["gradscope_report"]["thresholds"]


def expected_scalars(run_dir):
    """(step, tag) -> value, computed here from the records and the stored thresholds."""
    t = thresholds(run_dir)
    want, stagnant = {}, {}
    for step, nodes in sorted(merged_steps(run_dir).items()):
        for node, sites in nodes.items():
            tag = tag_text(node)

            def flag(name, on):
                want[(step, f"flag/{name}/{tag}")] = 1.0 if on else 0.0

            for site in GRADIENT_SITES:
                if site in sites:
                    g = sites[site]
                    l2 = math.sqrt(g["sum_sq"])
                    shown = math.nan if g["nan"] else math.inf if g["inf"] else l2
                    want[(step, f"grad_l2/{tag}")] = shown
                    flag("VANISHING", g["finite"] > 0 and l2 < t["grad_lo"])
                    flag("EXPLODING", g["finite"] > 0 and l2 > t["grad_hi"])
                    break
            p, u = sites.get("param"), sites.get("update")
            if p and u:
                if p["nan"] + u["nan"] + p["inf"] + u["inf"] > 0:
                    want[(step, f"update_ratio/{tag}")] = math.nan
                elif p["sum_sq"] > 0:
                    ratio = math.sqrt(u["sum_sq"]) / math.sqrt(p["sum_sq"])
                    want[(step, f"update_ratio/{tag}")] = ratio
                    stagnant[node] = stagnant.get(node, 0) + 1 if ratio < t["update_ratio_lo"] else 0
                    flag("STAGNANT", stagnant[node] >= t["stagnant_steps"])
            a, pre = sites.get("activation"), sites.get("pre_activation")
            if a:
                want[(step, f"activation_zero_frac/{tag}")] = a["zero"] / a["count"]
                want[(step, f"activation_saturated_frac/{tag}")] = a["saturated"] / a["count"]
                want[(step, f"activation_nonfinite_frac/{tag}")] = (a["nan"] + a["inf"]) / a["count"]
                flag("DEAD", a["zero"] / a["count"] > t["dead_frac"])
            if pre:  # only the input of a squashing function saturates
                flag("SATURATED", pre["saturated"] / pre["count"] > t["saturation_frac"])
            flag("NAN", sum(s["nan"] for s in sites.values()) > 0)
            flag("INF", sum(s["inf"] for s in sites.values()) > 0)
    return want


def written(events, kind):
    """(step, tag) -> value of every scalar / histogram / text; each key once."""
    out = {}
    for e in events:
        if not e.HasField("summary"):
            continue
        for v in e.summary.value:
            if v.WhichOneof("value") != kind:
                continue
            key = (e.step, v.tag)
            assert key not in out, f"{key} written twice"
            if kind == "simple_value":
                out[key] = v.simple_value
            elif kind == "histo":
                out[key] = v.histo
            else:
                assert v.metadata.plugin_data.plugin_name == "text"
                assert v.tensor.dtype == 7 and [d.size for d in v.tensor.tensor_shape.dim] == [1]
                out[key] = v.tensor.string_val[0].decode("utf-8")
    return out


def same(a, b):
    if math.isnan(b):
        return math.isnan(a)
    if math.isinf(b):
        return a == b
    # simple_value is a float: within float32 rounding of the double.
    return math.isclose(a, b, rel_tol=2e-7, abs_tol=1e-45)


def check_scalars(events, want, extra=()):
    got = written(events, "simple_value")
    missing = sorted(k for k in want if k not in got)
    unexpected = sorted(k for k in got if k not in want and k[1].split("/")[0] not in extra)
    assert not missing, missing[:5]
    assert not unexpected, unexpected[:5]
    bad = [(k, got[k], want[k]) for k in want if not same(got[k], want[k])]
    assert not bad, bad[:5]
    return got


def export(run_dir, out_dir):
    r = run(CLI, "export", run_dir, "--format", "tensorboard", "-o", out_dir)
    assert b"wrote " in r.stdout
    return tb_reader.event_file(out_dir)


def check_histograms(pb, events, run_dir, node):
    got = written(events, "histo")
    lines = run(FIXTURE, "channels", run_dir).stdout.decode().splitlines()
    assert lines
    seen = 0
    for line in lines:
        c = json.loads(line)
        means = [s[3] / s[0] if s[1] + s[2] == 0 and s[0] > 0 else math.nan for s in c["activation"]]
        norms = [math.nan if s[1] else math.inf if s[2] else math.sqrt(s[4]) for s in c["output_grad"]]
        for measure, values in [("channel_activation_mean", means), ("channel_grad_l2", norms)]:
            finite = [v for v in values if math.isfinite(v)]
            key = (c["step"], f"{measure}/{node}")
            if not finite:
                assert key not in got
                continue
            h = got[key]
            seen += 1
            assert h.num == len(finite)
            assert h.min == min(finite) and h.max == max(finite)
            assert math.isclose(h.sum, sum(finite), rel_tol=1e-12, abs_tol=1e-300)
            assert math.isclose(h.sum_squares, sum(v * v for v in finite), rel_tol=1e-12)
            # Each bucket holds exactly the values in [previous limit, its limit).
            assert list(h.bucket_limit) == sorted(h.bucket_limit) and len(h.bucket) == len(h.bucket_limit)
            low = -1.7976931348623157e308
            for limit, count in zip(h.bucket_limit, h.bucket):
                assert count == sum(1 for v in finite if low <= v < limit), (key, limit)
                low = limit
            assert sum(h.bucket) == len(finite)
    return seen


def test_export_every_value_against_the_run(pb, tmp_path):
    run_dir = make_run(tmp_path, "basic")
    events = tb_reader.read_events(export(run_dir, str(tmp_path / "tb")), pb)
    assert events[0].file_version == "brain.Event:2"
    want = expected_scalars(run_dir)
    # effective_rank, the embedding metrics and compression points come from channel records
    # and the run's documents.
    got = check_scalars(events, want, extra=("effective_rank", "embedding", "compression"))
    last = max(s for s, _ in want)
    for step in range(0, last + 1, 10):
        assert same(got[(step, "effective_rank/enc/fc1")], 3.5 + 0.01 * step)
    emb = {k[1]: v for k, v in got.items() if k[1].startswith("embedding/") and k[0] == last}
    assert {k: round(v, 6) for k, v in emb.items()} == {
        "embedding/coverage/item": 0.9,
        "embedding/dead_fraction/item": 0.12,
        "embedding/zombie_fraction/item": 0.25,
        "embedding/lookup_gini/item": 0.4,
        "embedding/popularity_gini/item": 0.35,
    }
    # The planted trouble shows where it was planted.
    assert got[(19, "flag/DEAD/fc2")] == 0 and got[(20, "flag/DEAD/fc2")] == 1
    assert got[(8, "flag/STAGNANT/fc2")] == 0 and got[(9, "flag/STAGNANT/fc2")] == 1
    assert check_histograms(pb, events, run_dir, "enc/fc1") == 12
    text = written(events, "tensor")
    report = run(CLI, "report", run_dir, check=False)
    assert report.returncode == 1  # unhealthy: the planted fc2
    # The report's text, each line indented four spaces (a markdown code block).
    lines = report.stdout.decode().splitlines(keepends=True)
    assert text == {(last, "gradscope/report"): "".join("    " + line for line in lines)}


def test_embedding_profiles_become_histograms(pb, tmp_path):
    run_dir = make_run(tmp_path, "basic")
    events = tb_reader.read_events(export(run_dir, str(tmp_path / "tb")), pb)  # every record's CRC checked
    got = written(events, "histo")
    # The fixture's profile: exposure bins [1,2) 500, [2,4) 300, [4,8) 100; velocity 20 rows
    # below 1e-4, then [1e-4,1e-3) 600, [1e-3,1e-2) 280.
    doc = json.loads(open(os.path.join(documents(run_dir), "embedding.json")).read())
    profile = doc["gradscope_embedding_run"]["tables"][0]["profile"]
    for measure in ("exposure", "velocity"):
        (step, tag), h = next((k, v) for k, v in got.items() if k[1] == f"embedding/{measure}/item")
        bins = profile[measure]
        assert list(h.bucket_limit) == bins["edges"]
        assert list(h.bucket) == [bins["below"]] + bins["counts"]
        assert h.num == bins["below"] + sum(bins["counts"])
        assert (h.min, h.max) == (bins["edges"][0], bins["edges"][-1])


def test_compression_points_at_the_last_step(pb, tmp_path):
    run_dir = make_run(tmp_path, "basic")
    events = tb_reader.read_events(export(run_dir, str(tmp_path / "tb")), pb)
    got = {k[1]: v for k, v in written(events, "simple_value").items() if k[1].startswith("compression/")}
    doc = json.loads(open(os.path.join(documents(run_dir), "compression.json")).read())
    c = doc["gradscope_compression_measured"]
    want = {"compression/bytes/fp32": c["fp32_bytes"], "compression/accuracy/fp32": c["fp32_accuracy"]}
    methods = [p["method"] for p in c["points"]]
    for p in c["points"]:
        name = p["method"] if methods.count(p["method"]) == 1 else f'{p["method"]} ({p["budget"]})'
        want[f"compression/bytes/{name}"] = p["bytes"]
        if p["accuracy"] is not None:  # not measured: not written
            want[f"compression/accuracy/{name}"] = p["accuracy"]
    assert "compression/accuracy/uniform-int4" not in got
    assert sorted(got) == sorted(want)
    assert all(same(got[k], want[k]) for k in want), (got, want)


def documents(run_dir):
    """The run's documents as files (gradscope export --format documents), their folder."""
    out = run_dir + "-documents"
    run(CLI, "export", run_dir, "--format", "documents", "-o", out)
    return out


def test_tree_run_exports_each_rounds_measures(pb, tmp_path):
    run_dir = make_run(tmp_path, "trees")
    events = tb_reader.read_events(export(run_dir, str(tmp_path / "tb")), pb)  # every record's CRC checked
    got = written(events, "simple_value")
    tree = json.loads(open(os.path.join(documents(run_dir), "trees.json")).read())["gradscope_tree_run"]
    rounds = tree["rounds"]
    n = len(rounds["trees"])
    assert n == 12
    for measure in ("train_loss", "valid_loss", "contribution", "velocity", "leaf_mean_abs", "gain", "leaves"):
        for k in range(n):
            value = rounds[measure][k]
            key = (k, f"trees/{measure}")
            if value is None:  # not measured that round (velocity of round 0): not written
                assert key not in got
            else:
                assert same(got[key], value), (key, got[key], value)
    # Split concentration: the sum of squared gain shares of the round's features, computed
    # here from the per-round feature triples (feature, splits, gain).
    for k in range(n):
        gains = [g for _, _, g in rounds["features"][k]]
        total = sum(gains)
        assert same(got[(k, "trees/split_concentration")], sum((g / total) ** 2 for g in gains))
    # The report's text (the tree timeline and findings) comes with the last round.
    assert (n - 1, "gradscope/report") in written(events, "tensor")


def test_live_sink_writes_the_same_values(pb, tmp_path):
    run_dir = make_run(tmp_path, "basic", live=True)
    events = tb_reader.read_events(tb_reader.event_file(str(tmp_path / "basic-live")), pb)
    check_scalars(events, expected_scalars(run_dir), extra=("effective_rank",))
    assert check_histograms(pb, events, run_dir, "enc/fc1") == 12
    (text,) = written(events, "tensor").values()
    assert "fc2" in text and "verdict: unhealthy" in text


def test_nan_everywhere_is_written_as_nan(pb, tmp_path):
    run_dir = make_run(tmp_path, "nan", live=True)
    events = tb_reader.read_events(export(run_dir, str(tmp_path / "tb")), pb)
    got = check_scalars(events, expected_scalars(run_dir), extra=("channel_activation_mean_nonfinite", "channel_grad_l2_nonfinite"))
    assert got[(0, "channel_activation_mean_nonfinite/fc1")] == 4
    assert math.isnan(got[(5, "grad_l2/fc1")]) and math.isnan(got[(5, "update_ratio/fc2")])
    assert got[(5, "flag/NAN/fc1")] == 1
    # No finite channel value: no histogram, the channels counted as non-finite.
    assert not written(events, "histo")
    live = tb_reader.read_events(tb_reader.event_file(str(tmp_path / "nan-live")), pb)
    check_scalars(live, expected_scalars(run_dir), extra=("channel_activation_mean_nonfinite", "channel_grad_l2_nonfinite"))


def test_names_with_newlines_and_quotes(pb, tmp_path):
    run_dir = make_run(tmp_path, "names", live=True)
    events = tb_reader.read_events(export(run_dir, str(tmp_path / "tb")), pb)
    got = check_scalars(events, expected_scalars(run_dir), extra=("effective_rank",))
    tags = {t for _, t in got}
    assert "grad_l2/enc/a\\nb" in tags and 'grad_l2/say "hi" it\'s' in tags
    assert "grad_l2/x\\x01y caf\u00e9\\ttab" in tags
    assert not any("\n" in t for t in tags)
    live = tb_reader.read_events(tb_reader.event_file(str(tmp_path / "names-live")), pb)
    check_scalars(live, expected_scalars(run_dir), extra=("effective_rank",))


def test_unwritable_output_is_a_clear_error(tmp_path):
    run_dir = make_run(tmp_path, "basic")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run(CLI, "export", run_dir, "--format", "tensorboard", "-o", str(blocker / "tb"), check=False)
    assert r.returncode == 3
    assert r.stderr.decode().startswith(f"gradscope: error: cannot write TensorBoard events to '{blocker}/tb': ")
    r = run(CLI, "export", run_dir, "--format", "tensorboard", check=False)
    assert r.returncode == 2 and b"needs -o DIR" in r.stderr


def test_disk_full_during_export_is_an_error_and_the_file_stays_whole(pb, tmp_path):
    import resource
    import signal

    run_dir = make_run(tmp_path, "basic")
    out = str(tmp_path / "tb")

    def limit_files():  # as a full disk would: writes past 20 kB fail (EFBIG), no signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))

    r = subprocess.run([CLI, "export", run_dir, "--format", "tensorboard", "-o", out], capture_output=True,
                       preexec_fn=limit_files)
    assert r.returncode == 3
    err = r.stderr.decode()
    assert err.startswith("gradscope: error: cannot write '" + out + "/events.out.tfevents.") and "File too large" in err
    events = tb_reader.read_events(tb_reader.event_file(out), pb)  # whole records, CRCs right
    assert events[0].file_version == "brain.Event:2" and len(events) > 2
    assert os.path.getsize(tb_reader.event_file(out)) <= 20000


def test_progress_bar_on_a_terminal_only(tmp_path):
    import pty

    run_dir = str(tmp_path / "long")
    run(FIXTURE, "long", run_dir, "--steps", "20000")
    master, slave = pty.openpty()
    # Read while it runs: a full terminal buffer would block its writes.
    p = subprocess.Popen([CLI, "export", run_dir, "--format", "tensorboard", "-o", str(tmp_path / "tty")],
                         stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child has gone and closed its end
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    assert p.wait() == 0
    assert b"exporting " + run_dir.encode() in drawn and b"20000/20000" in drawn
    quiet = run(CLI, "export", run_dir, "--format", "tensorboard", "-o", str(tmp_path / "pipe"))
    assert quiet.stderr == b""
