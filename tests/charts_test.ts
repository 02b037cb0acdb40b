/**
 * The charts the server draws whole: the Queue Lab's timeline keeps every
 * box inside its axis and wide enough for its number, the age histogram's
 * count axis steps by 1, 2 or 5 times a power of ten, and the success rate
 * is a meter with its thresholds. The uPlot charts need a browser
 * (tests/e2e/console_charts_test.ts).
 */
import assert from "node:assert/strict";
import { h } from "preact";
import { renderToString } from "preact-render-to-string";
import {
  placeBoxes,
  QueueTimeline,
  timelineScale,
  timeTicks,
} from "../components/queue_timeline.tsx";
import { AgeHistogram, countAxis } from "../islands/_age_histogram.tsx";
import { RateBar } from "../islands/_rate_bar.tsx";
import type { TimelineEntry } from "../services/labs/queue_lab.ts";

function entry(over: Partial<TimelineEntry>): TimelineEntry {
  return {
    worker: 1,
    order: 1,
    attempt: 1,
    startMs: 0,
    endMs: 10,
    printed: true,
    duplicate: false,
    remembered: false,
    outcome: "acked",
    error: null,
    ...over,
  };
}

// A run shaped like the lab's: short deliveries early, a crash, and the
// redelivery a lease later, 2 ms long at the very end.
const RUN: TimelineEntry[] = [
  entry({ worker: 1, order: 3, startMs: 100, endMs: 112 }),
  entry({ worker: 2, order: 1, startMs: 40, endMs: 90, outcome: "crashed" }),
  entry({ worker: 3, order: 2, startMs: 80, endMs: 91 }),
  entry({ worker: 3, order: 42, startMs: 118, endMs: 121 }),
  entry({ worker: 1, order: 1, startMs: 1015, endMs: 1017, duplicate: true }),
];

Deno.test("queue timeline: every box fits its number and ends inside the axis", () => {
  const svg = renderToString(h(QueueTimeline, { timeline: RUN, workers: 3 }));
  const axis = svg.match(
    /<line class="qt-axis-line" x1="(\d+)" x2="([\d.]+)"/,
  );
  assert.ok(axis, svg);
  const axisEnd = Number(axis[2]);
  const boxes = [
    ...svg.matchAll(
      /<rect class="qt-box [a-z]+" x="([\d.]+)" y="\d+" width="([\d.]+)"/g,
    ),
  ];
  assert.equal(boxes.length, RUN.length);
  for (const [i, [, x, width]] of boxes.entries()) {
    const digits = String(RUN[i].order).length;
    assert.ok(Number(width) >= digits * 7 + 8, `order ${RUN[i].order}`);
    // A duplicate's outline reaches 1.5 units past its box.
    assert.ok(Number(x) + Number(width) + 1.5 <= axisEnd, `box ${i}`);
  }
  const ticks = [...svg.matchAll(/class="qt-tick"[^>]*>(\d+)</g)].map((m) =>
    Number(m[1])
  );
  assert.deepEqual(ticks, [0, 200, 400, 600, 800, 1000]);
});

Deno.test("queue timeline: a crash's cross stays inside too", () => {
  const late = [
    entry({ order: 7, startMs: 990, endMs: 1000, outcome: "crashed" }),
  ];
  const k = timelineScale(late, 756);
  // The box, then the 14-unit cross, then the 2-unit outline allowance.
  assert.ok(990 * k + Math.max(15, 10 * k) + 14 <= 756 - 2 + 1e-9);
  assert.deepEqual(timeTicks(5), [0, 1, 2, 3, 4, 5]);
});

Deno.test("queue timeline: a widened box pushes the next in its lane; a long run lengthens the axis", () => {
  const close = [
    entry({ order: 4, startMs: 100, endMs: 103 }),
    entry({ order: 6, startMs: 104, endMs: 106, outcome: "retry" }),
  ];
  const { boxes } = placeBoxes(close, 1, 80);
  assert.ok(boxes[1].x >= boxes[0].x + boxes[0].width, JSON.stringify(boxes));

  // 50 orders, one worker, 2 ms each: 50 boxes of 22 units need more than
  // 860 units; the axis grows to hold them.
  const long = Array.from(
    { length: 50 },
    (_, i) => entry({ order: i + 1, startMs: i * 3, endMs: i * 3 + 2 }),
  );
  const svg = renderToString(h(QueueTimeline, { timeline: long, workers: 1 }));
  const width = Number(svg.match(/ width="(\d+)"/)?.[1]);
  assert.ok(width > 860, `${width}`);
  const axisEnd = Number(
    svg.match(/<line class="qt-axis-line" x1="\d+" x2="([\d.]+)"/)?.[1],
  );
  let before = -Infinity;
  for (
    const [, x, w] of svg.matchAll(
      /<rect class="qt-box [a-z]+" x="([\d.]+)" y="\d+" width="([\d.]+)"/g,
    )
  ) {
    assert.ok(Number(x) >= before, "boxes overlap");
    before = Number(x) + Number(w);
    assert.ok(before <= axisEnd, `${before} > ${axisEnd}`);
  }
});

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
