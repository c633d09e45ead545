"""Draws docs/images/compression.svg from the points `make validate-compression` measured
(compression_points.json: one point per task, seed and method): held-out accuracy against bytes
as stored, every seed's point as measured (nothing averaged here).

    .venv/bin/python scripts/plot_compression.py compression_points.json docs/images/compression.svg

Vega-Lite draws it through vl-convert-python (pinned in requirements.txt, installed into .venv by
make deps), the package the HTML report's chart bundle comes from.
"""
import json
import sys


def compression_spec(points):
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "title": {"text": "Held-out accuracy against size, 5 seeds (make validate-compression)",
                  "anchor": "start"},
        "data": {"values": points},
        "facet": {"column": {"field": "task", "type": "nominal", "title": None}},
        "resolve": {"scale": {"x": "independent", "y": "independent"}},
        "spec": {
            "width": 230,
            "height": 220,
            "mark": {"type": "point", "filled": True, "size": 40, "opacity": 0.75},
            "encoding": {
                "x": {"field": "bytes", "type": "quantitative", "title": "bytes as stored",
                      "scale": {"zero": False}},
                "y": {"field": "accuracy", "type": "quantitative", "title": "held-out accuracy",
                      "scale": {"zero": False}},
                "color": {"field": "method", "type": "nominal"},
                "shape": {"field": "method", "type": "nominal"},
            },
        },
        "config": {"font": "sans-serif", "legend": {"orient": "bottom", "columns": 4}},
    }


def main(input_path, output_path):
    try:
        import vl_convert
    except ImportError:
        sys.exit(f"plot_compression: {sys.executable} has no vl_convert; run `make deps` "
                 "(requirements.txt pins vl-convert-python) and use .venv/bin/python")
    with open(input_path, encoding="utf-8") as f:
        points = json.load(f)
    svg = vl_convert.vegalite_to_svg(compression_spec(points))
    with open(output_path, "w", encoding="utf-8") as f:
        f.write(svg)
    print(f"wrote {output_path} ({len(points)} points)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: plot_compression.py POINTS.json OUT.svg", file=sys.stderr)
        sys.exit(2)
    main(*sys.argv[1:])
