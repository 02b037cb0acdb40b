/**
 * The test task's tool set-up, without installing anything: lookups on
 * PATH as `command -v` does, and the one line per tool it prints when a tool
 * is present or may not be installed.
 */
import assert from "node:assert/strict";
import { findOnPath, setupTools } from "./_setup_tools.ts";

Deno.test("setup tools: findOnPath finds an executable on the PATH given, not a plain file, not elsewhere", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bakery-path-" });
  try {
    await Deno.writeTextFile(`${dir}/tool`, "#!/bin/sh\n", { mode: 0o755 });
    await Deno.writeTextFile(`${dir}/notes`, "", { mode: 0o644 });
    assert.equal(findOnPath("tool", `/nonexistent::${dir}`), `${dir}/tool`);
    assert.equal(findOnPath("notes", dir), null);
    assert.equal(findOnPath("tool", "/nonexistent"), null);
    assert.equal(findOnPath("tool", ""), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("setup tools: a present tool is named with its path; a missing one, with installs off, is left to be skipped", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bakery-path-" });
  try {
    await Deno.writeTextFile(`${dir}/here`, "#!/bin/sh\n", { mode: 0o755 });
    const lines: string[] = [];
    const found = await setupTools([
      { binary: "here", apt: "here-pkg" },
      { binary: "gone", apt: "gone-pkg" },
    ], { install: false, print: (line) => lines.push(line), path: dir });
    assert.deepEqual(lines, [
      `test setup: here present at ${dir}/here`,
      "test setup: gone missing, not installed (installs are off: " +
      "TEST_INSTALL=off), its tests are skipped; Debian: apt-get install gone-pkg",
    ]);
    assert.deepEqual(
      [...found],
      [["here", `${dir}/here`], ["gone", null]],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
