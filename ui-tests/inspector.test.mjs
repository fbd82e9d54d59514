// Browser tests of the session inspector: Debian's chromium, driven by playwright-core, against
// `agentstate serve` on a throwaway SQLite file. Run by `cargo test` (agentstate-server's
// `browser` test) or directly: AGENTSTATE_BIN=target/debug/agentstate node inspector.test.mjs
// With --readme, also writes docs/inspector.png (the book's screenshot of it).
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const binary = process.env.AGENTSTATE_BIN || join(here, "..", "target", "debug", "agentstate");
const browserPath = process.env.AGENTSTATE_CHROMIUM || "/usr/bin/chromium";
const shots = join(here, "screenshots");
mkdirSync(shots, { recursive: true });
const readme = process.argv.includes("--readme");
const HOSTILE = `<script>window.__pwned = 1; alert("x")</script><img src=x onerror="window.__pwned = 2">`;

/** Starts `agentstate serve` on a spare port; resolves to { url, stop }. */
function serve(extraEnv = {}) {
  const dir = mkdtempSync(join(tmpdir(), "agentstate-ui-"));
  const child = spawn(binary, ["serve", "--db", `sqlite://${dir}/ui.db`, "--addr", "127.0.0.1:0"], {
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AGENTSTATE_"))), RUST_LOG: "info", ...extraEnv },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("agentstate serve did not start in 30 s")), 30000);
    let buffered = "";
    child.stderr.on("data", (chunk) => {
      buffered += chunk;
      const found = buffered.match(/addr=(\S+)/);
      if (found) {
        clearTimeout(timer);
        resolve({ url: `http://${found[1]}`, stop: () => child.kill("SIGKILL") });
      }
    });
    child.on("exit", (code) => reject(new Error(`agentstate serve exited with ${code}: ${buffered}`)));
  });
}

async function api(base, method, path, body, token) {
  const headers = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok && response.status !== 404) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response;
}

async function append(base, path, event, token) {
  return api(base, "POST", `${path}/events`, { event }, token);
}

const text = (t, author = "agent", inv = "inv-1", delta = {}) => ({
  author, invocationId: inv, content: { role: author === "user" ? "user" : "model", parts: [{ text: t }] },
  actions: { stateDelta: delta },
});

async function seed(base, token) {
  await api(base, "POST", "/apps/shop/users/ann/sessions", { sessionId: "s1", state: { note: HOSTILE, "user:name": "Ann" } }, token);
  const s1 = "/apps/shop/users/ann/sessions/s1";
  await append(base, s1, text("Hello, I need a hotel " + HOSTILE, "user", "inv-1", { step: 1 }), token);
  await append(base, s1, {
    author: "planner", invocationId: "inv-1",
    content: { role: "model", parts: [{ functionCall: { name: "find_hotel", args: { city: "Lisbon", nights: 3 } } }] },
    actions: { stateDelta: { "user:city": "Lisbon", step: 2 } },
  }, token);
  await append(base, s1, {
    author: "planner", invocationId: "inv-1",
    content: { role: "user", parts: [{ functionResponse: { name: "find_hotel", response: { hotel: "Casa Azul", price: 120 } } }] },
    actions: { stateDelta: { hotel: "Casa Azul", step: 3 } },
  }, token);
  await append(base, s1, { ...text("Booked Casa Azul for 3 nights.", "planner", "inv-2", { step: 4, "app:bookings": 1 }), actions: { stateDelta: { step: 4, "app:bookings": 1 }, transferToAgent: "payments" } }, token);
  await api(base, "POST", "/apps/shop/users/bob/sessions", { sessionId: "b1" }, token);
  await api(base, "POST", "/apps/other/users/ann/sessions", { sessionId: "o1" }, token);
  await api(base, "POST", "/apps/shop/users/ann/sessions", { sessionId: "long" }, token);
  for (let i = 0; i < 1000; i++) {
    await append(base, "/apps/shop/users/ann/sessions/long", text(`message ${i}`, i % 2 ? "agent" : "user", `inv-${Math.floor(i / 4)}`, { i }), token);
  }
}

