/**
 * What the web app and the workers share in one process: the validated
 * settings, the pool and the logger. Built once in main.ts (or by a test).
 */
import type { Config } from "./config.ts";
import type { Sql } from "./lib/db/connect.ts";
import type { Logger } from "./lib/log/mod.ts";

export interface Deps {
  config: Config;
  sql: Sql;
  log: Logger;
}
