"""Checks every gradscope.integrations.<name> test makes alike: GradscopeCallback refuses the Audit
options its trainer decides and a run that is not a path, and without its package `import gradscope`
still works while importing the integration names the extra to install."""
import os
import subprocess
import sys

import pytest

import gradscope


def refuses_decided_options(callback_class):
    for name in ("process_group", "scaler"):
        with pytest.raises(gradscope.Error, match=f"{name}= is not an option here"):
            callback_class(**{name: None})
    with pytest.raises(gradscope.Error, match="run must be a folder name or path, or None"):
        callback_class(run=3)
    with pytest.raises(gradscope.Error, match="print_report must be True or False"):
        callback_class(print_report="yes")


def names_its_extra_when_the_package_is_missing(integration, package, extra=None):
    """`import gradscope.integrations.<integration>` with `package` unimportable (a None in
    sys.modules) is an ImportError naming the package and pip install 'gradscope[<extra>]'."""
    extra = extra or integration
    code = (f"import sys; sys.modules[{package!r}] = None\n"
            "import gradscope\n"
            "try:\n"
            f"    import gradscope.integrations.{integration}\n"
            "except ImportError as e:\n"
            "    print('refused:', e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert done.returncode == 0, done.stderr
    assert f"refused: gradscope.integrations.{integration} needs the '{package}' package" in done.stdout
    assert f"pip install 'gradscope[{extra}]'" in done.stdout
