/**
 * The entry of the browser bundle (`static/islands.js`, built by
 * `buildIslands`): hydrates every island on the page.
 */
import { hydrateIslands } from "../kit/http/islands.ts";
import { islands } from "./_registry.ts";

hydrateIslands(islands);
