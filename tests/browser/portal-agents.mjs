// The portal's account linking and agent editor in headless Chromium, as a developer uses
// them: signs in with a number no account knows (an empty account), is told on the empty keys
// page that an existing account can be linked, is refused a revoked key next to the field,
// links with a live key and lands on that account; then creates an agent on the editor page
// (choosing a knowledge collection), edits it, sees the API's validation error next to the
// field, saves a good edit, and presses "Talk to it": the voice widget connects to that agent
// and its greeting arrives; then archives it. Every page is watched for 404s (a favicon request among them).
// Run by tests/portal.rs:
//
//   node tests/browser/portal-agents.mjs <server base URL> <phone> <screenshot dir>
//
// Environment: SWITCHBOARD_TEST_TWILIO_URL, _SID, _TOKEN (the stand-in and its account);
// SWITCHBOARD_TEST_LINK_KEY (a live key of the account to link), SWITCHBOARD_TEST_REVOKED_KEY;
// SWITCHBOARD_TEST_COLLECTION (a collection id of that account); SWITCHBOARD_TEST_NODE_MODULES,
// SWITCHBOARD_TEST_CHROMIUM (default /usr/bin/chromium). Prints one JSON line starting with
// "RESULT " on success; exits non-zero with the reason otherwise. Bounded by 120 s.

import { createRequire } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const OVERALL_MS = 120_000;
const GREETING = 'Welcome to the front desk test line.';

const [base, phone, shots] = process.argv.slice(2);
const env = process.env;
const twilioUrl = env.SWITCHBOARD_TEST_TWILIO_URL ?? '';
const twilioSid = env.SWITCHBOARD_TEST_TWILIO_SID ?? '';
const twilioToken = env.SWITCHBOARD_TEST_TWILIO_TOKEN ?? '';
const linkKey = env.SWITCHBOARD_TEST_LINK_KEY ?? '';
const revokedKey = env.SWITCHBOARD_TEST_REVOKED_KEY ?? '';
const collection = env.SWITCHBOARD_TEST_COLLECTION ?? '';
if (!base || !phone || !shots || !twilioUrl || !linkKey || !revokedKey || !collection) {
  console.error('usage: node portal-agents.mjs <base URL> <phone> <screenshot dir> (with the SWITCHBOARD_TEST_* variables)');
  process.exit(64);
}
mkdirSync(shots, { recursive: true });

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

const executablePath = env.SWITCHBOARD_TEST_CHROMIUM || '/usr/bin/chromium';
const profile = mkdtempSync(join(tmpdir(), 'switchboard-portal-agents-'));
let context;
let page;
const consoleLines = [];
const notFound = [];
const requested = [];

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

