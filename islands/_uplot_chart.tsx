/**
 * A uPlot chart inside an island. uPlot draws on a canvas and needs the
 * DOM, so the server renders only the chart's box, its height reserved by
 * a CSS class (no inline style: the CSP has `style-src 'self'`), and the
 * browser mounts uPlot into that box once the island hydrates. The box
 * sets the width: a ResizeObserver gives uPlot the box's width whenever
 * it changes, so a chart fits a phone and a wide screen alike.
 *
 * The colours and the font are the style sheet's (`--ok`, `--info`,
 * `--line`, `--muted`, `--sans` in static/style.css), read when the chart
 * mounts, so a chart matches the page around it.
 */
import uPlot from "uplot";
import { useEffect, useRef } from "preact/hooks";

/** The style sheet's colours and font, as canvas styles. */
export interface ChartTheme {
  ink: string;
  muted: string;
  line: string;
  ok: string;
  info: string;
  warn: string;
  bad: string;
  /** The axes' font, e.g. `12px system-ui, sans-serif`. */
  font: string;
}

/** Reads the theme from the custom properties that apply at `el`. */
export function chartTheme(el: Element): ChartTheme {
  const css = getComputedStyle(el);
  const read = (name: string, fallback: string) =>
    css.getPropertyValue(name).trim() || fallback;
  return {
    ink: read("--ink", "#3b2616"),
    muted: read("--muted", "#705b49"),
    line: read("--line", "#eadbc3"),
    ok: read("--ok", "#2f6f45"),
    info: read("--info", "#2d5b85"),
    warn: read("--warn", "#855a00"),
    bad: read("--bad", "#a3322a"),
    font: `12px ${read("--sans", "system-ui, sans-serif")}`,
  };
}

/** Props of the box a chart is drawn in. */
export interface UPlotChartProps {
  /**
   * The chart's options but its size, built in the browser from the page's
   * theme. Read once, when the chart mounts.
   */
  options: (theme: ChartTheme) => Omit<uPlot.Options, "width" | "height">;
  /** The data; a new array redraws the chart (keep it memoized). */
  data: uPlot.AlignedData;
  /**
   * The canvas's height in CSS pixels, axes included; the legend adds a
   * line below. The box's class must reserve the same, legend included.
   */
  height: number;
  /** The box's classes: `chart-box` and the one that reserves its height. */
  class: string;
  testid?: string;
}

/** The box's width for uPlot: whole pixels, as it draws on a pixel grid. */
function widthOf(box: HTMLElement): number {
  return Math.floor(box.getBoundingClientRect().width);
}

/**
 * An empty box on the server and in the first render; uPlot in it from the
 * first effect on, redrawn when `data` changes and resized with the box.
 */
export function UPlotChart(props: UPlotChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot>();
  // The mount effect runs once; it reads the props of the render it
  // follows, which the ref holds.
  const latest = useRef(props);
  latest.current = props;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const { options, data, height } = latest.current;
    const u = new uPlot(
      { ...options(chartTheme(el)), width: widthOf(el), height },
      data,
      el,
    );
    plot.current = u;
    const resized = new ResizeObserver(() => {
      const width = widthOf(el);
      // A box that is hidden (width 0) keeps its last drawing.
      if (width > 0 && width !== u.width) u.setSize({ width, height });
    });
    resized.observe(el);
    return () => {
      resized.disconnect();
      u.destroy();
      plot.current = undefined;
    };
  }, []);

  useEffect(() => {
    const u = plot.current;
    if (u && u.data !== props.data) u.setData(props.data);
  }, [props.data]);

  return <div ref={box} class={props.class} data-testid={props.testid} />;
}
