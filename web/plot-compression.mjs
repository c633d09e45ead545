// Draws docs/images/compression.svg from the points `make validate-compression` measured
// (compression_points.json: one point per task, seed and method): held-out accuracy against
// bytes as stored, every seed's point as measured (nothing averaged here).
// Usage: node web/plot-compression.mjs compression_points.json docs/images/compression.svg
// (in web/ so that it finds the chart libraries npm installed there)
import { readFileSync, writeFileSync } from "node:fs";
import * as vega from "vega";
import * as vl from "vega-lite";

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error("usage: node web/plot-compression.mjs POINTS.json OUT.svg");
  process.exit(2);
}
const points = JSON.parse(readFileSync(input, "utf8"));
const spec = {
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title: { text: "Held-out accuracy against size, 5 seeds (make validate-compression)", anchor: "start" },
  data: { values: points },
  facet: { column: { field: "task", type: "nominal", title: null } },
  resolve: { scale: { x: "independent", y: "independent" } },
  spec: {
    width: 230,
    height: 220,
    mark: { type: "point", filled: true, size: 40, opacity: 0.75 },
    encoding: {
      x: { field: "bytes", type: "quantitative", title: "bytes as stored", scale: { zero: false } },
      y: { field: "accuracy", type: "quantitative", title: "held-out accuracy", scale: { zero: false } },
      color: { field: "method", type: "nominal" },
      shape: { field: "method", type: "nominal" },
    },
  },
  config: { font: "sans-serif", legend: { orient: "bottom", columns: 4 } },
};
const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: "none" });
writeFileSync(output, await view.toSVG());
console.log(`wrote ${output} (${points.length} points)`);
