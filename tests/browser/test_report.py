"""`gradscope html` in a real browser: Debian's Chromium, driven by PyPI's playwright (sync API; it
downloads no browser). Reports of the demo runs and of a run with hostile names must render every
chart, offline, with no error, no dialog and no request beyond the page's own file.
Environment (set by tests/browser/CMakeLists.txt): GRADSCOPE_BIN, GRADSCOPE_HOSTILE_RUN,
GRADSCOPE_ARTIFACTS, GRADSCOPE_DATA_DIR (or GRADSCOPE_DEFAULT_DATA_DIR); GRADSCOPE_CHROMIUM names
another Chromium than Debian's /usr/bin/chromium."""
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright
    PLAYWRIGHT_IMPORT_ERROR = None
except ImportError as e:  # reported by the test, naming what to install
    PLAYWRIGHT_IMPORT_ERROR = e

ENV = os.environ
CHROMIUM = ENV.get("GRADSCOPE_CHROMIUM") or "/usr/bin/chromium"  # Debian's
DATA_DIR = ENV.get("GRADSCOPE_DATA_DIR") or ENV.get("GRADSCOPE_DEFAULT_DATA_DIR")
FIRST_SHOWN = "demo-vanishing-trunk"  # saved as report.png: a sick run, flags to see
# The machine's network is closed: without the background-networking flags Chromium keeps
# trying (and failing) to reach Google's services.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def missing_prerequisite():
    for name in ("GRADSCOPE_BIN", "GRADSCOPE_HOSTILE_RUN", "GRADSCOPE_ARTIFACTS"):
        if not ENV.get(name):
            return f"{name} is not set (run through ctest)"
    if not DATA_DIR:
        return "GRADSCOPE_DATA_DIR is not set (run through ctest)"
    if not os.path.isfile(CHROMIUM):
        return f"{CHROMIUM} not found (make deps, or apt-get install chromium)"
    if PLAYWRIGHT_IMPORT_ERROR is not None:
        return (f"{sys.executable} cannot import playwright ({PLAYWRIGHT_IMPORT_ERROR}) "
                "(make deps: requirements.txt pins it; no `playwright install`, the test drives "
                "Debian's chromium)")
    if not os.path.isfile(os.path.join(DATA_DIR, "digits.csv")):
        return f"{DATA_DIR}/digits.csv not found (make data)"
    return None


def run(args, timeout):
    shown = " ".join([os.path.basename(args[0]), *args[1:]])
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.fail(f"{shown}: {e}")
    assert r.returncode == 0, f"{shown} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


@dataclass
class Report:
    name: str
    html: str
    specs: str
    findings: list


