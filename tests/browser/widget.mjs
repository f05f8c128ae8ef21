// Talks to an agent through the demo page in headless Chromium, as a developer would: pastes
// the key, loads the agents, presses "Start talking" and speaks through Chromium's fake
// microphone (a WAV file). Passes when the page shows the caller's words (within a word error
// rate of what the recording says), the agent's reply played, and that typing over an answer
// cuts its audio at once. Run by tests/widget.rs:
//
//   SWITCHBOARD_TEST_KEY=sb_live_… node tests/browser/widget.mjs <demo URL> <agent id>
//       <microphone WAV> <what it says> <largest word error rate> [artifacts dir]
//
// Environment: SWITCHBOARD_TEST_NODE_MODULES (where playwright-core is installed; default:
// scripts/browser-deps' cache, then tests/browser/node_modules), SWITCHBOARD_TEST_CHROMIUM
// (default /usr/bin/chromium). Prints one JSON line starting with "RESULT " on success;
// exits non-zero with the reason otherwise. The whole run is bounded by 90 s.

import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const OVERALL_MS = 90_000;

const [demoUrl, agentId, wavPath, phrase, maxWerArg, artifacts] = process.argv.slice(2);
const key = process.env.SWITCHBOARD_TEST_KEY ?? '';
const maxWer = Number(maxWerArg);
if (!demoUrl || !agentId || !wavPath || !phrase || !(maxWer >= 0) || key === '') {
  console.error('usage: SWITCHBOARD_TEST_KEY=… node widget.mjs <demo URL> <agent id> <wav> <phrase> <max WER> [artifacts dir]');
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

/** Lower case, letters and spaces only: punctuation and case are the recogniser's choice. */
const normalise = (text) => text.toLowerCase().replace(/[^a-z' ]+/g, ' ').replace(/\s+/g, ' ').trim();

// Word error rate of `hypothesis` against `reference` (both normalised): word substitutions,
// deletions and insertions over the reference's words.
function wordErrorRate(reference, hypothesis) {
  const r = reference.split(' ').filter(Boolean);
  const h = hypothesis.split(' ').filter(Boolean);
  let previous = Array.from({ length: h.length + 1 }, (_, j) => j);
  for (let i = 1; i <= r.length; i++) {
    const current = [i];
    for (let j = 1; j <= h.length; j++) {
      const substitution = previous[j - 1] + (r[i - 1] === h[j - 1] ? 0 : 1);
      current.push(Math.min(substitution, previous[j] + 1, current[j - 1] + 1));
    }
    previous = current;
  }
  return previous[h.length] / Math.max(r.length, 1);
}

const executablePath = process.env.SWITCHBOARD_TEST_CHROMIUM || '/usr/bin/chromium';
const profile = mkdtempSync(join(tmpdir(), 'switchboard-chromium-'));
let context;
const consoleLines = [];
const requestUrls = [];
const notFound = [];

// Calls `check` every `everyMs` until it answers something other than null; throws after
// `timeoutMs`, naming what it waited for.
async function poll(check, timeoutMs, everyMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

async function cleanup() {
  try {
    await context?.close();
  } catch {
    // The browser may already be gone.
  }
  rmSync(profile, { recursive: true, force: true });
}

const deadline = setTimeout(async () => {
  console.error(`timed out after ${OVERALL_MS / 1000} s`);
  await report().catch(() => {});
  await cleanup();
  process.exit(3);
}, OVERALL_MS);

let page;

/** What the page shows, for a failure's message. */
async function report() {
  if (!page) return;
  const state = await page
    .evaluate(() => {
      const voice = document.getElementById('voice');
      return {
        state: voice.dataset.state,
        status: document.getElementById('setup-status').textContent,
        stats: voice.stats,
        transcript: voice.transcript,
      };
    })
    .catch((error) => ({ error: String(error) }));
  console.error('page:', JSON.stringify(state));
  console.error('console:', consoleLines.slice(-30).join('\n'));
  if (artifacts) await page.screenshot({ path: join(artifacts, 'widget-failure.png'), fullPage: true }).catch(() => {});
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
    // Playwright mutes headless audio by default; the page must really play the agent.
    ignoreDefaultArgs: ['--mute-audio'],
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--use-fake-device-for-media-stream',
      '--use-fake-ui-for-media-stream',
      `--use-file-for-fake-audio-capture=${wavPath}`,
      '--autoplay-policy=user-gesture-required',
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  page.on('console', (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => consoleLines.push(`pageerror: ${error.message}`));
  page.on('request', (request) => requestUrls.push(request.url()));
  page.on('websocket', (socket) => requestUrls.push(socket.url()));
  page.on('response', (response) => {
    if (response.status() === 404) notFound.push(response.url());
  });

  const response = await page.goto(demoUrl, { waitUntil: 'load' });
  if (!response || response.status() !== 200) throw new Error(`the demo page answered ${response?.status()}`);

  // Paste the key, load the agents: the one in the address is picked.
  await page.fill('#key', key);
  await page.click('#load');
  await page.waitForFunction((id) => {
    const select = document.getElementById('agent');
    return !select.disabled && select.value === id;
  }, agentId);

  // Remember the moment playback is cut, and how much of that reply had played by then.
  await page.evaluate(() => {
    const voice = document.getElementById('voice');
    window.clearsSeen = [];
    voice.addEventListener('switchboard:clear', (event) => {
      const entry = voice.transcript.find((e) => e.speaker === 'agent' && e.responseId === String(event.detail.responseId));
      window.clearsSeen.push({
        responseId: event.detail.responseId,
        droppedSamples: event.detail.droppedSamples,
        playedAtClear: entry ? entry.samplesPlayed : null,
      });
    });
  });

  // A real click: the user gesture that lets the page start audio and the microphone.
  await page.locator('switchboard-voice button.call').click();
  await page.waitForFunction(() => document.getElementById('voice').dataset.state === 'listening', null, {
    timeout: 20_000,
  });

  // The caller's words on screen (the recogniser may split them at the speaker's pauses into
  // several turns: the caller's side, in order), then an answer to them that is playing.
  // The word error rate is taken here, in Node: the page's content security policy keeps
  // code it did not load from running in it.
  const wanted = normalise(phrase);
  const found = await poll(
    async () => {
      const { entries, rows } = await page.evaluate(() => {
        const voice = document.getElementById('voice');
        return {
          entries: voice.transcript.map((e) => ({ ...e })),
          rows: [...voice.shadowRoot.querySelectorAll('.turn.user .text')].map((n) => n.textContent),
        };
      });
      let said = '';
      let heardAt = -1;
      entries.forEach((e, i) => {
        if (e.speaker !== 'user' || !e.final || heardAt >= 0) return;
        said = `${said} ${normalise(e.text)}`;
        if (wordErrorRate(wanted, normalise(said)) <= maxWer) heardAt = i;
      });
      if (heardAt < 0) return null;
      const reply = entries.slice(heardAt + 1).find((e) => e.speaker === 'agent' && e.text.trim() !== '' && e.samplesPlayed > 0);
      if (!reply) return null;
      return { caller: said.trim(), reply, rows };
    },
    70_000,
    50,
    'the caller\'s words and a reply to them',
  );
  if (wordErrorRate(wanted, normalise(found.rows.join(' '))) > maxWer) {
    throw new Error(`the transcript is not on screen: ${JSON.stringify(found.rows)}`);
  }

  // Ask for a long answer by typing, then type over it while it plays: the server interrupts
  // it with audio.clear, and the page must stop playing it at once and mark it interrupted.
  const typed = page.locator('switchboard-voice .typed input');
  await typed.fill('Please tell me a long story about a lighthouse keeper and the sea.');
  await typed.press('Enter');
  const playingHandle = await page.waitForFunction(
    () => {
      const entries = document.getElementById('voice').transcript;
      const asked = entries.findIndex((e) => e.speaker === 'user' && e.text.startsWith('Please tell me a long story'));
      if (asked < 0) return null;
      const answer = entries.slice(asked + 1).find((e) => e.speaker === 'agent' && !e.final && e.samplesPlayed > 0);
      return answer ? answer.responseId : null;
    },
    null,
    { timeout: 30_000, polling: 20 },
  );
  const playingId = await playingHandle.jsonValue();
  await typed.fill('Sorry to interrupt. When are you open?');
  await typed.press('Enter');
  await page.waitForFunction((id) => window.clearsSeen.some((c) => String(c.responseId) === id), playingId, {
    timeout: 15_000,
  });
  // The typed turn's own answer plays to its end, and answers to the caller's speech show
  // their latency.
  await page.waitForFunction(
    () => {
      const voice = document.getElementById('voice');
      const entries = voice.transcript;
      const typed = entries.findIndex((e) => e.speaker === 'user' && e.text.startsWith('Sorry to interrupt'));
      const answered = typed >= 0 && entries.slice(typed + 1).some((e) => e.speaker === 'agent' && e.final && e.samplesPlayed > 0);
      const latency = [...voice.shadowRoot.querySelectorAll('.turn.agent .turn-latency')].some((n) => n.textContent !== '');
      return answered && latency;
    },
    null,
    { timeout: 40_000, polling: 100 },
  );

  const snapshot = await page.evaluate(() => {
    const voice = document.getElementById('voice');
    return {
      stats: { ...voice.stats },
      transcript: voice.transcript.map((e) => ({ ...e, metrics: undefined })),
      clears: window.clearsSeen,
      shownPlayed: Number(document.getElementById('played').dataset.samples ?? '0'),
      latencies: [...voice.shadowRoot.querySelectorAll('.turn.agent .turn-latency')].map((n) => n.textContent),
      href: location.href,
    };
  });

  // A cut reply plays nothing more after its clear, and says it was interrupted.
  for (const clear of snapshot.clears) {
    const entry = snapshot.transcript.find((e) => e.responseId === String(clear.responseId));
    if (entry && clear.playedAtClear !== null && entry.samplesPlayed !== clear.playedAtClear) {
      throw new Error(
        `reply ${clear.responseId} kept playing after audio.clear: ${clear.playedAtClear} samples at the clear, ${entry.samplesPlayed} later`,
      );
    }
  }
  const cut = snapshot.transcript.find((e) => e.responseId === String(playingId));
  if (!cut?.interrupted) throw new Error(`the interrupted reply is not marked so: ${JSON.stringify(cut)}`);

  if (artifacts) await page.screenshot({ path: join(artifacts, 'widget.png'), fullPage: true });

  // Hang up: the session's summary arrives and the page says the call ended.
  await page.locator('switchboard-voice button.call').click();
  await page.waitForFunction(() => document.getElementById('voice').dataset.state === 'ended', null, {
    timeout: 10_000,
  });

  // Diagnostics are the `diagnostics` attribute's: an element without it shows no latency.
  const diagnostics = await page.evaluate(() => {
    const plain = document.createElement('switchboard-voice');
    plain.id = 'plain';
    document.querySelector('main').append(plain);
    const turn = { id: 1, speaker: 'agent', text: 'Hello.', final: true, latencyMs: 812 };
    const metrics = { speaker: 'agent', latencyMs: 812, sttMs: 120, llmMs: 400, ttsMs: 200 };
    const shown = () => ({
      rowLatency: plain.shadowRoot.querySelector('.turn-latency').textContent,
      summaryHidden: plain.shadowRoot.querySelector('.latency').hidden,
      summary: plain.shadowRoot.querySelector('.latency').textContent,
    });
    plain.showEntry(turn);
    plain.showLatency(metrics);
    const off = shown();
    plain.setAttribute('diagnostics', '');
    plain.showEntry(turn);
    plain.showLatency(metrics);
    const on = shown();
    plain.remove();
    return { off, on };
  });

  // The launcher: a small button until it is pressed, then the panel; minimise folds it back.
  await page.evaluate(() => {
    const launched = document.createElement('switchboard-voice');
    launched.id = 'launched';
    launched.setAttribute('label', 'Help');
    launched.setAttribute('floating', '');
    launched.setAttribute('launcher', '');
    document.body.append(launched);
  });
  // Until its stylesheet applies the element shows nothing at all; measured once it shows.
  await page.waitForFunction(() => getComputedStyle(document.getElementById('launched')).visibility === 'visible');
  const shownParts = () => page.evaluate(() => {
    const root = document.getElementById('launched').shadowRoot;
    const visible = (el) => getComputedStyle(el).display !== 'none' && el.getBoundingClientRect().width > 0;
    const launcher = root.querySelector('button.launcher');
    return {
      launcher: visible(launcher),
      launcherWidth: Math.round(launcher.getBoundingClientRect().width),
      panel: visible(root.querySelector('.panel')),
      expanded: launcher.getAttribute('aria-expanded'),
      minimised: document.getElementById('launched').hasAttribute('minimised'),
    };
  });
  const launcherClosed = await shownParts();
  if (artifacts) await page.screenshot({ path: join(artifacts, 'widget-launcher.png') });
  await page.locator('#launched button.launcher').click();
  const launcherOpen = await shownParts();
  if (artifacts) await page.screenshot({ path: join(artifacts, 'widget-launcher-open.png') });
  await page.locator('#launched button.minimise').click();
  const launcherFolded = await shownParts();

  // The page's content security policy (style-src 'self', script-src 'self') refused nothing
  // the widget does.
  const refused = consoleLines.filter((line) => line.includes('Content Security Policy'));
  if (refused.length > 0) throw new Error(`the page's policy refused: ${refused.join(' | ')}`);

  // The key never left the page except in the Authorization header.
  const leaks = [...requestUrls, snapshot.href, ...consoleLines].filter((text) => text.includes(key));
  if (leaks.length > 0) throw new Error(`the API key appeared in: ${leaks.join(' | ')}`);

  const cutClear = snapshot.clears.find((c) => String(c.responseId) === String(playingId));
  console.log(
    'RESULT ' +
      JSON.stringify({
        caller: found.caller,
        reply: found.reply.text,
        replySamplesPlayed: found.reply.samplesPlayed,
        cutReply: cut.heard ?? '',
        cutSamplesPlayed: cut.samplesPlayed,
        latenciesShown: snapshot.latencies.filter((t) => t !== ''),
        agentSamplesPlayed: snapshot.stats.agentSamplesPlayed,
        shownPlayed: snapshot.shownPlayed,
        callerFramesSent: snapshot.stats.callerFramesSent,
        marksAnswered: snapshot.stats.marksAnswered,
        underruns: snapshot.stats.underruns,
        clears: snapshot.clears,
        droppedAtClear: cutClear.droppedSamples,
        transcript: snapshot.transcript.map((e) => `${e.speaker}${e.interrupted ? ' (cut)' : ''}: ${e.text}`),
        diagnostics,
        launcher: { closed: launcherClosed, open: launcherOpen, folded: launcherFolded },
        notFound,
        faviconRequests: requestUrls.filter((u) => new URL(u).pathname === '/favicon.ico').length,
        socketUrls: requestUrls.filter((u) => u.startsWith('ws')).map((u) => u.replace(/token=[^&]+/, 'token=…')),
      }),
  );
}

try {
  await main();
  clearTimeout(deadline);
  await cleanup();
  process.exit(0);
} catch (error) {
  clearTimeout(deadline);
  console.error(`FAILED: ${error.message}`);
  await report().catch(() => {});
  await cleanup();
  process.exit(1);
}
