/**
 * Islands: components rendered to HTML on the server and hydrated in the
 * browser, the model Fresh uses. Three parts live here because they must
 * agree on one marker format:
 *
 * - `createIsland(registry)` gives the server a component that renders an
 *   island and marks it: `<div data-island="name">html</div>` followed by
 *   `<script type="application/json" data-island-props>{props}</script>`.
 * - `hydrateIslands(registry)` runs in the browser: it finds the markers and
 *   hydrates each one with the component of the same name.
 * - `buildIslands()` bundles the client entry with `deno bundle`, and the
 *   CSS it imports (uPlot's style sheet) into a style sheet beside it.
 *
 * Props cross from server to browser as JSON, so they must be serializable
 * (no functions; dates become strings). Islands do not nest.
 */
import { type ComponentType, Fragment, h, hydrate, type VNode } from "preact";

/** Island components by name; the name is what the markup carries. */
// deno-lint-ignore no-explicit-any
export type IslandRegistry = Record<string, ComponentType<any>>;

/** The props of a component type. */
export type PropsOf<C> = C extends ComponentType<infer P> ? P : never;

/** The attribute on the element that wraps an island's server HTML. */
export const ISLAND_ATTR = "data-island";
/** The attribute on the JSON script that follows the wrapper. */
export const PROPS_ATTR = "data-island-props";

// Characters that could end the script element (`</script>`), open an HTML
// comment (`<!--`, which changes how the parser looks for the end tag), or
// end a line in older JavaScript parsers (U+2028, U+2029). JSON lets each be
// written as a \u escape, and JSON.parse turns them back.
const UNSAFE_IN_SCRIPT = /[<>&\u2028\u2029]/g;

/**
 * Serializes props as JSON that is safe inside `<script>`: every `<`, `>`,
 * `&`, U+2028 and U+2029 is written as a `\u` escape, so the text can never
 * close the element, and `JSON.parse` returns the original value.
 *
 * @example
 * ```ts
 * serializeProps({ text: "</script>" }); // {"text":"\u003c/script\u003e"}
 * ```
 */
export function serializeProps(props: unknown): string {
  return JSON.stringify(props ?? {}).replace(
    UNSAFE_IN_SCRIPT,
    (ch) => "\\u" + ch.charCodeAt(0).toString(16).padStart(4, "0"),
  );
}

/**
 * Returns the server-side `Island` component for a registry. The name must be
 * a key of the registry and the props must fit that component; the compiler
 * checks both.
 *
 * @example
 * ```tsx
 * const Island = createIsland({ counter: Counter });
 * const page = <Island name="counter" props={{ start: 3 }} />;
 * ```
 */
export function createIsland<R extends IslandRegistry>(registry: R) {
  return function Island<K extends keyof R & string>(
    { name, props }: { name: K; props: PropsOf<R[K]> },
  ): VNode {
    // The script is a sibling after the wrapper, not inside it, so that
    // hydrate() sees exactly the children the component rendered.
    return h(
      Fragment,
      null,
      h("div", { [ISLAND_ATTR]: name }, h(registry[name], props)),
      h("script", {
        type: "application/json",
        [PROPS_ATTR]: "",
        dangerouslySetInnerHTML: { __html: serializeProps(props) },
      }),
    );
  };
}

/**
 * Browser side: hydrates every marked island under `root` with the component
 * of its name. An unknown name is reported and skipped, so one stale page
 * does not stop the other islands. Returns how many were hydrated.
 *
 * @example
 * ```ts
 * hydrateIslands({ counter: Counter });
 * ```
 */
export function hydrateIslands(
  registry: IslandRegistry,
  root: ParentNode = document,
): number {
  let count = 0;
  for (const el of root.querySelectorAll<HTMLElement>(`[${ISLAND_ATTR}]`)) {
    const name = el.getAttribute(ISLAND_ATTR) ?? "";
    const component = registry[name];
    if (!component) {
      console.error(`island "${name}" is not in the registry`);
      continue;
    }
    const script = el.nextElementSibling;
    const props = script?.hasAttribute(PROPS_ATTR)
      ? JSON.parse(script.textContent ?? "{}")
      : {};
    hydrate(h(component, props), el);
    count++;
  }
  return count;
}

