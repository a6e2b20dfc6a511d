// Drives the console's "MCP tools" tab in headless Chromium for tests/console_browser.rs:
//   node console_mcp_browser.mjs URL ADMIN_TOKEN READ_TOKEN ARTIFACT_DIR
// 1. Logs in with READ_TOKEN (no `admin` scope), opens the tab, records the quarantined
//    tool's card (its diff, its button; console-mcp-quarantined.png), clicks Accept and records what the refusal leaves:
//    the API's error and no button.
// 2. Logs in with ADMIN_TOKEN, clicks Accept and waits until nothing is quarantined; records
//    the tool's row among the others (console-mcp.png).
// Prints one JSON report as its last line. Console and page errors are reported, but for the
// 403s a token without a scope is expected to get.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(new URL("../.ci/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const [url, adminToken, readToken, artifacts] = process.argv.slice(2);
const report = { errors: [] };
const WAIT = { timeout: 60000 };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // The test may run as root in a container, where Chromium's own sandbox cannot start.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});

async function openTab(label, secret) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().includes("403")) report.errors.push(`${label}: console: ${m.text()}`);
  });
  page.on("pageerror", (e) => report.errors.push(`${label}: page error: ${e.message}`));
  await page.goto(url);
  await page.fill("#token", secret);
  await page.click("#login-form button[type=submit]");
  await page.locator("#tabs").waitFor({ state: "visible", ...WAIT });
  await page.click("button[data-tab=mcp]");
  await page.locator("#mcp-quarantined li").first().waitFor({ state: "visible", ...WAIT });
  return { context, page };
}

const card = (page) => page.locator("#mcp-quarantined li").first();

try {
  const reader = await openTab("read", readToken);
  report.read = {
    cards: await reader.page.locator("#mcp-quarantined li").count(),
    tool: await card(reader.page).locator(".tool").textContent(),
    diff: await card(reader.page).locator("pre.diff").textContent(),
    added: await card(reader.page).locator("pre.diff span.add").allTextContents(),
    count: await reader.page.textContent("#mcp-count"),
    buttons: await card(reader.page).locator("button").allTextContents(),
  };
  await reader.page.screenshot({ path: path.join(artifacts, "console-mcp-quarantined.png"), fullPage: true });
  await card(reader.page).locator("button.allow").click();
  await reader.page.locator("#mcp-error").waitFor({ state: "visible", ...WAIT });
  await reader.page.locator("#mcp-quarantined li").first().waitFor({ state: "visible", ...WAIT });
  report.refused = {
    error: await reader.page.textContent("#mcp-error"),
    cards: await reader.page.locator("#mcp-quarantined li").count(),
    buttons: await reader.page.locator("#mcp-quarantined button").count(),
  };
  await reader.context.close();

  const admin = await openTab("admin", adminToken);
  await card(admin.page).locator("button.allow").click();
  await admin.page.locator("#mcp-none").waitFor({ state: "visible", ...WAIT });
  const rows = await admin.page.locator("#mcp-rows tr").allTextContents();
  report.accepted = {
    cards: await admin.page.locator("#mcp-quarantined li").count(),
    count: await admin.page.textContent("#mcp-count"),
    error: await admin.page.isVisible("#mcp-error"),
    row: rows.find((r) => r.includes("lookup")) || null,
  };
  await admin.page.screenshot({ path: path.join(artifacts, "console-mcp.png"), fullPage: true });
  await admin.context.close();
} catch (e) {
  report.failure = String(e && e.stack ? e.stack : e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
