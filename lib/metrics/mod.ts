/**
 * A small Prometheus registry: counters and histograms kept in process, and
 * gauges read at scrape time. Rendered in the text exposition format
 * (version 0.0.4).
 */

type Labels = Record<string, string>;

const key = (labels: Labels) =>
  Object.entries(labels).sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) =>
      `${k}="${
        v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")
      }"`
    )
    .join(",");

export class Histogram {
  #series = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
  ) {}

  observe(value: number, labels: Labels = {}) {
    const k = key(labels);
    let s = this.#series.get(k);
    if (!s) {
      this.#series.set(
        k,
        s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 },
      );
    }
    for (let i = 0; i < this.buckets.length; i++) {
      if (value <= this.buckets[i]) s.counts[i]++;
    }
    s.sum += value;
    s.count++;
  }

  render(): string {
    const out = [
      `# HELP ${this.name} ${this.help}`,
      `# TYPE ${this.name} histogram`,
    ];
    for (const [k, s] of this.#series) {
      const sep = k ? "," : "";
      this.buckets.forEach((b, i) =>
        out.push(`${this.name}_bucket{${k}${sep}le="${b}"} ${s.counts[i]}`)
      );
      out.push(`${this.name}_bucket{${k}${sep}le="+Inf"} ${s.count}`);
      out.push(`${this.name}_sum${k ? `{${k}}` : ""} ${s.sum}`);
      out.push(`${this.name}_count${k ? `{${k}}` : ""} ${s.count}`);
    }
    return out.join("\n");
  }
}

export class Counter {
  #series = new Map<string, number>();
  constructor(readonly name: string, readonly help: string) {}
  inc(labels: Labels = {}, by = 1) {
    const k = key(labels);
    this.#series.set(k, (this.#series.get(k) ?? 0) + by);
  }
  render(): string {
    const out = [
      `# HELP ${this.name} ${this.help}`,
      `# TYPE ${this.name} counter`,
    ];
    for (const [k, v] of this.#series) {
      out.push(`${this.name}${k ? `{${k}}` : ""} ${v}`);
    }
    return out.join("\n");
  }
}

/** A gauge whose samples are read when scraped. */
export interface Gauge {
  name: string;
  help: string;
  read(): Promise<{ labels: Labels; value: number }[]>;
}

export class Registry {
  #metrics: (Histogram | Counter)[] = [];
  #gauges: Gauge[] = [];

  histogram(name: string, help: string, buckets: readonly number[]) {
    const h = new Histogram(name, help, buckets);
    this.#metrics.push(h);
    return h;
  }

  counter(name: string, help: string) {
    const c = new Counter(name, help);
    this.#metrics.push(c);
    return c;
  }

  gauge(gauge: Gauge) {
    this.#gauges.push(gauge);
  }

  async render(): Promise<string> {
    const parts = this.#metrics.map((m) => m.render());
    for (const g of this.#gauges) {
      const samples = await g.read();
      parts.push(
        [
          `# HELP ${g.name} ${g.help}`,
          `# TYPE ${g.name} gauge`,
          ...samples.map((s) => {
            const k = key(s.labels);
            return `${g.name}${k ? `{${k}}` : ""} ${s.value}`;
          }),
        ].join("\n"),
      );
    }
    return parts.join("\n") + "\n";
  }
}

/** Latency buckets in seconds, 1 ms to 1 min. */
export const LATENCY_BUCKETS = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
] as const;
