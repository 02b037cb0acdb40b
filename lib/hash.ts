import { createHash } from "node:crypto";

/** SHA-256 of a string (UTF-8), as lower-case hex. */
export function sha256Hex(text: string): Promise<string> {
  return Promise.resolve(sha256HexSync(text));
}

/**
 * The same digest, computed at once: node:crypto hashes in the calling
 * thread, where `crypto.subtle.digest` goes through a promise that costs
 * more than hashing a request body (bench/HISTORY.md, "Figures that were in
 * the code's comments").
 */
export function sha256HexSync(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** `bytes` random bytes as lower-case hex. */
export function randomHex(bytes: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}