async function ready() {
  await page.waitForSelector('#view[data-ready="true"]');
}

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
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream'],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  page.on('console', (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => consoleLines.push(`pageerror: ${error.message}`));
  page.on('request', (request) => requested.push(new URL(request.url()).pathname));
  page.on('response', (response) => {
    if (response.status() === 404) notFound.push(response.url());
  });

  // Sign in with a number no account knows: an empty account, whose keys page offers linking.
  await page.goto(`${base}/portal/keys`, { waitUntil: 'load' });
  const before = await messageCount(phone);
  await page.fill('#phone', phone);
  await page.click('#send-code');
  await page.waitForSelector('#code-form:not([hidden])');
  const code = await codeFor(phone, before);
  await page.fill('#code', code);
  await Promise.all([page.waitForURL(`${base}/portal/keys`), page.click('#verify-code')]);
  await ready();
  const whoBefore = (await page.textContent('#who')).trim();
  await page.waitForSelector('form#link-account');
  const emptyPageText = (await page.textContent('#view')).replace(/\s+/g, ' ');

  // A revoked key is refused next to the field.
  await page.fill('#link-key', revokedKey);
  await page.click('#link-button');
  await page.waitForFunction(() => document.getElementById('link-key-error').textContent !== '');
  const revokedError = await page.textContent('#link-key-error');
  const revokedInvalid = await page.getAttribute('#link-key', 'aria-invalid');
  await page.screenshot({ path: join(shots, 'link-account.png'), fullPage: true });

  // A live key links the number: the page reloads signed in to that account.
  await page.fill('#link-key', linkKey);
  await Promise.all([page.waitForEvent('load'), page.click('#link-button')]);
  await ready();
  const whoAfter = (await page.textContent('#who')).trim();
  const linkFormAfter = await page.locator('form#link-account').count();

  // A new agent through the editor.
  await page.goto(`${base}/portal/agents`, { waitUntil: 'load' });
  await ready();
  await Promise.all([page.waitForURL(`${base}/portal/agents/new`), page.click('#new-agent')]);
  await ready();
  const collectionOptions = await page.$$eval('#agent-collectionId option', (options) => options.map((o) => o.value));
  const ttsProviders = await page.$$eval('#agent-ttsProvider option', (options) => options.map((o) => o.value));
  const voices = await page.$$eval('#agent-voices option', (options) => options.map((o) => o.value));
  await page.fill('#agent-id', 'front-desk');
  await page.fill('#agent-name', 'Front desk');
  await page.fill('#agent-systemPrompt', 'You answer questions about the front desk briefly.');
  await page.fill('#agent-firstMessage', GREETING);
  await page.fill('#agent-maxTokens', '40');
  await page.selectOption('#agent-collectionId', collection);
  await page.fill('#agent-metadata', JSON.stringify({ note: 'kept', turnTaking: { endpointSilenceMs: 700 } }));
  await page.screenshot({ path: join(shots, 'agent-new.png'), fullPage: true });
  await Promise.all([page.waitForURL(/\/portal\/agents\/front-desk/), page.click('#save-agent')]);
  await ready();
  const created = {
    id: (await page.textContent('#agent-id')).trim(),
    name: await page.inputValue('#agent-name'),
    collection: await page.inputValue('#agent-collectionId'),
  };

  // An edit the API refuses: its error stands next to the field.
  await page.fill('#agent-temperature', '5');
  await page.click('#save-agent');
  await page.waitForFunction(() => document.getElementById('agent-temperature-error').textContent !== '');
  const temperatureError = await page.textContent('#agent-temperature-error');
  const temperatureInvalid = await page.getAttribute('#agent-temperature', 'aria-invalid');
  await page.screenshot({ path: join(shots, 'agent-validation.png'), fullPage: true });

  // A good edit of one field (metadata is not sent, so nothing in it is lost).
  await page.fill('#agent-temperature', '0.3');
  await page.fill('#agent-description', 'Answers the front desk line.');
  await page.click('#save-agent');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Saved'));
  await ready();
  // The editor shows the agent as the save answered it (the stored agent).
  const afterSave = {
    description: await page.inputValue('#agent-description'),
    temperature: await page.inputValue('#agent-temperature'),
    maxTokens: await page.inputValue('#agent-maxTokens'),
    collection: await page.inputValue('#agent-collectionId'),
    metadata: JSON.parse(await page.inputValue('#agent-metadata')),
  };

  // Talk to it: the widget opens on the page and connects to this agent.
  await page.click('#talk');
  await page.waitForFunction(() => document.querySelector('switchboard-voice')?.dataset.state === 'listening', null, {
    timeout: 30_000,
  });
  const greetingHandle = await page.waitForFunction((greeting) => {
    const voice = document.querySelector('switchboard-voice');
    const entry = voice.transcript.find((e) => e.speaker === 'agent' && e.text.includes(greeting.slice(0, 20)));
    return entry ? entry.text : null;
  }, GREETING, { timeout: 30_000 });
  const greeting = await greetingHandle.jsonValue();
  const widgetAgent = await page.getAttribute('switchboard-voice', 'agent-id');
  const socketOrigin = await page.evaluate(() => document.querySelector('switchboard-voice').session?.server?.origin ?? null);
  await page.screenshot({ path: join(shots, 'agent-talk.png'), fullPage: true });
  await page.locator('switchboard-voice button.call').click();
  await page.waitForFunction(() => document.querySelector('switchboard-voice').dataset.state === 'ended', null, {
    timeout: 10_000,
  });

  // Archive: the button asks once more, then the list no longer has the agent.
  const archive = page.locator('button.danger', { hasText: 'Archive' });
  await archive.click();
  await page.waitForFunction(() => [...document.querySelectorAll('button.danger')].some((b) => b.textContent === 'Really archive?'));
  await Promise.all([page.waitForURL(`${base}/portal/agents`), page.locator('button.danger').click()]);
  await ready();
  const listedAfterArchive = await page.locator('tr[data-agent-id="front-desk"]').count();

  return {
    whoBefore,
    emptyPageText,
    revokedError,
    revokedInvalid,
    whoAfter,
    linkFormAfter,
    collectionOptions,
    ttsProviders,
    voiceCount: voices.length,
    created,
    temperatureError,
    temperatureInvalid,
    afterSave,
    listedAfterArchive,
    greeting,
    widgetAgent,
    socketOrigin,
    notFound,
    faviconRequests: requested.filter((p) => p === '/favicon.ico').length,
    keyInRequests: requested.some((p) => p.includes(linkKey)),
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
