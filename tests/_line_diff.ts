/**
 * A line diff for test messages: the lines only in `before` marked `-`,
 * those only in `after` marked `+`, with a little context, in hunks headed
 * by their line numbers. A longest common subsequence, which is plenty for
 * files of a few thousand lines.
 */
export function lineDiff(
  before: string,
  after: string,
  options: { context?: number; maxLines?: number } = {},
): string {
  const context = options.context ?? 2;
  const maxLines = options.maxLines ?? 200;
  const a = before.split("\n");
  const b = after.split("\n");
  // common[i][j]: length of the longest common subsequence of a[i..], b[j..]
  const width = b.length + 1;
  const common = new Int32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i * width + j] = a[i] === b[j]
        ? common[(i + 1) * width + j + 1] + 1
        : Math.max(common[(i + 1) * width + j], common[i * width + j + 1]);
    }
  }
  // Every line, in order: kept (" "), removed ("-") or added ("+"), with
  // its line number in before and in after.
  const ops: { mark: string; text: string; i: number; j: number }[] = [];
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push({ mark: " ", text: a[i], i: i++, j: j++ });
    } else if (
      j === b.length ||
      (i < a.length &&
        common[(i + 1) * width + j] >= common[i * width + j + 1])
    ) {
      ops.push({ mark: "-", text: a[i], i: i++, j });
    } else {
      ops.push({ mark: "+", text: b[j], i, j: j++ });
    }
  }
  const out: string[] = [];
  let shownUpTo = -1;
  for (let k = 0; k < ops.length; k++) {
    if (ops[k].mark === " ") continue;
    const start = Math.max(shownUpTo + 1, k - context);
    if (start > shownUpTo + 1 || out.length === 0) {
      out.push(`@@ line ${ops[start].i + 1} (-), ${ops[start].j + 1} (+)`);
    }
    let end = k;
    // Take in the changes that follow within the context.
    while (end + 1 < ops.length) {
      let next = end + 1;
      while (next < ops.length && ops[next].mark === " ") next++;
      if (next < ops.length && next - end - 1 <= 2 * context) end = next;
      else break;
    }
    const stop = Math.min(ops.length - 1, end + context);
    for (let m = start; m <= stop; m++) {
      out.push(`${ops[m].mark} ${ops[m].text}`);
    }
    shownUpTo = stop;
    k = stop;
    if (out.length > maxLines) {
      return [...out.slice(0, maxLines), "… (more differences)"].join("\n");
    }
  }
  return out.join("\n");
}
