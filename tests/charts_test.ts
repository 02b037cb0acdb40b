/**
 * The charts the server draws whole: the age histogram's count axis steps
 * by 1, 2 or 5 times a power of ten, and the success rate is a meter with
 * its thresholds. The uPlot charts need a browser
 * (tests/e2e/console_charts_test.ts).
 */
import assert from "node:assert/strict";
import { h } from "preact";
import { renderToString } from "preact-render-to-string";
import { AgeHistogram, countAxis } from "../islands/_age_histogram.tsx";
import { RateBar } from "../islands/_rate_bar.tsx";

Deno.test("age histogram: the count axis steps by 1, 2 or 5 times ten", () => {
  assert.deepEqual(countAxis(0), { top: 1, step: 1 });
  assert.deepEqual(countAxis(3), { top: 3, step: 1 });
  assert.deepEqual(countAxis(7), { top: 8, step: 2 });
  assert.deepEqual(countAxis(1000), { top: 1000, step: 500 });
  const svg = renderToString(
    h(AgeHistogram, {
      buckets: [{ le: 1, count: 7 }, { le: 5, count: 0 }, {
        le: "+Inf",
        count: 1,
      }],
    }),
  );
  const ticks = [...svg.matchAll(/class="histogram-tick"[^>]*>(\d+)</g)].map(
    (m) => Number(m[1]),
  );
  assert.deepEqual(ticks, [0, 2, 4, 6, 8]);
  assert.match(svg, /<title>≤ 1 s: 7 pending<\/title>/);
  assert.match(svg, /<desc id="age-histogram-desc">7 ≤ 1 s, 1 > 5 s/);
});

Deno.test("rate bar: a meter on 0 to 1, amber under 95 %, red under 50 %", () => {
  const html = renderToString(h(RateBar, { rate: 0.8, label: "kitchen" }));
  assert.match(html, /<meter class="rate-meter"/);
  for (
    const attr of [
      'min="0"',
      'max="1"',
      'low="0.5"',
      'high="0.95"',
      'optimum="1"',
      'value="0.8"',
      'aria-label="kitchen: 80% successful"',
    ]
  ) {
    assert.ok(html.includes(attr), `${attr} in ${html}`);
  }
  assert.match(html, /class="rate warn"/);
  assert.match(html, />80%</);
});
