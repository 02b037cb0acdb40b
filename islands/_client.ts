/**
 * The entry of the browser bundle (`static/islands.js`, built by
 * `buildIslands`): hydrates every island on the page, and listens for the
 * copy buttons of ids, which server pages render too.
 */
import { hydrateIslands } from "../kit/http/islands.ts";
import { listenForCopy } from "./_order_code.tsx";
import { islands } from "./_registry.ts";

hydrateIslands(islands);
listenForCopy();
