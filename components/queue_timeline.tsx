/**
 * The Queue Lab's timeline as server-rendered SVG: one lane per worker,
 * time to the right on an axis with ticks in milliseconds, one box per
 * delivery (its order number inside). A crash is a red cross at the end of
 * the box, a duplicate ticket a box with a thick outline, an answer from
 * the printer's record a dashed one, a retry amber and a dead letter
 * black; hovering a box says which, with its times. Colours are classes of
 * the style sheet's "Charts" section. One SVG unit is one CSS pixel, so
 * the text keeps its size: on a phone the drawing scrolls sideways in its
 * wrapper, as a wide table does.
 *
 * Every box is at least as wide as its number. A box so widened that it
 * would cover the next one in its lane pushes that one right by as much,
 * and a run that then needs more room than 860 px gets a longer axis: the
 * drawing grows rather than overlap or pass the axis' end.
 */
import type { TimelineEntry } from "../services/labs/queue_lab.ts";

// In SVG units, which are CSS pixels; 860 fits the lab's panel at 1280 px.
const WIDTH = 860;
const LEFT = 80;
// Room right of the axis' end for a thick outline and the last tick label.
const RIGHT = 24;
const LANE = 34;
const TOP = 12;
const BOX = 20;
/** Below the lanes: the axis, its tick labels and its title. */
const AXIS = 44;
const TICK = 5;
/** The width of one digit of the order number (11 px, `.qt-order`). */
const DIGIT = 7;
/** Padding each side of the number inside its box. */
const PAD = 4;
/** The crash cross drawn after a box. */
const CROSS = 14;
/** What a box's outline may add past its end. */
const OUTLINE = 2;
/** Between two boxes of a lane that the second was pushed to clear. */
const GAP = 2;

/** How wide a box must be for its number: digits and padding. */
function minWidth(e: TimelineEntry): number {
  return String(e.order).length * DIGIT + 2 * PAD;
}

/**
 * Pixels per millisecond: the most that keeps every box, widened to its
 * number and followed by its cross, inside the plot. A box's right end is
 * `start * k + max(minWidth, duration * k) + cross`, so each entry bounds k
 * twice: by its end, and by its start plus its minimum width.
 */
export function timelineScale(
  timeline: TimelineEntry[],
  plotWidth: number,
): number {
  // Half of a duplicate's 3-unit outline lies outside its box.
  const reach = plotWidth - OUTLINE;
  let k = reach / Math.max(1, ...timeline.map((e) => e.endMs));
  for (const e of timeline) {
    const cross = e.outcome === "crashed" ? CROSS : 0;
    if (e.endMs > 0) k = Math.min(k, (reach - cross) / e.endMs);
    if (e.startMs > 0) {
      k = Math.min(k, (reach - cross - minWidth(e)) / e.startMs);
    }
  }
  return k;
}

/**
 * Tick values in whole ms: 1, 2 or 5 times a power of ten, about six of
 * them.
 */
