/**
 * The core's tests run on databases that hold the core's schema alone
 * (lib/schema.ts), cloned from a template tests/run.ts migrated once:
 * nothing of the app is there to lean on.
 */
import {
  env,
  type TestDatabase,
  testDatabase as appTestDatabase,
  type TestDatabaseOptions,
  withTestDatabase as withAppTestDatabase,
} from "../_db.ts";

export { adminUrl, emptyDatabase, type TestDatabase } from "../_db.ts";

const core = (options: TestDatabaseOptions = {}): TestDatabaseOptions => ({
  ...options,
  template: env("TEST_CORE_TEMPLATE_DB"),
});

/** A fresh database with the core's schema, for one test or one file. */
export function testDatabase(
  options?: { max?: number },
): Promise<TestDatabase> {
  return appTestDatabase(core(options));
}

/** Runs `fn` with a fresh core database and always drops it after. */
export function withTestDatabase(
  fn: (db: TestDatabase) => Promise<void>,
  options?: { max?: number },
): Promise<void> {
  return withAppTestDatabase(fn, core(options));
}
