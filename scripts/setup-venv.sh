#!/usr/bin/env bash
# Makes the virtual environment gradscope builds, demos and tests in (.venv), with the exact
# versions of requirements.txt: PyTorch (whose LibTorch the C++ side builds against too), the
# test tools, the chart bundle and the browser driver. Idempotent: silent when the venv holds
# what requirements.txt pins (a stamp keeps the file's sha256); a changed file reinstalls.
#   GRADSCOPE_VENV   the folder (default <checkout>/.venv)
#   GRADSCOPE_VENV_PYTHON  the Python that makes it (default: python3 first on PATH, >= 3.10)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${GRADSCOPE_VENV:-$root/.venv}"
requirements="$root/requirements.txt"
stamp="$venv/.gradscope-requirements-sha256"
sum="$(sha256sum "$requirements" | cut -d' ' -f1)"

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then
  exit 0
fi

python="${GRADSCOPE_VENV_PYTHON:-$(command -v python3 || true)}"
if [ -z "$python" ]; then
  echo "setup-venv: no python3 on PATH; install Debian's python3 and python3-venv" >&2
  exit 3
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "setup-venv: $python is Python $("$python" -c 'import sys; print(sys.version.split()[0])');" \
    "gradscope needs 3.10 or newer (set GRADSCOPE_VENV_PYTHON)" >&2
  exit 3
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "setup-venv: making $venv with $python ($("$python" --version 2>&1))"
  if ! "$python" -m venv "$venv"; then
    echo "setup-venv: '$python -m venv' failed; on Debian install python3-venv" >&2
    exit 3
  fi
fi
echo "setup-venv: installing requirements.txt into $venv (torch is the large one)"
# pip prints a warning for each missing folder of an extra index the machine may name; the
# errors that matter still reach stderr.
"$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$requirements" 2>&1 |
  grep -v "is ignored: it is neither a file nor a directory" >&2 || true
"$venv/bin/python" -m pip check >/dev/null 2>&1 || true
"$venv/bin/python" - "$requirements" <<'PY'
# Every pin must be what the venv holds: a failed install above is caught here, by name.
import sys
from importlib.metadata import version, PackageNotFoundError
bad = []
for line in open(sys.argv[1]):
    spec = line.split("#")[0].strip()
    if not spec:
        continue
    name, want = spec.split("==")
    try:
        have = version(name)
    except PackageNotFoundError:
        have = None
    # torch's local label (+cpu) is not part of the pin
    if have is None or have.split("+")[0] != want:
        bad.append(f"{name} (want {want}, have {have})")
if bad:
    sys.exit("setup-venv: not installed as pinned: " + ", ".join(bad))
PY
echo "$sum" >"$stamp"
echo "setup-venv: done"