export function timeTicks(spanMs: number): number[] {
  const rough = Math.max(1, spanMs) / 6;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = Math.max(
    1,
    [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? power * 10,
  );
  const ticks: number[] = [];
  for (let t = 0; t <= spanMs; t += step) ticks.push(t);
  return ticks;
}

function kindOf(e: TimelineEntry): string {
  return e.duplicate
    ? "duplicate"
    : e.outcome === "crashed"
    ? "crash"
    : e.remembered
    ? "remembered"
    : e.outcome;
}

function whatHappened(e: TimelineEntry): string {
  return e.outcome === "crashed"
    ? "printed, then the worker crashed before acknowledging"
    : e.duplicate
    ? "printed a second ticket"
    : e.remembered
    ? "the printer remembered the id: no ticket"
    : e.outcome === "acked"
    ? "printed and acknowledged"
    : (e.error ?? e.outcome);
}

/** A delivery's box: where it starts and how wide it is, in SVG units. */
export interface PlacedBox {
  entry: TimelineEntry;
  x: number;
  width: number;
}

/**
 * Places the boxes at `k` units per millisecond from `left`, lane by lane
 * in time order: each at its start, or just after the box before it in its
 * lane (and that box's cross) where the widened box would cover it.
 * Returns them in the timeline's order, and where the rightmost ends
 * (outline and cross included).
 */
export function placeBoxes(
  timeline: TimelineEntry[],
  k: number,
  left: number,
): { boxes: PlacedBox[]; right: number } {
  const placed = new Map<TimelineEntry, PlacedBox>();
  const laneEnd = new Map<number, number>();
  let right = left;
  const inTime = [...timeline].sort((a, b) => a.startMs - b.startMs);
  for (const entry of inTime) {
    const after = laneEnd.get(entry.worker);
    const x = Math.max(
      left + entry.startMs * k,
      after === undefined ? -Infinity : after + GAP,
    );
    const width = Math.max(minWidth(entry), (entry.endMs - entry.startMs) * k);
    const end = x + width + (entry.outcome === "crashed" ? CROSS : 0);
    laneEnd.set(entry.worker, end);
    right = Math.max(right, end + OUTLINE);
    placed.set(entry, { entry, x, width });
  }
  return { boxes: timeline.map((e) => placed.get(e)!), right };
}

/** Props: the run's deliveries and how many workers took them. */
export interface QueueTimelineProps {
  timeline: TimelineEntry[];
  workers: number;
}

/** The run's deliveries per worker over time, on a millisecond axis. */
export function QueueTimeline({ timeline, workers }: QueueTimelineProps) {
  const k = timelineScale(timeline, WIDTH - LEFT - RIGHT);
  const { boxes, right } = placeBoxes(timeline, k, LEFT);
  // The axis reaches the last box, wherever pushing put it.
  const plot = Math.max(WIDTH - LEFT - RIGHT, Math.ceil(right - LEFT));
  const width = LEFT + plot + RIGHT;
  const span = plot / k;
  const x = (ms: number) => LEFT + ms * k;
  const baseline = TOP + workers * LANE;
  const height = baseline + AXIS;
  return (
    <div class="queue-timeline-wrap" tabIndex={0}>
      <svg
        class="queue-timeline"
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
        role="img"
        aria-label={`Deliveries per worker over ${
          Math.round(span)
        } ms of the run`}
        data-testid="queue-timeline"
        data-span-ms={Math.round(span)}
      >
        {Array.from({ length: workers }, (_, i) => (
          <g key={i}>
            <text class="qt-lane-label" x={4} y={TOP + i * LANE + 18}>
              worker {i + 1}
            </text>
            <line
              class="qt-lane"
              x1={LEFT}
              x2={LEFT + plot}
              y1={TOP + i * LANE + 28.5}
              y2={TOP + i * LANE + 28.5}
            />
          </g>
        ))}
        {boxes.map(({ entry: e, x: x0, width: w }, i) => {
          const y = TOP + (e.worker - 1) * LANE + 4;
          return (
            <g key={i} class="qt-entry" data-kind={kindOf(e)}>
              <title>
                {`order ${e.order}, try ${e.attempt}, worker ${e.worker}, ${e.startMs}–${e.endMs} ms: ${
                  whatHappened(e)
                }`}
              </title>
              <rect
                class={`qt-box ${kindOf(e)}`}
                x={x0.toFixed(1)}
                y={y}
                width={w.toFixed(1)}
                height={BOX}
                data-testid="queue-timeline-box"
              />
              <text class="qt-order" x={(x0 + PAD).toFixed(1)} y={y + 14}>
                {e.order}
              </text>
              {e.outcome === "crashed" && (
                <text class="qt-cross" x={(x0 + w + 2).toFixed(1)} y={y + 15}>
                  ✕
                </text>
              )}
            </g>
          );
        })}
        <g class="qt-axis" data-testid="queue-timeline-axis">
          <line
            class="qt-axis-line"
            x1={LEFT}
            x2={LEFT + plot}
            y1={baseline + 0.5}
            y2={baseline + 0.5}
          />
          {timeTicks(span).map((t) => (
            <g key={t}>
              <line
                class="qt-axis-line"
                x1={x(t).toFixed(1)}
                x2={x(t).toFixed(1)}
                y1={baseline}
                y2={baseline + TICK}
              />
              <text
                class="qt-tick"
                x={x(t).toFixed(1)}
                y={baseline + TICK + 13}
                text-anchor="middle"
              >
                {t}
              </text>
            </g>
          ))}
          <text
            class="qt-axis-title"
            x={LEFT + plot}
            y={height - 4}
            text-anchor="end"
          >
            ms since the run started
          </text>
        </g>
      </svg>
    </div>
  );
}
