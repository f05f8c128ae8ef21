// The developer portal in headless Chromium, as a developer uses it: opens a page and is sent
// to sign-in, enters the phone number, reads the code from the SMS the Twilio stand-in received
// (through Twilio's list-messages API), signs in, creates an API key (shown once), opens a
// session's timeline and takes a screenshot. Run by tests/portal.rs:
//
//   node tests/browser/portal.mjs <server base URL> <phone> <session id> <screenshot path>
//
// Environment: SWITCHBOARD_TEST_TWILIO_URL, _SID, _TOKEN (the stand-in and its account);
// SWITCHBOARD_TEST_NODE_MODULES (where playwright-core is installed), SWITCHBOARD_TEST_CHROMIUM
// (default /usr/bin/chromium). Prints one JSON line starting with "RESULT " on success; exits
// non-zero with the reason otherwise. The whole run is bounded by 90 s.

import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const OVERALL_MS = 90_000;

const [base, phone, sessionId, screenshotPath] = process.argv.slice(2);
const twilioUrl = process.env.SWITCHBOARD_TEST_TWILIO_URL ?? '';
const twilioSid = process.env.SWITCHBOARD_TEST_TWILIO_SID ?? '';
const twilioToken = process.env.SWITCHBOARD_TEST_TWILIO_TOKEN ?? '';
if (!base || !phone || !sessionId || !screenshotPath || !twilioUrl) {
  console.error('usage: node portal.mjs <base URL> <phone> <session id> <screenshot path> (with SWITCHBOARD_TEST_TWILIO_*)');
  process.exit(64);
}

function loadPlaywright() {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const candidates = [
    process.env.SWITCHBOARD_TEST_NODE_MODULES,
    join(homedir(), '.cache/switchboard/browser-node/node_modules'),
    join(here, 'node_modules'),
  ].filter(Boolean);
  for (const dir of candidates) {
    if (existsSync(join(dir, 'playwright-core'))) {
      return createRequire(join(dir, 'noop.js'))('playwright-core');
    }
  }
  throw new Error(`playwright-core is not installed (looked in ${candidates.join(', ')}): run scripts/browser-deps`);
}

