/**
 * A statement that fails unawaited because its connection went away does
 * not end the process (lib/process.ts `survivingConnectionLoss`): the log
 * names the statement, and the process goes on. Any other unhandled
 * rejection still ends it. Each case runs in a child Deno of its own, since
 * an unhandled rejection is the process's business.
 */
import assert from "node:assert/strict";

const PROCESS = new URL("../../lib/process.ts", import.meta.url).href;
const LOG = new URL("../../lib/log/mod.ts", import.meta.url).href;

/** Runs `program` in a child Deno: its exit code, JSON log lines and stderr. */
async function runChild(program: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", program],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).split("\n")
    .filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  return {
    code: out.code,
    lines,
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** Runs a child that rejects one promise with `error`, unawaited. */
function childRejecting(error: string) {
  return runChild(`
    import { survivingConnectionLoss } from ${JSON.stringify(PROCESS)};
    import { createLogger } from ${JSON.stringify(LOG)};
    survivingConnectionLoss(createLogger("info"));
    const error = ${error};
    Promise.reject(error);
    await new Promise((r) => setTimeout(r, 50));
    console.log(JSON.stringify({ event: "still_running" }));
  `);
}

Deno.test("process: a statement that fails unawaited as its connection closes is logged with its text, and the process goes on", async () => {
  const { code, lines, stderr } = await childRejecting(`Object.defineProperty(
      Object.assign(new Error("write CONNECTION_CLOSED 127.0.0.1:5432"),
        { code: "CONNECTION_CLOSED" }),
      "query", { value: "select 1", enumerable: false })`);
  assert.equal(code, 0, stderr);
  const logged = lines.find((l) => l.event === "connection_lost_unawaited");
  assert.ok(logged, JSON.stringify(lines));
  assert.equal(logged.query, "select 1");
  assert.ok(lines.some((l) => l.event === "still_running"));
});

Deno.test("process: any other unhandled rejection still ends the process", async () => {
  const { code, lines, stderr } = await childRejecting(
    `new TypeError("a bug")`,
  );
  assert.notEqual(code, 0);
  assert.match(stderr, /a bug/);
  assert.ok(!lines.some((l) => l.event === "still_running"));
});

Deno.test("process: during shutdown, a rejection left by an abandoned step is logged and the stop still ends well", async () => {
  const program = `
    import { onShutdown, shutdown, survivingConnectionLoss } from ${
    JSON.stringify(PROCESS)
  };
    import { createLogger } from ${JSON.stringify(LOG)};
    const log = createLogger("info");
    survivingConnectionLoss(log);
    onShutdown(() => {
      Promise.reject(new TypeError("left behind"));
      setTimeout(() => {
        throw new Error("thrown behind");
      }, 0);
      return new Promise((r) => setTimeout(r, 50));
    }, { name: "leaky" });
    await shutdown(log);
    console.log(JSON.stringify({ event: "stopped" }));
  `;
  const { code, lines, stderr } = await runChild(program);
  assert.equal(code, 0, stderr);
  for (
    const event of ["unhandled_during_shutdown", "uncaught_during_shutdown"]
  ) {
    assert.ok(lines.some((l) => l.event === event), JSON.stringify(lines));
  }
  assert.ok(lines.some((l) => l.event === "stopped"));
});
