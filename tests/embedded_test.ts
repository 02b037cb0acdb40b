/**
 * The embedded cluster against real PostgreSQL binaries: data survives a
 * restart, stop leaves no process behind, a second owner is refused while the
 * first lives, and a postmaster orphaned by a killed owner is stopped and
 * replaced by the next start.
 */
import assert from "node:assert/strict";
import { ClusterBusyError, startEmbedded } from "../kit/postgres/embedded.ts";
import { connect } from "../lib/db/connect.ts";
import { memoryLogger } from "../lib/log/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** A temporary data directory, removed after `fn` with whatever ran in it. */
async function withDataDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "bakery-embedded-" }),
  );
  try {
    await fn(dir);
  } finally {
    await stopEverythingIn(dir);
    await Deno.remove(dir, { recursive: true });
  }
}

/** Live processes whose command line names `dir`, as `pid: args`. */
async function processesIn(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const args = (await Deno.readTextFile(`/proc/${entry.name}/cmdline`))
        .split("\0").join(" ").trim();
      // A zombie has an empty command line; it has stopped running.
      if (args.includes(dir)) found.push(`${entry.name}: ${args}`);
    } catch {
      // The process exited while we looked.
    }
  }
  return found;
}

function running(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The state follows the command name in parentheses; Z is a zombie.
    return !/\) Z /.test(stat);
  } catch {
    return false;
  }
}

async function postmasterPid(dir: string): Promise<number> {
  const text = await Deno.readTextFile(`${dir}/pg/postmaster.pid`);
  return Number(text.split("\n")[0]);
}

/** Waits up to `ms` for `check` to hold, polling every 50 ms. */
async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 20_000,
) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Cleanup after a failed test: no postgres of `dir` may outlive it. */
async function stopEverythingIn(dir: string) {
  for (const line of await processesIn(dir)) {
    const pid = Number(line.split(":")[0]);
    try {
      Deno.kill(pid, "SIGINT");
    } catch {
      continue;
    }
    await waitFor(`pid ${pid} to exit`, () => !running(pid)).catch(() => {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    });
  }
}

async function query<T>(
  url: string,
  fn: (sql: ReturnType<typeof connect>) => Promise<T>,
) {
  const sql = connect(url, { max: 1 });
  try {
    return await fn(sql);
  } finally {
    await sql.end();
  }
}

Deno.test("embedded: data survives a restart; stop leaves nothing running", async () => {
  await withDataDir(async (dir) => {
    const { logger, lines } = memoryLogger();
    const first = await startEmbedded({ dataDir: dir, log: logger });
    try {
      const pid = await postmasterPid(dir);
      assert.ok(running(pid));
      assert.notDeepEqual(await processesIn(dir), []);
      await query(first.url, async (sql) => {
        await sql`create table loaves (name text primary key)`;
        await sql`insert into loaves values ('sourdough')`;
      });
    } finally {
      await first.stop();
    }
    assert.deepEqual(await processesIn(dir), []);
    assert.ok(lines.some((l) => l.event === "postgres_initdb"));

    const second = await startEmbedded({ dataDir: dir, log: logger });
    try {
      const rows = await query(
        second.url,
        (sql) => sql`select name from loaves`,
      );
      assert.deepEqual(rows.map((r) => r.name), ["sourdough"]);
      const started = lines.filter((l) => l.event === "postgres_started");
      assert.deepEqual(started.map((l) => l.fresh), [true, false]);
    } finally {
      await second.stop();
    }
    assert.deepEqual(await processesIn(dir), []);
    // Stopping twice is harmless.
    await second.stop();
  });
});

Deno.test("embedded: a second start on a running directory is refused", async () => {
  await withDataDir(async (dir) => {
    const { logger } = memoryLogger();
    const cluster = await startEmbedded({ dataDir: dir, log: logger });
    try {
      const pid = await postmasterPid(dir);
      await assert.rejects(
        () => startEmbedded({ dataDir: dir, log: logger }),
        (error: unknown) =>
          error instanceof ClusterBusyError &&
          error.message.includes(dir) &&
          error.message.includes(`"pid":${Deno.pid}`),
      );
      // The refusal touched nothing: the first cluster still serves.
      assert.equal(await postmasterPid(dir), pid);
      const [row] = await query(cluster.url, (sql) => sql`select 1 as one`);
      assert.equal(row.one, 1);
    } finally {
      await cluster.stop();
    }
    assert.deepEqual(await processesIn(dir), []);
  });
});

