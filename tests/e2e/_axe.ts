/**
 * axe-core in the browser tests: its script put into the page as it is
 * shown, run against WCAG 2.0 and 2.1, levels A and AA, and what it finds
 * said in words a person can act on (the rule, the help, and each element
 * with axe's own summary of what is wrong with it).
 */
import axe from "axe-core";
import type { Page } from "playwright-core";

/** The rule sets checked: WCAG 2.0 and 2.1, levels A and AA. */
export const WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

/** One rule that failed, and where. */
export interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string; summary: string }[];
}

/**
 * Runs axe-core on the page as it is now; returns the violations, none when
 * all is well. The script goes in through the DevTools protocol, which the
 * page's Content-Security-Policy (no inline script) does not govern; a page
 * that navigates away gets it again on the next call.
 */
export async function axeViolations(page: Page): Promise<Violation[]> {
  const present = await page.evaluate(() => "axe" in globalThis);
  if (!present) await page.evaluate(axe.source);
  return await page.evaluate(async (tags) => {
    const engine = (globalThis as unknown as { axe: typeof axe }).axe;
    const result = await engine.run(document, {
      runOnly: { type: "tag", values: tags },
      resultTypes: ["violations"],
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? null,
      help: v.help,
      nodes: v.nodes.map((n) => ({
        target: n.target.join(" "),
        summary: n.failureSummary ?? "",
      })),
    }));
  }, WCAG_TAGS);
}

/** The violations in words, one line per element, for a failure message. */
export function describeViolations(violations: Violation[]): string {
  return violations.map((v) =>
    `${v.id} (${v.impact}): ${v.help}\n` +
    v.nodes.map((n) => `  ${n.target}: ${n.summary.replace(/\s+/g, " ")}`)
      .join("\n")
  ).join("\n");
}
