// Drives the console's "Security" tab in headless Chromium for tests/console_browser.rs:
//   node console_security_browser.mjs URL TOKEN ARTIFACT_DIR
// Logs in, waits for the tab's count (set whichever tab is open), opens the tab, and records
// what it shows of the last trip, the frozen sessions and the page's whole text
// (console-security.png). Prints one JSON report as its last line.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(new URL("../.ci/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const [url, token, artifacts] = process.argv.slice(2);
const report = { errors: [] };
const WAIT = { timeout: 60000 };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // The test may run as root in a container, where Chromium's own sandbox cannot start.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") report.errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => report.errors.push(`page error: ${e.message}`));
  await page.goto(url);
  await page.fill("#token", token);
  await page.click("#login-form button[type=submit]");
  await page.locator("#tabs").waitFor({ state: "visible", ...WAIT });
  await page.waitForFunction(() => document.getElementById("security-count").textContent !== "", null, WAIT);
  report.count = await page.textContent("#security-count");
  report.approvalsOpen = await page.isVisible("#approvals");
  await page.click("button[data-tab=security]");
  await page.locator("#security-trip").waitFor({ state: "visible", ...WAIT });
  report.honeytokens = await page.textContent("#security-honeytokens");
  report.facts = await page.locator("#security-facts dd").allTextContents();
  report.frozen = await page.locator("#security-frozen li").allTextContents();
  report.error = await page.isVisible("#security-error");
  report.page = await page.content();
  await page.screenshot({ path: path.join(artifacts, "console-security.png"), fullPage: true });
  await context.close();
} catch (e) {
  report.failure = String(e && e.stack ? e.stack : e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
