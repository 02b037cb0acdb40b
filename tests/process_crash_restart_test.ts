/**
 * Start again right after a crash: the program and its PostgreSQL killed at
 * once (SIGKILL to the whole process group, as a power cut), then
 * `deno task start` at once, ten times in a row. Each start must come up
 * although the dead postmaster's children may still be exiting and its lock
 * file still names it; and what was committed before the first crash is
 * still there after the last.
 */
import assert from "node:assert/strict";
import { freePort } from "../kit/postgres/embedded.ts";
import { Client, signIn } from "./_app.ts";
import {
  killAll,
  type Main,
  postgresProcesses,
  postmasterPid,
  startMain,
  stopWithin,
  waitHealthy,
} from "./_main.ts";

const ROUNDS = 10;

Deno.test("process: ten kill -9 of the whole group, each followed at once by a start that serves", async () => {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "bakery-crash-" }),
  );
  const cluster = `${dir}/pg`;
  const port = await freePort();
  const env = {
    DATA_DIR: dir,
    PORT: String(port),
    DATABASE_URL: "",
    // The web app alone starts a little faster; the crash is the same.
    WORKERS: "off",
  };
  let main: Main = startMain(env, { ownGroup: true });
  try {
    await waitHealthy(main, port);
    // A committed write before the first crash: a session and its sandbox.
    const client = new Client(`http://127.0.0.1:${port}/`);
    const { sandboxId } = await signIn(client, "Before the crash");

    for (let round = 1; round <= ROUNDS; round++) {
      const postmaster = await postmasterPid(cluster);
      Deno.kill(-main.child.pid, "SIGKILL");
      const status = await main.child.status;
      assert.equal(status.signal, "SIGKILL");
      await main.stdoutDone;
      main = startMain(env, { ownGroup: true });
      try {
        await waitHealthy(main, port);
      } catch (error) {
        throw new Error(`round ${round}: ${(error as Error).message}`);
      }
      assert.notEqual(await postmasterPid(cluster), postmaster);
      const started = main.lines.find((l) => l.event === "postgres_started");
      assert.equal(started?.fresh, false, `round ${round}`);
    }

    const { status, body } = await client.json("GET", "/api/session");
    assert.equal(status, 200);
    assert.equal(body.sandboxId, sandboxId);

    const stopped = await stopWithin(main, "SIGTERM", 10_000);
    assert.equal(stopped?.code, 0, await main.stderr);
    assert.deepEqual(await postgresProcesses(cluster), []);
  } finally {
    await killAll(main, cluster);
    await Deno.remove(dir, { recursive: true });
  }
});