/** Starts the cluster of `dataDir` in a child process that then waits. */
function spawnOwner(dataDir: string) {
  const script = `
    import { startEmbedded } from "./kit/postgres/embedded.ts";
    import { createLogger } from "./lib/log/mod.ts";
    const cluster = await startEmbedded({
      dataDir: Deno.env.get("OWNER_DATA_DIR"),
      log: createLogger("warn", (line) => console.error(line)),
    });
    console.log(JSON.stringify({ url: cluster.url }));
    setInterval(() => {}, 60_000);`;
  return new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    cwd: ROOT,
    env: { OWNER_DATA_DIR: dataDir },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Reads the first line of `stream`, or fails after `ms`. */
async function firstLine(
  reader: ReadableStreamDefaultReader<string>,
  ms: number,
): Promise<string> {
  let text = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("no line in time")), ms);
  });
  try {
    while (!text.includes("\n")) {
      const { value, done } = await Promise.race([reader.read(), timeout]);
      if (done) throw new Error(`stream ended after ${JSON.stringify(text)}`);
      text += value;
    }
  } finally {
    clearTimeout(timer);
  }
  return text.split("\n")[0];
}

Deno.test("embedded: a postmaster orphaned by a killed owner is replaced", async () => {
  await withDataDir(async (dir) => {
    const owner = spawnOwner(dir);
    const stderr = new Response(owner.stderr).text();
    const reader = owner.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    let orphanPid: number;
    try {
      const { url } = JSON.parse(await firstLine(reader, 60_000));
      orphanPid = await postmasterPid(dir);
      owner.kill("SIGKILL");
      const status = await owner.status;
      assert.equal(status.signal, "SIGKILL");
      // The owner is gone; its postmaster is not, and still serves.
      assert.ok(running(orphanPid), "the postmaster outlived its owner");
      const [row] = await query(url, (sql) => sql`select 1 as one`);
      assert.equal(row.one, 1);
    } catch (error) {
      owner.kill("SIGKILL");
      await owner.status;
      throw new Error(`owner failed; its stderr: ${await stderr}`, {
        cause: error,
      });
    } finally {
      while (!(await reader.read()).done) { /* drain */ }
      await stderr;
    }

    const { logger, lines } = memoryLogger();
    const cluster = await startEmbedded({ dataDir: dir, log: logger });
    try {
      assert.ok(!running(orphanPid), "the orphan was stopped");
      const warned = lines.find((l) => l.event === "postgres_orphan_stopped");
      assert.equal(warned?.pid, orphanPid);
      const pid = await postmasterPid(dir);
      assert.notEqual(pid, orphanPid);
      assert.ok(running(pid));
      const [row] = await query(cluster.url, (sql) => sql`select 1 as one`);
      assert.equal(row.one, 1);
    } finally {
      await cluster.stop();
    }
    assert.deepEqual(await processesIn(dir), []);
  });
});

Deno.test("embedded: children left running by a killed postmaster are stopped, and the next start serves", async () => {
  await withDataDir(async (dir) => {
    const owner = spawnOwner(dir);
    const stderr = new Response(owner.stderr).text();
    const reader = owner.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    let backend = 0;
    let client: ReturnType<typeof connect> | undefined;
    try {
      const { url } = JSON.parse(await firstLine(reader, 60_000));
      client = connect(url, { max: 1 });
      const [row] = await client<{ pid: number }[]>`
        select pg_backend_pid() as pid`;
      backend = row.pid;
      // A stopped backend cannot notice that its postmaster died: it stays,
      // attached to the cluster's shared memory, as a slow one would.
      Deno.kill(backend, "SIGSTOP");
      const postmaster = await postmasterPid(dir);
      owner.kill("SIGKILL");
      await owner.status;
      Deno.kill(postmaster, "SIGKILL");
      await waitFor("the postmaster to die", () => !running(postmaster));
      assert.ok(running(backend), "its child still runs");

      const { logger, lines } = memoryLogger();
      const cluster = await startEmbedded({ dataDir: dir, log: logger });
      try {
        assert.ok(!running(backend), "the leftover child was stopped");
        const stopped = lines.find((l) =>
          l.event === "postgres_leftovers_stopped"
        );
        assert.deepEqual(stopped?.pids, [backend]);
        const [one] = await query(cluster.url, (sql) => sql`select 1 as one`);
        assert.equal(one.one, 1);
      } finally {
        await cluster.stop();
      }
      assert.deepEqual(await processesIn(dir), []);
    } finally {
      try {
        owner.kill("SIGKILL");
      } catch {
        // Killed above already.
      }
      await owner.status;
      if (backend && running(backend)) Deno.kill(backend, "SIGKILL");
      await client?.end({ timeout: 0 });
      while (!(await reader.read()).done) { /* drain */ }
      await stderr;
    }
  });
});
