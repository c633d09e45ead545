"""The boosting packages are the trees extra's, never gradscope's: `import gradscope` and
`import gradscope.trees` work without them (the readers and the analysis need none), a callback
whose package is missing is an ImportError naming the extra, an older version an ImportError
naming the range, a newer one a warning naming it. Each case runs in a fresh interpreter where
the package is hidden or its version replaced."""
import os
import subprocess
import sys
import textwrap

import pytest

HIDE = """
import sys
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {hidden!r}:
            raise ImportError("hidden by the test: " + name)
sys.meta_path.insert(0, _Hide())
"""


def run(code):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=os.environ)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_needs_no_boosting_package():
    out = run(HIDE.format(hidden={"xgboost", "lightgbm", "catboost"}) + """
import gradscope, gradscope.trees
print(sorted(m for m in ("xgboost", "lightgbm", "catboost") if m in sys.modules))
for name in ("xgboost", "lightgbm", "catboost"):
    try:
        getattr(gradscope.trees, name + "_callback")()
    except ImportError as e:
        print(e)
""")
    lines = out.splitlines()
    assert lines[0] == "[]"
    for name, line in zip(("xgboost", "lightgbm", "catboost"), lines[1:]):
        assert line.startswith(f"gradscope.trees.{name}_callback needs the '{name}' package")
        assert "pip install 'gradscope[trees]'" in line


@pytest.mark.parametrize("name, old, tested", [("xgboost", "2.1.4", "xgboost 3.0 to 3.2"),
                                                ("lightgbm", "3.3.5", "lightgbm 4.0 to 4.7"),
                                                ("catboost", "1.1.1", "catboost 1.2")])
def test_older_version_is_refused_naming_the_range(name, old, tested):
    out = run(f"""
import {name}
{name}.__version__ = "{old}"
import gradscope.trees
try:
    gradscope.trees.{name}_callback(None)
except ImportError as e:
    print(e)
""")
    assert f"needs {name} " in out and f"or newer ({tested}" in out and f"this environment has {old}" in out


def test_newer_version_warns_naming_the_range():
    out = run("""
import warnings, xgboost
xgboost.__version__ = "3.5.0"
import gradscope.trees
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    gradscope.trees.xgboost_callback(None)
print([str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)][0])
""")
    assert out.startswith("gradscope.trees.xgboost_callback: xgboost 3.5.0 is newer than the versions tested "
                          "(xgboost 3.0 to 3.2, tested with 3.2.0)")