async function main() {
  const browser = await chromium.launch({
    executablePath: browserPath,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  const failures = [];
  const check = async (name, body) => {
    try {
      await body();
      console.log(`ok - ${name}`);
    } catch (e) {
      failures.push(name);
      console.log(`not ok - ${name}\n  ${String(e.stack || e).split("\n").join("\n  ")}`);
    }
  };

  // Without tokens.
  const open = await serve();
  await seed(open.url);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const dialogs = [];
  page.on("dialog", async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.accept();
  });

  await check("apps → users → sessions → a session", async () => {
    await page.goto(open.url + "/");
    assert.equal(new URL(page.url()).pathname, "/ui");
    await page.getByRole("link", { name: "shop" }).click();
    await page.getByRole("link", { name: "ann", exact: true }).click();
    const rows = page.locator("table.sessions tbody tr");
    assert.equal(await rows.count(), 2);
    assert.match(await rows.first().innerText(), /long\s+\S+\s+1000/, "newest first, with its event count");
    await page.getByRole("link", { name: "s1" }).click();
    await page.locator("li.event").first().waitFor();
    assert.equal(await page.locator("li.event").count(), 4);
  });

  await check("hostile strings render as text", async () => {
    assert.equal(await page.evaluate(() => window.__pwned), undefined, "no script ran");
    assert.ok((await page.locator("section.state").innerText()).includes("<script>window.__pwned"), "the state shows the markup as text");
    assert.ok((await page.locator("li.event").first().innerText()).includes("<img src=x"), "so does an event");
    assert.equal(dialogs.length, 0);
  });

  await check("function calls and responses are collapsed, transfers marked", async () => {
    const call = page.locator("details.call").first();
    assert.ok(!(await call.evaluate((d) => d.open)));
    await call.locator("summary").click();
    assert.match(await call.locator("pre").innerText(), /"city": "Lisbon"/);
    assert.ok(await page.locator(".badge.transfer", { hasText: "payments" }).isVisible());
  });

  await check("selecting an event shows the state as of it, its changes highlighted", async () => {
    await page.locator("li.event a.select").nth(1).click();
    await page.waitForFunction(() => document.querySelector("#state h2")?.textContent.includes("after"));
    await page.waitForFunction(() => document.querySelector("li.event:nth-child(2)")?.classList.contains("selected"));
    const panel = page.locator("section.state");
    await panel.locator("tr.key.set", { hasText: "user:city" }).waitFor();
    assert.ok(await panel.locator("tr.key.changed", { hasText: "step" }).isVisible(), "step changed");
    assert.equal(await panel.locator("tr.key", { hasText: "hotel" }).count(), 0, "not yet set at that event");
    assert.ok(await panel.locator("tr.key", { hasText: "user:city" }).locator(".shared").isVisible(), "user: keys are marked shared");
  });

  await check("the keyboard moves through the timeline", async () => {
    await page.keyboard.press("ArrowDown");
    await page.waitForFunction(() => document.querySelector("li.event:nth-child(3)")?.classList.contains("selected"));
    await page.locator("section.state tr.key.set", { hasText: "hotel" }).waitFor();
    await page.keyboard.press("k");
    await page.waitForFunction(() => document.querySelector("li.event:nth-child(2)")?.classList.contains("selected"));
    await page.locator("section.state tr.key.set", { hasText: "user:city" }).waitFor();
  });

  await check("an event appended through the API appears by itself", async () => {
    await append(open.url, "/apps/shop/users/ann/sessions/s1", text("Anything else?", "planner", "inv-3", { step: 5 }));
    await page.locator("li.event", { hasText: "Anything else?" }).waitFor({ timeout: 10000 });
    assert.equal(await page.locator("li.event").count(), 5);
    assert.match(await page.locator(".count").innerText(), /5 events/);
  });

  await check("the page is readable at 1280×800 and on a phone", async () => {
    await page.keyboard.press("End");
    await page.screenshot({ path: join(shots, "session-1280.png") });
    if (readme) await page.screenshot({ path: join(here, "..", "docs", "inspector.png") });
    await page.setViewportSize({ width: 390, height: 844 });
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 400, `no horizontal scrolling on a phone (${width}px)`);
    await page.screenshot({ path: join(shots, "session-phone.png"), fullPage: false });
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await check("a 1,000-event session opens on its newest page", async () => {
    const started = Date.now();
    await page.goto(open.url + "/ui/apps/shop/users/ann/sessions/long");
    const loaded = Date.now() - started;
    assert.equal(await page.locator("li.event").count(), 100);
    assert.ok((await page.locator("li.event").last().innerText()).includes("message 999"));
    await page.getByRole("link", { name: "‹ previous" }).click();
    assert.ok((await page.locator("li.event").last().innerText()).includes("message 899"));
    console.log(`  (newest page of 1,000 events loaded in ${loaded} ms)`);
  });

  await check("a summary shows what it covers, and covered events say so", async () => {
    const path = "/apps/shop/users/ann/sessions/summarised";
    await api(open.url, "POST", "/apps/shop/users/ann/sessions", { sessionId: "summarised" });
    const t0 = 1800000000;
    for (const [i, words] of ["Plan a trip", "Lisbon it is", "And the hotel?"].entries()) {
      await append(open.url, path, { ...text(words, i % 2 ? "agent" : "user", `inv-${i}`), timestamp: t0 + i });
    }
    await append(open.url, path, {
      author: "agent", invocationId: "summary-1", timestamp: t0 + 3,
      actions: { compaction: { startTimestamp: t0, endTimestamp: t0 + 1, compactedContent: { role: "model", parts: [{ text: "They chose Lisbon." }] } } },
    });
    await page.goto(open.url + "/ui" + path);
    const rows = page.locator("li.event");
    assert.equal(await rows.count(), 4);
    assert.match(await rows.nth(3).locator(".badge.summary").innerText(), /summary of .*: #1–#2/);
    assert.ok((await rows.nth(3).innerText()).includes("They chose Lisbon."), "the summary's text is shown");
    for (const i of [0, 1]) {
      assert.ok(await rows.nth(i).evaluate((li) => li.classList.contains("covered")));
      assert.match(await rows.nth(i).locator(".badge.covered").innerText(), /covered by #4/);
    }
    assert.equal(await rows.nth(2).locator(".badge.covered").count(), 0, "the third event is not covered");
  });

  await check("delete asks, then deletes", async () => {
    await page.goto(open.url + "/ui/apps/shop/users/bob/sessions/b1");
    dialogs.length = 0;
    await page.getByRole("button", { name: "Delete session" }).click();
    await page.waitForURL(/\/ui\/apps\/shop\/users\/bob$/);
    assert.equal(dialogs.length, 1);
    assert.match(dialogs[0], /Delete session b1/);
    const gone = await fetch(open.url + "/apps/shop/users/bob/sessions/b1");
    assert.equal(gone.status, 404);
  });
  await context.close();
  open.stop();

  // With tokens.
  const tokens = JSON.stringify({ tokens: [
    { token: "admin-token-0123456789", apps: "*" },
    { token: "narrow-token-0123456789", apps: ["shop"], users: ["ann"] },
  ] });
  const closed = await serve({ AGENTSTATE_TOKENS: tokens });
  await api(closed.url, "POST", "/apps/shop/users/ann/sessions", { sessionId: "s1" }, "admin-token-0123456789");
  await api(closed.url, "POST", "/apps/shop/users/bob/sessions", { sessionId: "b1" }, "admin-token-0123456789");
  await api(closed.url, "POST", "/apps/other/users/ann/sessions", { sessionId: "o1" }, "admin-token-0123456789");
  const signed = await browser.newContext();
  const page2 = await signed.newPage();
  await check("with tokens: a wrong token is refused, a narrow one sees only its app and user", async () => {
    await page2.goto(closed.url + "/ui");
    assert.match(page2.url(), /\/ui\/login/);
    await page2.fill("input[name=token]", "wrong-token-0123456789");
    await page2.getByRole("button", { name: "Sign in" }).click();
    assert.ok(await page2.getByText("not one of this server's").isVisible());
    await page2.fill("input[name=token]", "narrow-token-0123456789");
    await page2.getByRole("button", { name: "Sign in" }).click();
    await page2.waitForURL(/\/ui$/);
    assert.equal(await page2.getByRole("link", { name: "shop" }).count(), 1);
    assert.equal(await page2.getByRole("link", { name: "other" }).count(), 0);
    await page2.getByRole("link", { name: "shop" }).click();
    assert.equal(await page2.getByRole("link", { name: "bob" }).count(), 0);
    const denied = await page2.goto(closed.url + "/ui/apps/other");
    assert.equal(denied.status(), 403);
  });
  await signed.close();
  closed.stop();
  await browser.close();

  console.log(failures.length ? `\n${failures.length} failed: ${failures.join("; ")}` : "\nall passed");
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
