/**
 * The entry of the browser bundle (`static/islands.js`, built by
 * `buildIslands`): hydrates every island on the page, and listens for the
 * copy buttons of ids, which server pages render too. uPlot's style sheet
 * is imported here, not beside the charts: the server imports the islands
 * and cannot load CSS, while `deno bundle` writes what this file imports
 * to `static/islands.css`.
 */
import "uplot/dist/uPlot.min.css";
import { hydrateIslands } from "../kit/http/islands.ts";
import { listenForCopy } from "./_order_code.tsx";
import { islands } from "./_registry.ts";

hydrateIslands(islands);
listenForCopy();
