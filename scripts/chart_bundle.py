"""Writes the HTML report's chart libraries: Vega, Vega-Lite and vega-embed as one browser
bundle, the one vl-convert-python ships (pinned in requirements.txt), and their versions.

    python scripts/chart_bundle.py OUT.js OUT.versions

OUT.js is a plain script that sets window.vega, window.vegaLite and window.vegaEmbed; OUT.versions
holds one line, "vega 6.2.0, vega-lite 6.4.1, vega-embed 7.0.2". A file is rewritten only when
its text changes, so a configure that finds the same bundle rebuilds nothing.
"""
import re
import sys


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(js_path, versions_path):
    try:
        import vl_convert
    except ImportError:
        sys.exit(f"chart_bundle: {sys.executable} has no vl_convert; run `make deps` (requirements.txt "
                 "pins vl-convert-python)")
    bundle = vl_convert.javascript_bundle()
    # vl-convert names Vega-Lite by minor version ("6.4"); the bundle carries the full one.
    minor = vl_convert.get_vegalite_versions()[-1]
    full = sorted(set(re.findall(r'"(' + re.escape(minor) + r'\.[0-9]+)"', bundle)))
    if len(full) != 1:
        sys.exit(f"chart_bundle: cannot tell which Vega-Lite {minor}.x the bundle holds (found {full})")
    # vega-embed's own version string is not kept in the bundle: vl-convert's word is taken for it.
    if f'"{vl_convert.get_vega_version()}"' not in bundle:
        sys.exit(f"chart_bundle: the bundle does not hold vega {vl_convert.get_vega_version()}, the version "
                 "vl-convert reports")
    # vl-convert's bundle ends "window.vega=__default;window.vegaLite=__default1;", names bound
    # to null: its own snippet never reads them. The page's driver needs only vegaEmbed, but a
    # global that claims to be Vega should be Vega: point the two at the namespaces the bundle
    # builds (their objects hold Dataflow and accessPathDepth, and each its .version).
    tail = "window.vega=__default;window.vegaLite=__default1;"
    if bundle.count(tail) != 1 or "window.vegaEmbed=" not in bundle:
        sys.exit("chart_bundle: the bundle does not end by setting window.vegaEmbed, vega and vegaLite as expected")
    namespaces = []
    for first_export in ("Dataflow", "accessPathDepth"):
        found = re.findall(r"const (\w+)=function\(\)\{return\{" + first_export + ":", bundle)
        if len(found) != 1:
            sys.exit(f"chart_bundle: cannot tell which object of the bundle exports {first_export} (found {found})")
        namespaces.append(found[0])
    bundle = bundle.replace(tail, f"window.vega={namespaces[0]};window.vegaLite={namespaces[1]};")
    write_if_changed(js_path, bundle)
    write_if_changed(versions_path, f"vega {vl_convert.get_vega_version()}, vega-lite {full[0]}, "
                                    f"vega-embed {vl_convert.get_vega_embed_version()}\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: chart_bundle.py OUT.js OUT.versions")
    main(*sys.argv[1:])
