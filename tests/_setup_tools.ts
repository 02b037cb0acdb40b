/**
 * The machine's programs that some tests need, set up by `deno task test`
 * before it runs them, so that the README's one command works on a bare
 * Debian machine as it does in CI. A tool missing from PATH is installed
 * with apt-get when that can be done (root, apt-get present, TEST_INSTALL
 * not `off`); where it cannot, the tests that need it find it missing and
 * are registered as ignored, with the reason printed as `skipped: ...`.
 *
 * Each tool is looked up on PATH, as a shell's `command -v` does, so a run
 * with a narrower PATH sees what a user without that folder would see.
 */

/** A program some tests need, and the Debian package that has it. */
export interface Tool {
  /** The program's name on PATH. */
  binary: string;
  /** The Debian package that installs it. */
  apt: string;
}

/** What the tests need beyond Deno and npm. */
export const TOOLS: readonly Tool[] = [
  // tests/e2e drive it through playwright-core (tests/e2e/_browser.ts).
  { binary: "chromium", apt: "chromium" },
  // Checks ops/prometheus/alerts.yml and /metrics (console_watch_test.ts).
  { binary: "promtool", apt: "prometheus" },
  // For the tests that kill or restart the broker (tests/_nats_server.ts).
  { binary: "nats-server", apt: "nats-server" },
];

/**
 * Where `name` is on `path` (PATH by default), as `command -v` finds it: the
 * first executable file of that name; null when there is none.
 */
export function findOnPath(
  name: string,
  path = Deno.env.get("PATH") ?? "",
): string | null {
  for (const dir of path.split(":")) {
    if (!dir) continue;
    try {
      const file = `${dir}/${name}`;
      const info = Deno.statSync(file);
      if (info.isFile && ((info.mode ?? 0) & 0o111) !== 0) return file;
    } catch {
      // Not in this folder.
    }
  }
  return null;
}

/** Options of `setupTools`. */
export interface SetupOptions {
  /** Whether installing is allowed; TEST_INSTALL=off says no. */
  install?: boolean;
  /** Where the one line per tool goes. */
  print?: (line: string) => void;
  /** Where tools are looked up; PATH by default. */
  path?: string;
}

/**
 * Makes sure every tool of `tools` is on PATH, installing the missing ones
 * with apt-get where it can; prints one line per tool, `test setup: ...`.
 * Never throws: what stays missing is for its tests to skip. Returns where
 * each tool is, null for a missing one.
 */
export async function setupTools(
  tools: readonly Tool[] = TOOLS,
  options: SetupOptions = {},
): Promise<Map<string, string | null>> {
  const print = options.print ?? ((line) => console.log(line));
  const install = options.install ??
    Deno.env.get("TEST_INSTALL")?.toLowerCase() !== "off";
  const lookup = (binary: string) => findOnPath(binary, options.path);
  const found = new Map(tools.map((t) => [t.binary, lookup(t.binary)]));
  const missing = tools.filter((t) => !found.get(t.binary));
  const present = (t: Tool) =>
    print(`test setup: ${t.binary} present at ${found.get(t.binary)}`);
  tools.filter((t) => found.get(t.binary)).forEach(present);
  if (missing.length === 0) return found;

  const apt = findOnPath("apt-get", systemPath());
  const cannot = !install
    ? "installs are off: TEST_INSTALL=off"
    : Deno.uid() !== 0
    ? "not root"
    : !apt
    ? "no apt-get on this machine"
    : null;
  if (cannot || !apt) {
    for (const t of missing) {
      print(
        `test setup: ${t.binary} missing, not installed (${cannot}), ` +
          `its tests are skipped; Debian: apt-get install ${t.apt}`,
      );
    }
    return found;
  }

  for (const t of missing) print(`test setup: installing ${t.binary} (apt)`);
  // A failed update leaves the old package lists, which may still do.
  await aptGet(apt, ["update"]);
  // One install for all of them is one dpkg run; if it fails, each on its
  // own, so that one broken package does not keep the others away.
  const all = await aptGet(apt, installArgs(missing.map((t) => t.apt)));
  const failures = new Map<string, string>();
  if (!all.ok) {
    for (const t of missing) {
      const one = await aptGet(apt, installArgs([t.apt]));
      if (!one.ok) failures.set(t.binary, one.error);
    }
  }
  for (const t of missing) {
    found.set(t.binary, lookup(t.binary));
    if (found.get(t.binary)) present(t);
    else {
      const why = failures.has(t.binary)
        ? `not installed (${failures.get(t.binary)})`
        : `not on PATH even after apt-get install ${t.apt}`;
      print(`test setup: ${t.binary} ${why}; its tests are skipped`);
    }
  }
  return found;
}

/**
 * PATH with the system's folders after the caller's own: dpkg refuses to
 * run without ldconfig and start-stop-daemon, which live in sbin, and a
 * user's PATH often lacks it.
 */
function systemPath(): string {
  return `${Deno.env.get("PATH") ?? ""}:` +
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
}

function installArgs(packages: string[]): string[] {
  return ["install", "-y", "--no-install-recommends", ...packages];
}

/** Runs apt-get quietly; on failure, the last lines it wrote. */
async function aptGet(
  apt: string,
  args: string[],
): Promise<{ ok: true } | { ok: false; error: string }> {
  try {
    const out = await new Deno.Command(apt, {
      // Another apt run on the machine holds the lock for a while; wait for
      // it (5 minutes) instead of failing at once.
      args: ["-q", "-o", "DPkg::Lock::Timeout=300", ...args],
      env: {
        DEBIAN_FRONTEND: "noninteractive",
        PATH: systemPath(),
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (out.success) return { ok: true };
    const text = new TextDecoder().decode(out.stderr).trim() ||
      new TextDecoder().decode(out.stdout).trim();
    const last = text.split("\n").slice(-2).join(" / ");
    return {
      ok: false,
      error: `apt-get ${args.join(" ")} exited ${out.code}: ${last}`,
    };
  } catch (error) {
    return { ok: false, error: `apt-get: ${(error as Error).message}` };
  }
}