def make_reports(tmp):
    """The runs and their reports: every demo run, and the hostile one."""
    gradscope = ENV["GRADSCOPE_BIN"]
    runs = os.path.join(tmp, "runs")
    run([gradscope, "demo", "--quick", "--data-dir", DATA_DIR, "--out", runs], 200)
    hostile = json.loads(run([ENV["GRADSCOPE_HOSTILE_RUN"], os.path.join(runs, "hostile")], 30))
    names = sorted(n for n in os.listdir(runs) if n.startswith("demo-"))
    assert FIRST_SHOWN in names, f"demo wrote no {FIRST_SHOWN} among {names}"
    reports = []
    for name in [*names, "hostile"]:
        html = os.path.join(tmp, f"{name}.html")
        specs = os.path.join(tmp, f"{name}-specs")
        run([gradscope, "html", os.path.join(runs, name), "-o", html, "--spec", specs], 60)
        # The findings as agents get them (exit 1 for a sick run): the page must show the same.
        r = subprocess.run([gradscope, "report", "--json", os.path.join(runs, name)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode in (0, 1), f"report --json {name} exited {r.returncode}\n{r.stderr}"
        reports.append(Report(name, html, specs, json.loads(r.stdout)["findings"]))
    return reports, hostile


def check_findings(page, report):
    """"What to do" renders the findings of `report --json` (docs/agent-json.md), not texts of its
    own: each one's action and premise is in the section, as text. Module findings are shown for
    the three worst nodes (the rest are in the node table)."""
    summary = page.locator("#summary").text_content()
    module_nodes = [f.get("node") for f in report.findings if f.get("kind") == "module"]
    shown_nodes = list(dict.fromkeys(module_nodes))[:3]
    for f in report.findings:
        if f.get("kind") == "module" and f.get("node") not in shown_nodes:
            continue
        what = f"{report.name}: {f.get('type')} {f.get('node')}"
        assert str(f.get("action")) in summary, f"{what}: action not in What to do"
        assert str(f.get("premise")) in summary, f"{what}: premise not in What to do"
    if not report.findings:
        assert re.search(r"No node is flagged|No tree finding", summary), summary


def open_report(context, file):
    """Opens a report and records everything the page must not do while it renders."""
    page = context.new_page()
    url = Path(file).as_uri()
    problems = []

    def on_console(m):
        if m.type == "error":
            problems.append(f"console error: {m.text.split(chr(10))[0]}")

    def on_dialog(d):
        problems.append(f"dialog ({d.type}): {d.message}")
        try:
            d.dismiss()
        except PlaywrightError:
            pass

    # The page inlines its libraries and data: its own file is the only request it may make.
    # Chromium reports no data: URL as a request; EXTERNAL_REFERENCES looks for those.
    def on_request(r):
        if r.url != url:
            problems.append(f"request: {r.url[:200]}")

    page.on("console", on_console)
    page.on("pageerror", lambda e: problems.append(f"page error: {e.message}"))
    page.on("dialog", on_dialog)
    page.on("request", on_request)
    page.goto(url)
    # The page starts as data-gradscope="loading"; the driver sets "rendered" or "error: ...".
    try:
        page.wait_for_function("() => document.documentElement.dataset.gradscope !== 'loading'",
                               timeout=20_000)
    except PlaywrightError:
        pass
    state = page.evaluate("() => document.documentElement.dataset.gradscope ?? '(never set)'")
    return page, problems, state


# Every URL the rendered page refers to other than its own fragments: attributes that load or
# link something, and url() in styles. The page needs none, not even data: URLs. Vega's SVG
# renderer refers to its own gradients and clip paths as url(#id) or url(<page URL>#id).
EXTERNAL_REFERENCES = r"""() => {
  const urlAttributes = ['src', 'href', 'xlink:href', 'srcset', 'poster', 'data', 'action',
                         'formaction', 'background'];
  const self = location.href.split('#')[0];
  const inPage = (u) => u === '' || u.startsWith('#') || u.startsWith(`${self}#`);
  const outside = (text) =>
    [...text.matchAll(/url\(\s*(['"]?)(.*?)\1\s*\)/gi)].some((m) => !inPage(m[2]));
  const found = [];
  for (const e of document.querySelectorAll('*')) {
    for (const a of e.attributes) {
      const v = a.value.trim();
      if ((urlAttributes.includes(a.name) && !inPage(v)) || outside(v))
        found.push(`<${e.localName} ${a.name}="${v.slice(0, 120)}">`);
    }
  }
  for (const sheet of document.styleSheets)
    for (const rule of sheet.cssRules)
      if (outside(rule.cssText)) found.push(`css: ${rule.cssText.slice(0, 120)}`);
  return found;
}"""

# Per [data-chart]: whether it holds an svg, and how many data marks Vega drew in it (axes,
# legends and titles have other roles than role-mark, so they do not count).
DRAWN_CHARTS = r"""() =>
  [...document.querySelectorAll('[data-chart]')].map((el) => {
    const svg = el.querySelector('svg');
    const marks = svg ? [...svg.querySelectorAll('g.role-mark > *')] : [];
    const drawn = marks.filter((m) =>
      m.tagName === 'path' ? (m.getAttribute('d') || '').length > 0
                           : ['rect', 'line', 'text', 'circle', 'image'].includes(m.tagName));
    return { name: el.dataset.chart, svg: svg !== null, marks: drawn.length };
  })"""

# The chart libraries' globals as the page runs them: vega's and vega-lite's .version, or what
# each is instead; vega-embed's bundle keeps no version string, so only that it is a function.
LIBRARY_VERSIONS = r"""() => Object.fromEntries(
  [['vega', window.vega], ['vega-lite', window.vegaLite]].map(
    ([name, lib]) => [name, lib === null || typeof lib !== 'object'
                              ? `(window global is ${lib === null ? 'null' : typeof lib})`
                              : String(lib.version ?? '(no .version)')]).concat(
  [['vega-embed', typeof window.vegaEmbed]]))"""


def check_specs(report, charts):
    files = sorted(os.listdir(report.specs))
    assert files == sorted(f"{c['name']}.json" for c in charts), "one spec file per chart"
    for f in files:
        with open(os.path.join(report.specs, f), encoding="utf-8") as spec_file:
            spec = json.load(spec_file)
        schema = spec.get("$schema") if isinstance(spec, dict) else None
        assert re.search("vega-lite", str(schema)), f"{f}: $schema"


def check_hostile(page, hostile, charts):
    assert any(c["name"].startswith("embedding") for c in charts), \
        "no embedding chart for the hostile table"
    text = page.evaluate("() => document.body.innerText")
    for s in hostile:
        assert s in text, f"the page text lacks {json.dumps(s)}"
    assert page.locator('img[src="x"]').count() == 0, "an injected <img> became an element"
    assert page.evaluate("() => typeof window.__gradscope_xss") == "undefined", "injected code ran"
    handlers = page.evaluate("""() =>
      [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes]
        .filter((a) => a.name.startsWith('on')).map((a) => `<${e.localName} ${a.name}>`))""")
    assert handlers == [], "elements with inline event handlers"


def check_chart_libraries(page):
    """The one inlined bundle sets window.vega, window.vegaLite and window.vegaEmbed; vega and
    vega-lite are the versions the footer names (gradscope::web::versions(), read when the bundle
    was made)."""
    footer = page.locator("footer").text_content()
    version = r"([0-9][^,\s]*)"
    m = re.search(f"vega {version}, vega-lite {version}, vega-embed {version}", footer)
    assert m, f"the footer names no chart library versions: {footer}"
    named = dict(zip(("vega", "vega-lite"), m.groups()), **{"vega-embed": "function"})
    assert page.evaluate(LIBRARY_VERSIONS) == named, \
        "the chart libraries the page runs are not the ones its footer names"


def check_report(context, report, hostile, artifacts):
    page, problems, state = open_report(context, report.html)
    try:
        page.screenshot(path=os.path.join(artifacts, f"{report.name}.png"), full_page=True)
        # The README's picture: the top of a sick report (verdict, advice, the gradient flow).
        if report.name == FIRST_SHOWN:
            page.screenshot(path=os.path.join(artifacts, "report.png"), full_page=True,
                            clip={"x": 0, "y": 0, "width": 1280, "height": 1250})
        assert problems == [], "the page misbehaved"
        assert state == "rendered"
        assert page.evaluate(EXTERNAL_REFERENCES) == [], "references outside the page"
        charts = page.evaluate(DRAWN_CHARTS)
        assert charts, "no [data-chart] element"
        for c in charts:
            assert c["svg"], f"chart {c['name']}: no svg"
            assert c["marks"] > 0, f"chart {c['name']}: no mark drawn"
        # A boosted-tree run's page shows its rounds in place of the node table (docs/trees.md).
        if report.name.startswith("demo-trees-"):
            assert sorted(c["name"] for c in charts) == \
                ["tree-concentration", "tree-contribution", "tree-features", "tree-loss"], \
                "the four round charts"
            assert page.locator("table#nodes").count() == 0, "a node table on a tree run"
        else:
            assert page.locator("table#nodes").count() == 1, "no table#nodes"
        check_specs(report, charts)
        check_findings(page, report)
        if report.name == "hostile":
            check_hostile(page, hostile, charts)
        check_chart_libraries(page)
    finally:
        page.close()


def test_reports_render_in_chromium(subtests):
    # A machine without the browser fails the test, saying what to install: nothing may skip.
    missing = missing_prerequisite()
    if missing:
        pytest.fail(f"{missing}: browser tests may not skip", pytrace=False)
    artifacts = ENV["GRADSCOPE_ARTIFACTS"]
    os.makedirs(artifacts, exist_ok=True)
    picture = os.path.join(artifacts, "report.png")  # the README's, written by this run only
    if os.path.exists(picture):
        os.remove(picture)
    with tempfile.TemporaryDirectory(prefix="gradscope-browser-") as tmp, \
            tempfile.TemporaryDirectory(prefix="gradscope-chromium-") as profile:
        reports, hostile = make_reports(tmp)
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                for report in reports:
                    with subtests.test(report.name):
                        check_report(context, report, hostile, artifacts)
            finally:
                context.close()
    assert os.path.isfile(picture) and os.path.getsize(picture) > 0, f"no screenshot {picture}"
