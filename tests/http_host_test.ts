/**
 * Without PUBLIC_URL the site's origin comes from the `Host` header, so a
 * state-changing request is accepted only for a loopback Host (localhost,
 * 127.0.0.0/8, [::1]) or one listed in ALLOWED_HOSTS: a DNS-rebinding page
 * (`Host: evil.example` with `Origin: http://evil.example`) gets a 403 and
 * changes nothing. With PUBLIC_URL the Host is not looked at.
 */
import assert from "node:assert/strict";
import { checkHost, isLoopback } from "../kit/http/csrf.ts";
import { parseConfig } from "../config.ts";
import { countOf, withTestBakery } from "./_app.ts";

interface Raw {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | null;
}

/**
 * One HTTP/1.1 request over a plain connection to `base`, with this `Host`
 * (fetch sends the URL's own host whatever it is told) and an Origin of
 * the same name, as a page served under that name would send.
 */
async function rawRequest(
  base: string,
  host: string,
  method: string,
  path: string,
  json?: unknown,
): Promise<Raw> {
  const url = new URL(base);
  const conn = await Deno.connect({
    hostname: url.hostname,
    port: Number(url.port),
  });
  const body = json === undefined ? "" : JSON.stringify(json);
  const head = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${host}`,
    `Origin: http://${host}`,
    "Connection: close",
    ...(json === undefined
      ? []
      : ["Content-Type: application/json", `Content-Length: ${body.length}`]),
  ].join("\r\n");
  await conn.write(new TextEncoder().encode(`${head}\r\n\r\n${body}`));
  const text = new TextDecoder().decode(
    await new Response(conn.readable).arrayBuffer(),
  );
  const [top, ...rest] = text.split("\r\n\r\n");
  const [statusLine, ...lines] = top.split("\r\n");
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers.append(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  let payload = rest.join("\r\n\r\n");
  if (headers.get("transfer-encoding") === "chunked") {
    let out = "";
    for (let at = 0;;) {
      const end = payload.indexOf("\r\n", at);
      const size = parseInt(payload.slice(at, end), 16);
      if (!size) break;
      out += payload.slice(end + 2, end + 2 + size);
      at = end + 2 + size + 2;
    }
    payload = out;
  }
  return {
    status: Number(statusLine.split(" ")[1]),
    headers,
    body: payload ? JSON.parse(payload) : null,
  };
}

Deno.test("host: loopback names and addresses, nothing else", () => {
  for (const name of ["localhost", "127.0.0.1", "127.8.9.10", "[::1]"]) {
    assert.equal(isLoopback(name), true, name);
  }
  for (
    const name of [
      "evil.example",
      "localhost.evil.example",
      "127.0.0.1.evil.example",
      "128.0.0.1",
      "[::2]",
      "10.0.0.1",
    ]
  ) {
    assert.equal(isLoopback(name), false, name);
  }
  const post = (url: string, more = {}) =>
    checkHost({ method: "POST", url, ...more });
  assert.throws(() => post("http://evil.example/api/session"), /not this site/);
  post("http://bakery.lan:8000/x", { allowedHosts: ["bakery.lan"] });
  post("http://evil.example/x", { siteOrigin: "https://bakery.example" });
  checkHost({ method: "GET", url: "http://evil.example/" });
});

Deno.test("host: ALLOWED_HOSTS is a list of names or addresses, kept as a URL writes them", () => {
  assert.deepEqual(parseConfig({}).ALLOWED_HOSTS, []);
  assert.deepEqual(
    parseConfig({ ALLOWED_HOSTS: " Bakery.LAN, 192.168.1.20,[FD00::0:1]" })
      .ALLOWED_HOSTS,
    ["bakery.lan", "192.168.1.20", "[fd00::1]"],
  );
  for (const bad of ["bakery.lan:8000", "a,,b", "http://bakery.lan", "a b"]) {
    assert.throws(
      () => parseConfig({ ALLOWED_HOSTS: bad }),
      /ALLOWED_HOSTS must be a comma-separated list of host names/,
      bad,
    );
  }
});

Deno.test("host: a foreign Host without PUBLIC_URL is a 403 that writes nothing; loopback is accepted", async () => {
  await withTestBakery(async (t) => {
    const port = new URL(t.url).port;
    const sessions = () =>
      countOf(t.sql<{ n: number }[]>`
        select count(*)::int as n from platform.sessions`);
    const before = await sessions();

    // A rebinding page: its name resolves here, its Origin agrees with Host.
    const foreign = await rawRequest(
      t.url,
      `evil.example:${port}`,
      "POST",
      "/api/session",
      { name: "Rebound" },
    );
    assert.equal(foreign.status, 403, JSON.stringify(foreign.body));
    assert.match(String(foreign.body?.error), /host "evil.example"/);
    assert.equal(foreign.headers.get("set-cookie"), null);
    assert.equal(await sessions(), before, "no session was made");
    // Reading changes nothing and still answers.
    const menu = await rawRequest(t.url, "evil.example", "GET", "/api/menu");
    assert.equal(menu.status, 200);

    for (const host of ["localhost", "127.0.0.2", "[::1]"]) {
      const ok = await rawRequest(
        t.url,
        `${host}:${port}`,
        "POST",
        "/api/session",
        { name: "Local" },
      );
      assert.equal(ok.status, 201, `${host}: ${JSON.stringify(ok.body)}`);
    }
    assert.equal(await sessions(), before + 3);
  });
});

Deno.test("host: a Host in ALLOWED_HOSTS is accepted, another is not", async () => {
  await withTestBakery(async (t) => {
    const port = new URL(t.url).port;
    const allowed = await rawRequest(
      t.url,
      `bakery.lan:${port}`,
      "POST",
      "/api/session",
      { name: "Listed" },
    );
    assert.equal(allowed.status, 201, JSON.stringify(allowed.body));
    const other = await rawRequest(
      t.url,
      `other.lan:${port}`,
      "POST",
      "/api/session",
      { name: "Unlisted" },
    );
    assert.equal(other.status, 403, JSON.stringify(other.body));
  }, { ALLOWED_HOSTS: "bakery.lan,192.168.1.20" });
});

Deno.test("host: with PUBLIC_URL the Host is not looked at; the Origin must be PUBLIC_URL's", async () => {
  await withTestBakery(async (t) => {
    const port = new URL(t.url).port;
    const proxied = await rawRequest(
      t.url,
      `internal.name:${port}`,
      "POST",
      "/api/session",
      { name: "Proxied" },
    );
    // Its Origin (http://internal.name:...) is not the site's.
    assert.equal(proxied.status, 403);
    assert.match(String(proxied.body?.error), /cross-site request refused/);
    const client = t.client();
    const { status } = await client.json("POST", "/api/session", {
      name: "Through the proxy",
    });
    assert.equal(status, 201);
  }, { PUBLIC_URL: "http://bakery.test" });
});
