/**
 * The Queue Lab's timeline as server-rendered SVG: one lane per worker,
 * time to the right, one box per delivery (its order number inside). A
 * crash is a red cross at the end of the box, a duplicate ticket a box with
 * a thick outline, an answer from the printer's record a dashed one, a
 * retry amber and a dead letter black.
 */
import type { TimelineEntry } from "../services/labs/queue_lab.ts";

const WIDTH = 860;
const LEFT = 80;
const LANE = 34;
const TOP = 24;

export function QueueTimeline(
  { timeline, workers }: { timeline: TimelineEntry[]; workers: number },
) {
  const end = Math.max(1, ...timeline.map((e) => e.endMs));
  const x = (ms: number) => LEFT + (ms / end) * (WIDTH - LEFT - 10);
  const height = TOP + workers * LANE + 24;
  return (
    <svg
      class="queue-timeline"
      viewBox={`0 0 ${WIDTH} ${height}`}
      width="100%"
      role="img"
      aria-label="Deliveries per worker over time"
      data-testid="queue-timeline"
    >
      {Array.from({ length: workers }, (_, i) => (
        <g key={i}>
          <text x={4} y={TOP + i * LANE + 20} font-size="12">
            worker {i + 1}
          </text>
          <line
            x1={LEFT}
            x2={WIDTH - 10}
            y1={TOP + i * LANE + 28}
            y2={TOP + i * LANE + 28}
            stroke="#ccc"
          />
        </g>
      ))}
      {timeline.map((e, i) => {
        const y = TOP + (e.worker - 1) * LANE + 4;
        const x0 = x(e.startMs);
        const w = Math.max(6, x(e.endMs) - x0);
        const fill = e.outcome === "dead"
          ? "#222"
          : e.outcome === "retry"
          ? "#e0a030"
          : e.duplicate
          ? "#d04040"
          : "#5a9a5a";
        return (
          <g
            key={i}
            data-kind={e.duplicate
              ? "duplicate"
              : e.outcome === "crashed"
              ? "crash"
              : e.remembered
              ? "remembered"
              : e.outcome}
          >
            <title>
              {`order ${e.order}, try ${e.attempt}, worker ${e.worker}: ${
                e.outcome === "crashed"
                  ? "printed, then the worker crashed before acknowledging"
                  : e.duplicate
                  ? "printed a second ticket"
                  : e.remembered
                  ? "the printer remembered the id: no ticket"
                  : e.outcome === "acked"
                  ? "printed and acknowledged"
                  : (e.error ?? e.outcome)
              }`}
            </title>
            <rect
              x={x0}
              y={y}
              width={w}
              height={20}
              fill={e.remembered ? "#fff" : fill}
              stroke={e.duplicate ? "#700" : "#333"}
              stroke-width={e.duplicate ? 3 : 1}
              stroke-dasharray={e.remembered ? "3 2" : undefined}
            />
            <text
              x={x0 + 2}
              y={y + 14}
              font-size="10"
              fill={e.remembered ? "#333" : "#fff"}
            >
              {e.order}
            </text>
            {e.outcome === "crashed" && (
              <text
                x={x0 + w + 1}
                y={y + 15}
                font-size="16"
                fill="#c00"
                font-weight="bold"
              >
                ✕
              </text>
            )}
          </g>
        );
      })}
      <text x={LEFT} y={height - 6} font-size="11">0 ms</text>
      <text x={WIDTH - 70} y={height - 6} font-size="11">{end} ms</text>
    </svg>
  );
}