/** Where `buildIslands` reads and writes; relative paths are under `root`. */
export interface BuildIslandsOptions {
  /** The project directory; defaults to the one that holds `lib/`. */
  root?: URL;
  /** The client entry; defaults to `islands/_client.ts`. */
  entry?: string;
  /** The bundle; defaults to `static/islands.js`. */
  outFile?: string;
  /** Minify the bundle; defaults to true. */
  minify?: boolean;
}

/** What a build produced. */
export interface IslandsBuild {
  outFile: string;
  bytes: number;
  /** The first 12 hex digits of the bundle's SHA-256; changes with it. */
  version: string;
  /**
   * The style sheet beside the bundle (`static/islands.css`), written when
   * the client entry imports CSS; `deno bundle` gathers it from the
   * packages (uPlot's `uPlot.min.css`), so no one copies it by hand.
   */
  cssFile?: string;
  /** The first 12 hex digits of the style sheet's SHA-256. */
  cssVersion?: string;
  millis: number;
}

/** `deno bundle` failed; `message` carries what it printed. */
export class IslandsBuildError extends Error {
  override name = "IslandsBuildError";
}

let lastBuild: IslandsBuild | undefined;

/**
 * Bundles the client entry and everything it imports into one minified ES
 * module for the browser, with the `deno bundle` of the running Deno. It
 * writes a temporary file and renames it into place, so a server that is
 * already running never serves half a bundle. Call it once at start-up.
 *
 * @example
 * ```ts
 * const build = await buildIslands();
 * log.info("islands_built", { bytes: build.bytes });
 * ```
 */
export async function buildIslands(
  options: BuildIslandsOptions = {},
): Promise<IslandsBuild> {
  const root = options.root ?? new URL("../../", import.meta.url);
  const entry = options.entry ?? "islands/_client.ts";
  const outFile = options.outFile ?? "static/islands.js";
  const started = performance.now();
  // Ends in .js so that the CSS that deno bundle writes beside it has a
  // name known in advance: the same with .css.
  const tmp = `${outFile}.${Deno.pid}.${
    crypto.randomUUID().slice(0, 8)
  }.tmp.js`;
  const cssTmp = withCssExtension(tmp);
  const cssFile = withCssExtension(outFile);
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform=browser",
      "--format=esm",
      ...(options.minify === false ? [] : ["--minify"]),
      `--output=${tmp}`,
      entry,
    ],
    cwd: root,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const tmpUrl = new URL(tmp, root);
  const cssTmpUrl = new URL(cssTmp, root);
  if (!output.success) {
    await Deno.remove(tmpUrl).catch(() => {});
    await Deno.remove(cssTmpUrl).catch(() => {});
    const said = new TextDecoder().decode(output.stderr).trim();
    throw new IslandsBuildError(
      `deno bundle ${entry} exited with ${output.code}: ${said}`,
    );
  }
  const code = await Deno.readFile(tmpUrl);
  const css = await Deno.readFile(cssTmpUrl).catch(() => undefined);
  // The style sheet first: a page that loads the new bundle finds its CSS.
  if (css) await Deno.rename(cssTmpUrl, new URL(cssFile, root));
  await Deno.rename(tmpUrl, new URL(outFile, root));
  lastBuild = {
    outFile,
    bytes: code.byteLength,
    version: await shortHash(code),
    ...(css ? { cssFile, cssVersion: await shortHash(css) } : {}),
    millis: Math.round(performance.now() - started),
  };
  return lastBuild;
}

/** `static/islands.js` -> `static/islands.css`, as esbuild names it. */
function withCssExtension(path: string): string {
  return path.replace(/\.[^./]*$/, "") + ".css";
}

/** The first 12 hex digits of the SHA-256 of `bytes`. */
async function shortHash(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest.slice(0, 6))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The URL of the bundle for a `<script type="module">` tag, with the last
 * build's version as a query, so a browser may cache it for good and still
 * gets the new one after a rebuild.
 */
export function islandsScriptSrc(base = "/static/islands.js"): string {
  return lastBuild ? `${base}?v=${lastBuild.version}` : base;
}

/**
 * The URL of the islands' style sheet (the CSS their packages bring, as
 * uPlot's), versioned as `islandsScriptSrc` is; undefined when the last
 * build wrote none. Pages link it before style.css, which may then adjust
 * it.
 */
export function islandsStyleHref(
  base = "/static/islands.css",
): string | undefined {
  if (!lastBuild) return base;
  return lastBuild.cssVersion ? `${base}?v=${lastBuild.cssVersion}` : undefined;
}
