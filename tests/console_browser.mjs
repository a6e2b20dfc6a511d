// Drives the web console in headless Chromium for tests/console_browser.rs:
//   node console_browser.mjs URL TOKEN WRONG_TOKEN EXPECTED_PREVIEW EXPECTED_ANSWER ARTIFACT_DIR
// 1. Logs in with WRONG_TOKEN and records what the page shows (the error, whether the
//    approval list appeared, whether the token was kept).
// 2. Logs in with TOKEN, opens the live view of every session and prints `READY`: the test
//    then starts its chat completion.
// 3. Waits for the pending approval whose preview holds EXPECTED_PREVIEW, clicks Allow and
//    waits for the answer (screenshots console-pending.png and console.png).
// 4. Reads what the live view showed of the turn, the session's stored entries and the audit
//    log's record of the call (console-live.png, console-audit.png).
// Prints one JSON report as its last line; the Rust test asserts on it. Console errors and
// page errors (a Content-Security-Policy violation among them) are reported too.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(new URL("../.ci/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const [url, token, wrongToken, expectedPreview, expectedAnswer, artifacts] = process.argv.slice(2);
const report = { errors: [] };
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, name), fullPage: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // The test may run as root in a container, where Chromium's own sandbox cannot start.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});

function watch(page, label) {
  page.on("console", (m) => {
    // The wrong token's 401s are the point of that login; anything else logged is reported.
    if (m.type() === "error" && !(label === "wrong" && m.text().includes("401"))) {
      report.errors.push(`${label}: console: ${m.text()}`);
    }
  });
  page.on("pageerror", (e) => report.errors.push(`${label}: page error: ${e.message}`));
}

async function login(context, label, secret) {
  const page = await context.newPage();
  watch(page, label);
  await page.goto(url);
  await page.fill("#token", secret);
  await page.click("#login-form button[type=submit]");
  return page;
}

let page = null;
try {
  const wrong = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const bad = await login(wrong, "wrong", wrongToken);
  await bad.locator("#login-error").waitFor({ state: "visible", timeout: 15000 });
  report.wrong = {
    error: await bad.textContent("#login-error"),
    app_visible: await bad.isVisible("#app"),
    cards: await bad.locator("#approval-list li").count(),
    token_kept: await bad.evaluate(() => sessionStorage.length),
  };
  await wrong.close();

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await login(context, "right", token);
  await page.locator("#approvals-empty").waitFor({ state: "visible", timeout: 15000 });
  await page.click("[data-tab=sessions]");
  const doc = await (await fetch(new URL("/openapi.json", url))).json();
  report.live_endpoint = Boolean(doc.paths["/v1/events"]);
  if (report.live_endpoint) {
    await page.locator("#live[data-state=connected]").waitFor({ state: "attached", timeout: 30000 });
  }
  process.stdout.write("READY\n");

  await page.click("[data-tab=approvals]");
  const card = page.locator("#approval-list li.card", { hasText: expectedPreview }).first();
  await card.waitFor({ state: "visible", timeout: 30000 });
  report.pending = {
    tool: await card.locator(".tool").textContent(),
    preview: await card.locator("pre.preview").textContent(),
    buttons: await card.locator("button").allTextContents(),
    count: await page.textContent("#pending-count"),
  };
  await shot(page, "console-pending.png");
  await card.locator("button[data-answer=allow]").click();
  const result = page.locator("#answered-list .result").first();
  await result.waitFor({ state: "visible", timeout: 15000 });
  report.answered = {
    result: await result.textContent(),
    ok: await result.evaluate((n) => n.classList.contains("ok")),
  };
  await shot(page, "console.png");

  await page.click("[data-tab=sessions]");
  if (report.live_endpoint) {
    const live = page.locator("#live .live-session").first();
    await live.locator(".stream", { hasText: expectedAnswer }).waitFor({ timeout: 30000 });
    report.live = {
      calls: await live.locator(".call").allTextContents(),
      approvals: await live.locator(".approval").allTextContents(),
      text: await live.locator(".stream").allTextContents(),
      done: await live.locator(".done").allTextContents(),
    };
    await shot(page, "console-live.png");
  }
  // The call's command and output carry markup; it must stay text.
  report.injected = {
    imgs: await page.locator("img").count(),
    ran: await page.evaluate(() => window.pwned === 1),
  };
  await page.click("#sessions-refresh");
  await page.locator("#session-list [data-session]").first().click();
  await page.locator("#session-entries .entry.tool_result").first().waitFor({ timeout: 15000 });
  report.entries = await page.locator("#session-entries .entry").evaluateAll((nodes) =>
    nodes.map((n) => n.className.replace("entry ", "")),
  );

  await page.click("[data-tab=audit]");
  const row = page.locator("#audit-rows tr", { hasText: "shell" }).first();
  await row.waitFor({ timeout: 15000 });
  report.audit_row = await row.locator("td").allTextContents();
  await shot(page, "console-audit.png");
  await context.close();
} catch (e) {
  report.failure = String(e && e.stack ? e.stack : e);
  // What the page said, for the failure message (an answer refused, an error shown).
  if (page) {
    report.shown = await page.locator(".error:visible, .result:visible").allTextContents().catch(() => []);
    await shot(page, "console-failure.png").catch(() => {});
  }
}
await browser.close();
process.stdout.write(JSON.stringify(report) + "\n");