/** The newest code texted to `to`, from the stand-in's list of sent messages. */
async function codeFor(to, notBefore) {
  const url = `${twilioUrl}/2010-04-01/Accounts/${twilioSid}/Messages.json?To=${encodeURIComponent(to)}`;
  const auth = Buffer.from(`${twilioSid}:${twilioToken}`).toString('base64');
  for (let i = 0; i < 50; i += 1) {
    const response = await fetch(url, { headers: { Authorization: `Basic ${auth}` } });
    if (!response.ok) throw new Error(`the Twilio stand-in answered ${response.status}`);
    const { messages } = await response.json();
    if (messages.length > notBefore) {
      const match = messages[0].body.match(/\b(\d{6})\b/);
      if (match) return match[1];
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no SMS reached ${to}`);
}

async function messageCount(to) {
  const url = `${twilioUrl}/2010-04-01/Accounts/${twilioSid}/Messages.json?To=${encodeURIComponent(to)}`;
  const auth = Buffer.from(`${twilioSid}:${twilioToken}`).toString('base64');
  const response = await fetch(url, { headers: { Authorization: `Basic ${auth}` } });
  return (await response.json()).messages.length;
}

const executablePath = process.env.SWITCHBOARD_TEST_CHROMIUM || '/usr/bin/chromium';
const profile = mkdtempSync(join(tmpdir(), 'switchboard-portal-'));
let context;
let page;
const consoleLines = [];

async function cleanup() {
  try {
    await context?.close();
  } catch {
    // The browser may already be gone.
  }
  rmSync(profile, { recursive: true, force: true });
}

const deadline = setTimeout(async () => {
  console.error(`timed out after ${OVERALL_MS / 1000} s; page ${page?.url()}`);
  console.error(consoleLines.join('\n'));
  await cleanup();
  process.exit(3);
}, OVERALL_MS);

async function main() {
  if (!existsSync(executablePath)) {
    throw new Error(`Chromium not found at ${executablePath}: run scripts/system-deps --test`);
  }
  const { chromium } = loadPlaywright();
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    timeout: 30_000,
    viewport: { width: 1200, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  page.on('console', (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => consoleLines.push(`pageerror: ${error.message}`));

  // Not signed in: the keys page sends the browser to sign-in.
  await page.goto(`${base}/portal/keys`, { waitUntil: 'load' });
  const redirectedTo = new URL(page.url()).pathname;

  const before = await messageCount(phone);
  await page.fill('#phone', phone);
  await page.click('#send-code');
  await page.waitForSelector('#code-form:not([hidden])');
  const code = await codeFor(phone, before);
  await page.fill('#code', code);
  await Promise.all([page.waitForURL(`${base}/portal/keys`), page.click('#verify-code')]);
  await page.waitForSelector('#view[data-ready="true"]');
  const who = await page.textContent('#who');

  // A new key: the raw key is shown once.
  await page.fill('#key-name', 'browser');
  await page.click('#create-key-button');
  await page.waitForSelector('#new-key-value');
  const rawKey = (await page.textContent('#new-key-value')).trim();
  await page.waitForSelector('#keys-table tbody tr');
  await page.reload({ waitUntil: 'load' });
  await page.waitForSelector('#view[data-ready="true"]');
  const keyRows = await page.locator('#keys-table tbody tr').count();
  const rawKeyShownAfterReload = (await page.content()).includes(rawKey);

  // The session list leads to the session's timeline.
  await page.goto(`${base}/portal/sessions`, { waitUntil: 'load' });
  await page.waitForSelector('#view[data-ready="true"]');
  await Promise.all([
    page.waitForURL(`${base}/portal/sessions/${sessionId}`),
    page.click(`tr[data-session-id="${sessionId}"] a.open-session`),
  ]);
  await page.waitForSelector('#view[data-ready="true"]');
  await page.waitForSelector('svg#timeline g.turn-row');
  const timeline = await page.evaluate(() => {
    const svg = document.getElementById('timeline');
    const count = (selector) => svg.querySelectorAll(selector).length;
    return {
      rows: count('g.turn-row'),
      stt: count('rect.bar-stt'),
      llm: count('rect.bar-llm'),
      tts: count('rect.bar-tts'),
      interruptions: count('.marker-interruption'),
      barWidths: [...svg.querySelectorAll('rect.bar')].map((bar) => bar.getBBox().width),
      label: svg.getAttribute('aria-label'),
    };
  });
  const turnRows = await page.locator('#turns-table tbody tr').count();
  const rootCause = (await page.textContent('#root-cause')).trim();
  await page.waitForSelector('audio#recording');
  const recordingSrc = await page.getAttribute('audio#recording', 'src');
  const recordingDuration = await page.evaluate(() => new Promise((resolve) => {
    const audio = document.getElementById('recording');
    if (audio.readyState >= 1) resolve(audio.duration);
    audio.addEventListener('loadedmetadata', () => resolve(audio.duration));
    audio.addEventListener('error', () => resolve(-1));
    audio.load();
  }));
  await page.screenshot({ path: screenshotPath, fullPage: true });

  const developer = (who.split('·')[1] ?? '').trim();
  return {
    redirectedTo,
    developer,
    rawKey,
    keyRows,
    rawKeyShownAfterReload,
    timeline,
    turnRows,
    rootCause,
    recordingSrc,
    recordingDuration,
  };
}

try {
  const result = await main();
  console.log(`RESULT ${JSON.stringify(result)}`);
  clearTimeout(deadline);
  await cleanup();
} catch (err) {
  console.error(`failed: ${err.stack ?? err}`);
  console.error(`page: ${page?.url()}`);
  console.error(consoleLines.join('\n'));
  clearTimeout(deadline);
  await cleanup();
  process.exit(1);
}
