/**
 * One statement for many callers: calls made while an earlier call's
 * statement is out wait, and go together in the next one (batching as a
 * group commit does it, with no timer: a lone call goes at once, and a busy
 * process sends fewer and larger statements). Each caller gets the results
 * of its own items, or the statement's error.
 *
 * Items are keyed, and one statement never holds a key twice: a caller with
 * a key already waiting goes in the statement after (an upsert may not
 * touch one row twice in a statement).
 */
export interface JoinedOptions<I, O> {
  /** The statement, for every waiting caller's items. */
  run: (items: I[]) => Promise<O[]>;
  itemKey: (item: I) => string;
  /** The key of the item a result belongs to. */
  resultKey: (result: O) => string;
}

/** Items in one statement at most: a larger wait starts the next one. */
const MAX_ITEMS = 500;

interface Caller<O> {
  keys: string[];
  resolve(results: O[]): void;
  reject(error: unknown): void;
}

interface Group<I, O> {
  items: I[];
  keys: Set<string>;
  callers: Caller<O>[];
}

/** A function that runs `options.run` for its callers, joined. */
export function joined<I, O>(
  options: JoinedOptions<I, O>,
): (items: readonly I[]) => Promise<O[]> {
  const waiting: Group<I, O>[] = [];
  /** A statement is out: what comes meanwhile waits for the next. */
  let out = false;

  const settle = (group: Group<I, O>, results: O[]) => {
    const byKey = new Map<string, O[]>();
    for (const result of results) {
      const key = options.resultKey(result);
      const list = byKey.get(key);
      if (list) list.push(result);
      else byKey.set(key, [result]);
    }
    for (const caller of group.callers) {
      caller.resolve(caller.keys.flatMap((key) => byKey.get(key) ?? []));
    }
  };

  const pump = () => {
    const group = out ? undefined : waiting.shift();
    if (group) {
      out = true;
      Promise.resolve()
        .then(() => options.run(group.items))
        .then(
          (results) => settle(group, results),
          (error) => group.callers.forEach((c) => c.reject(error)),
        )
        .finally(() => {
          out = false;
          pump();
        });
    }
  };

  return (items) => {
    if (items.length === 0) return Promise.resolve([]);
    const keys = items.map(options.itemKey);
    return new Promise<O[]>((resolve, reject) => {
      let group = waiting.at(-1);
      if (
        !group || group.items.length + items.length > MAX_ITEMS ||
        keys.some((key) => group!.keys.has(key))
      ) {
        group = { items: [], keys: new Set(), callers: [] };
        waiting.push(group);
      }
      group.items.push(...items);
      for (const key of keys) group.keys.add(key);
      group.callers.push({ keys, resolve, reject });
      pump();
    });
  };
}
