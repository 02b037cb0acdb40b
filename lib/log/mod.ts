/**
 * One structured logger: each line is a JSON object with `time`, `level`,
 * `event` and the fields given. Lines below the level are not built at all.
 *
 * @example
 * ```ts
 * const log = createLogger("info");
 * log.info("relay_error", { service: "orders", error: "connection refused" });
 * ```
 */
export type Level = "debug" | "info" | "warn" | "error";

const rank: Record<Level, number> = {
  debug: 10,
  info: 20,
  warn: 30,
  error: 40,
};

/** Where lines go; tests pass their own sink to read what was logged. */
export type Sink = (line: string) => void;

export interface Logger {
  debug(event: string, fields?: Record<string, unknown>): void;
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Record<string, unknown>): Logger;
}

const stdoutSink: Sink = (line) => console.log(line);

/** Creates a logger that writes lines at `level` and above to `sink`. */
export function createLogger(
  level: Level,
  sink: Sink = stdoutSink,
  base: Record<string, unknown> = {},
): Logger {
  const write =
    (at: Level) => (event: string, fields?: Record<string, unknown>) => {
      if (rank[at] < rank[level]) return;
      sink(JSON.stringify(
        {
          time: new Date().toISOString(),
          level: at,
          event,
          ...base,
          ...fields,
        },
        errorReplacer,
      ));
    };
  return {
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    child: (fields) => createLogger(level, sink, { ...base, ...fields }),
  };
}

function errorReplacer(_key: string, value: unknown) {
  if (value instanceof Error) {
    return { name: value.name, message: value.message };
  }
  if (typeof value === "bigint") return value.toString();
  return value;
}

/** A logger that keeps its lines in memory, for tests. */
export function memoryLogger(level: Level = "debug") {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger(level, (line) => lines.push(JSON.parse(line)));
  return { logger, lines };
}
