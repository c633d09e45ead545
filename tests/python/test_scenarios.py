"""The demo's scenarios in PyTorch get the same flags on the same nodes as in LibTorch."""
import pytest

from conftest import run_json
from scenarios import NAN_STEP, load_digits, run

STEPS = 60
NAMES = ["healthy-mlp", "vanishing-trunk", "dying-relu", "nan-later", "healthy-cnn"]


@pytest.fixture(scope="module")
def cpp_flags(cpp_reference, digits_csv):
    return run_json([cpp_reference, "scenarios", digits_csv, str(STEPS)] + NAMES)[0]


@pytest.fixture(scope="module")
def digits(digits_csv):
    return load_digits(digits_csv)


@pytest.mark.parametrize("name", ["healthy-mlp", "vanishing-trunk", "dying-relu", "nan-later"])
def test_same_flags_on_the_same_nodes_as_cpp(name, cpp_flags, digits):
    audit = run(name, *digits, STEPS)
    assert audit.report().flags() == cpp_flags[name]


def test_the_planted_faults_are_where_they_were_planted(cpp_flags, digits):
    assert cpp_flags["vanishing-trunk"]["trunk0"] == ["VANISHING", "STAGNANT"]
    assert "DEAD" in cpp_flags["dying-relu"]["fc2"]
    nan = run("nan-later", *digits, STEPS).report()
    assert "NAN" in nan.node("logfeat").flags
    assert [e.first_step for e in nan.node("logfeat").evidence if e.flag == "NAN"] == [NAN_STEP]
    assert nan.flagged()[0] == "logfeat"


def test_cnn_with_batchnorm_is_healthy_like_the_cpp_cnn(cpp_flags, digits):
    assert set(f for flags in cpp_flags["healthy-cnn"].values() for f in flags) == {"HEALTHY"}
    report = run("healthy-cnn", *digits, STEPS).report()
    assert [n.node for n in report.nodes] == ["conv1", "bn1", "conv2", "bn2", "out"]
    assert report.healthy(), str(report)
    assert report.node("conv1").channels == 8  # the channel view saw conv1's 8 channels
