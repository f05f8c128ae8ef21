// The signed-in portal: one script rendering the view the path names. Every call goes to
// /portal/api with the session cookie (sent by the browser) and, when it changes something,
// the session's CSRF token. Text from the server is always set as text, never as markup.

import {
  API, all, api, confirmButton, credits, h, ms, s, say, setCsrf, show, table, when,
} from './ui.js';
import { agentEditorView, agentsView } from './agents.js';
import { linkPanel } from './account.js';

let session = null;

// ---- API keys ----

function rawKeyPanel(issued, what) {
  return h('section', { id: 'new-key', class: 'notice', 'aria-live': 'polite' },
    h('h2', {}, `${what}: ${issued.name}`),
    h('p', {}, 'Store this key now. It is shown only once and cannot be retrieved again.'),
    h('p', {}, h('code', { id: 'new-key-value' }, issued.key), ' ',
      h('button', {
        type: 'button',
        onclick: () => navigator.clipboard?.writeText(issued.key).then(() => say('Copied.')),
      }, 'Copy')));
}

async function keysView() {
  const panel = h('div', { id: 'new-key-slot' });
  const name = h('input', { id: 'key-name', name: 'name', maxlength: 100, required: true, value: 'Default' });
  const days = h('input', { id: 'key-expiry', name: 'expiresInDays', type: 'number', min: 1, max: 365, placeholder: 'never' });
  const list = h('div', { id: 'keys' });

  async function refresh() {
    const keys = await all('/keys');
    list.replaceChildren(keys.length === 0 ? h('div', {}, h('p', {}, 'No live keys.'), linkPanel(session)) : table(
      ['Name', 'Prefix', 'Created', 'Expires', 'Last used', ''],
      keys.map((key) => h('tr', { 'data-key-id': key.id },
        h('td', {}, key.name),
        h('td', {}, h('code', {}, `${key.prefix}…`)),
        h('td', {}, when(key.createdAt)),
        h('td', {}, key.expiresAt ? when(key.expiresAt) : 'never'),
        h('td', { class: 'last-used' }, key.lastUsedAt ? when(key.lastUsedAt) : 'never'),
        h('td', {},
          h('button', { type: 'button', class: 'rotate', onclick: () => rotate(key) }, 'Rotate'), ' ',
          confirmButton('Revoke', 'Really revoke?', () => revoke(key))))),
      { id: 'keys-table' }));
  }

  async function rotate(key) {
    try {
      const issued = await api(`/keys/${encodeURIComponent(key.id)}/rotate`, { method: 'POST' });
      panel.replaceChildren(rawKeyPanel(issued, 'Rotated key (the old one no longer works)'));
      await refresh();
    } catch (err) {
      say(err.message);
    }
  }

  async function revoke(key) {
    try {
      await api(`/keys/${encodeURIComponent(key.id)}`, { method: 'DELETE' });
      say(`Revoked ${key.name}.`);
      await refresh();
    } catch (err) {
      say(err.message);
    }
  }

  const form = h('form', {
    id: 'create-key',
    async onsubmit(event) {
      event.preventDefault();
      const body = { name: name.value.trim() };
      if (days.value) body.expiresInDays = Number(days.value);
      try {
        const issued = await api('/keys', { method: 'POST', body });
        panel.replaceChildren(rawKeyPanel(issued, 'New key'));
        await refresh();
      } catch (err) {
        say(err.message);
      }
    },
  },
  h('label', { for: 'key-name' }, 'Name'), name,
  h('label', { for: 'key-expiry' }, 'Expires in days (1-365)'), days,
  h('button', { type: 'submit', id: 'create-key-button' }, 'Create key'));

  show('API keys', h('p', {}, 'Keys authenticate your calls to /v1. Revoked and rotated keys stop working at once.'),
    form, panel, list);
  await refresh();
}

// ---- Usage and billing ----

/** A horizontal meter in plain SVG: used of limit. */
function meter(used, limit) {
  const share = limit > 0 ? Math.min(used / limit, 1) : 0;
  return s('svg', { id: 'credit-meter', viewBox: '0 0 400 24', width: 400, height: 24, role: 'img',
    'aria-label': `${credits(used)} of ${credits(limit)} credits used` },
  s('rect', { x: 0, y: 0, width: 400, height: 24, rx: 4, class: 'meter-track' }),
  s('rect', { x: 0, y: 0, width: Math.max(400 * share, share > 0 ? 2 : 0), height: 24, rx: 4, class: 'meter-used' }));
}

/** Credits per kind of work as bars in plain SVG. */
function breakdownChart(breakdown) {
  const kinds = [['tts', 'Speech synthesis'], ['stt', 'Transcription'], ['llm', 'Language model'], ['rag', 'Knowledge']];
  const max = Math.max(...kinds.map(([k]) => breakdown[k] ?? 0), 1e-9);
  const row = 28;
  return s('svg', { id: 'breakdown-chart', viewBox: `0 0 460 ${row * kinds.length}`, width: 460, height: row * kinds.length,
    role: 'img', 'aria-label': 'Credits by kind of work' },
  kinds.map(([key, label], i) => s('g', { class: `breakdown-${key}` },
    s('text', { x: 0, y: i * row + 17, class: 'axis' }, label),
    s('rect', { x: 130, y: i * row + 4, height: 18, width: Math.max(((breakdown[key] ?? 0) / max) * 250, 1), class: `bar bar-${key}` }),
    s('text', { x: 390, y: i * row + 17, class: 'axis' }, credits(breakdown[key])))));
}

async function usageView() {
  const [usage, subscription] = await Promise.all([api('/usage'), api('/billing/subscription')]);
  const billing = h('section', { id: 'billing' }, h('h2', {}, 'Plan'),
    h('p', {}, `Tier: `, h('strong', { id: 'tier' }, subscription.tierDisplay),
      subscription.tierExpiresAt ? ` (renews or lapses ${when(subscription.tierExpiresAt)})` : ''));
  if (session.billingConfigured) {
    const back = `${window.location.origin}/portal/usage`;
    for (const tier of ['pro', 'scale']) {
      if (tier === subscription.tier) continue;
      billing.append(h('button', {
        type: 'button',
        class: 'checkout',
        'data-tier': tier,
        async onclick() {
          try {
            const checkout = await api('/billing/checkout', {
              method: 'POST',
              body: { tier, successUrl: `${back}?checkout=done`, cancelUrl: `${back}?checkout=cancelled` },
            });
            window.location.assign(checkout.url);
          } catch (err) {
            say(err.message);
          }
        },
      }, `Upgrade to ${tier}`), ' ');
    }
    billing.append(h('button', {
      type: 'button',
      id: 'billing-portal',
      async onclick() {
        try {
          const portal = await api('/billing/portal', { method: 'POST' });
          window.location.assign(portal.url);
        } catch (err) {
          say(err.message);
        }
      },
    }, 'Invoices and payment methods'));
  } else {
    billing.append(h('p', {}, 'Paid plans are not available on this server (billing is not configured).'));
  }
  show('Usage & billing',
    h('section', { id: 'usage' },
      h('h2', {}, `Credits in ${usage.period}`),
      meter(usage.credits.used, usage.credits.limit),
      h('p', {}, `${credits(usage.credits.used)} used of ${credits(usage.credits.limit)} (${credits(usage.credits.remaining)} left`,
        usage.carryover > 0 ? `, ${credits(usage.carryover)} carried over` : '', `). Period ends ${when(usage.periodEndsAt)}.`),
      usage.overage.credits > 0 ? h('p', {}, `Overage: ${credits(usage.overage.credits)} credits, $${usage.overage.cost.toFixed(2)}.`) : null,
      breakdownChart(usage.breakdown),
      h('p', {}, `${usage.requestCount.toLocaleString()} API requests this period.`)),
    billing);
}

// ---- Sessions ----

async function sessionsView() {
  const agent = new URLSearchParams(window.location.search).get('agentId');
  // Newest first, as the API lists them.
  const sessions = await all(`/observability/sessions${agent ? `?agentId=${encodeURIComponent(agent)}` : ''}`);
  show(agent ? `Sessions of ${agent}` : 'Sessions',
    sessions.length === 0 ? h('p', {}, 'No sessions yet.') : table(
      ['Started', 'Agent', 'Transport', 'Turns', 'Status', ''],
      sessions.map((x) => h('tr', { 'data-session-id': x.id },
        h('td', {}, when(x.startedAt)), h('td', {}, x.agentId), h('td', {}, x.transport), h('td', {}, x.turns),
        h('td', {}, x.status),
        h('td', {}, h('a', { href: `/portal/sessions/${encodeURIComponent(x.id)}`, class: 'open-session' }, 'Timeline')))),
      { id: 'sessions-table' }));
}

/**
 * The waterfall of a session in plain SVG: one row per turn on the session's time axis, the
 * turn's span, and its STT, LLM and TTS time as bars laid end to end from where the work
 * began (an agent reply's work starts before its audio: at the end of the caller's speech).
 * Interrupted turns get a marker where they were cut.
 */
function waterfall(turns) {
  const left = 150;
  const width = 900;
  const row = 30;
  const top = 24;
  const starts = turns.map((t) => (t.speaker === 'agent' && t.latencyMs != null ? t.startMs - t.latencyMs : t.startMs));
  const end = Math.max(1, ...turns.map((t) => t.endMs), ...turns.map((t, i) => starts[i] + t.sttMs + t.llmMs + t.ttsMs));
  const x = (t) => left + (Math.max(t, 0) / end) * (width - left - 10);
  const w = (d) => Math.max((d / end) * (width - left - 10), d > 0 ? 2 : 0);
  const ticks = [];
  const step = niceStep(end / 6);
  for (let t = 0; t <= end; t += step) {
    ticks.push(s('g', { class: 'tick' },
      s('line', { x1: x(t), x2: x(t), y1: top - 4, y2: top + row * turns.length, class: 'grid' }),
      s('text', { x: x(t), y: top - 8, class: 'axis', 'text-anchor': 'middle' }, `${(t / 1000).toFixed(1)} s`)));
  }
  const rows = turns.map((t, i) => {
    const y = top + i * row;
    let cursor = starts[i];
    const bar = (stage, duration) => {
      if (!duration) return null;
      const rect = s('rect', { x: x(cursor), y: y + 8, width: w(duration), height: 14, class: `bar bar-${stage}`, 'data-ms': duration },
        s('title', {}, `Turn ${t.index} ${stage.toUpperCase()}: ${ms(duration)}`));
      cursor += duration;
      return rect;
    };
    return s('g', { class: `turn-row speaker-${t.speaker}${t.interrupted ? ' interrupted' : ''}`, 'data-turn': t.index },
      s('text', { x: 0, y: y + 19, class: 'label' }, `${t.index} ${t.speaker}`),
      s('rect', { x: x(t.startMs), y: y + 4, width: w(Math.max(t.endMs - t.startMs, 1)), height: 22, class: 'span' },
        s('title', {}, `Turn ${t.index} (${t.speaker}) ${ms(t.startMs)}–${ms(t.endMs)}: ${t.text}`)),
      bar('stt', t.sttMs), bar('llm', t.llmMs), bar('tts', t.ttsMs),
      t.interrupted ? s('path', {
        d: `M ${x(t.endMs)} ${y + 2} l 6 0 l -6 26 l -6 -26 z`, class: 'marker-interruption',
      }, s('title', {}, `Turn ${t.index} was interrupted${t.interruption?.falseBargeIn ? ' (false barge-in)' : ''}`)) : null,
      t.error ? s('circle', { cx: x(t.endMs) + 8, cy: y + 15, r: 5, class: 'marker-error' }, s('title', {}, t.error)) : null);
  });
  const height = top + row * turns.length + 8;
  return s('svg', { id: 'timeline', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
    'aria-label': `Timeline of ${turns.length} turns: speech recognition, language model and speech synthesis time per turn` },
  ticks, rows);
}

function niceStep(raw) {
  const power = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

function legend() {
  return h('p', { class: 'legend' },
    ['stt', 'llm', 'tts'].map((k) => h('span', { class: `key key-${k}` }, k.toUpperCase())),
    h('span', { class: 'key key-interruption' }, 'interrupted'));
}

async function recordingPlayer(detail) {
  const id = detail.callSid ?? detail.id;
  const src = `${API}/recordings/${encodeURIComponent(id)}`;
  const response = await fetch(src, { headers: { Range: 'bytes=0-1' }, credentials: 'same-origin' });
  if (response.status !== 200 && response.status !== 206) {
    return h('p', { id: 'no-recording' }, response.status === 409 ? 'The recording is still being written.' : 'No recording of this session.');
  }
  return h('audio', { id: 'recording', controls: true, preload: 'metadata', src });
}

async function sessionView(id) {
  const path = `/observability/sessions/${encodeURIComponent(id)}`;
  const [detail, rootCause] = await Promise.all([api(path), api(`${path}/root-cause`)]);
  const issues = rootCause.issues.length === 0 ? h('p', {}, 'No issues found.') : h('ol', { id: 'issues' },
    rootCause.issues.map((issue) => h('li', { class: `issue issue-${issue.type}`, 'data-turn': issue.turn },
      h('strong', {}, `Turn ${issue.turn}: `), issue.description, h('br'), h('em', {}, issue.recommendation))));
  show(`Session ${detail.id}`,
    h('p', {}, `Agent ${detail.agentId}, ${detail.transport}${detail.from ? ` from ${detail.from}` : ''}, ${detail.status}`,
      `, ${when(detail.startedAt)} – ${when(detail.endedAt)}. ${detail.metrics.avgTurnLatencyMs == null ? 'No reply reached the caller' : `Average reply latency ${ms(detail.metrics.avgTurnLatencyMs)}`}.`),
    h('h2', {}, 'Timeline'), legend(),
    detail.turns.length === 0 ? h('p', {}, 'No turns.') : waterfall(detail.turns),
    h('h2', {}, 'Turns'),
    table(['#', 'Speaker', 'Text', 'STT', 'LLM', 'TTS', 'Latency', ''], detail.turns.map((t) => h('tr', { 'data-turn': t.index },
      h('td', {}, t.index), h('td', {}, t.speaker), h('td', {}, t.text), h('td', {}, ms(t.sttMs)), h('td', {}, ms(t.llmMs)),
      h('td', {}, ms(t.ttsMs)), h('td', {}, t.latencyMs == null ? '—' : ms(t.latencyMs)),
      h('td', {}, t.interrupted ? 'interrupted' : '', t.error ? ` ${t.error}` : ''))), { id: 'turns-table' }),
    h('h2', {}, 'Root-cause analysis'), h('section', { id: 'root-cause' }, issues),
    h('h2', {}, 'Recording'), await recordingPlayer(detail));
}

// ---- Start ----

async function main() {
  try {
    session = await api('/session');
  } catch {
    return;
  }
  setCsrf(session.csrfToken);
  document.getElementById('who').textContent = `${session.phone} · ${session.developerId}`;
  document.getElementById('sign-out').addEventListener('click', async () => {
    try {
      await api('/sign-out', { method: 'POST' });
    } finally {
      window.location.assign('/portal/sign-in');
    }
  });
  const path = window.location.pathname.replace(/\/+$/, '');
  const sessionMatch = path.match(/^\/portal\/sessions\/(.+)$/);
  const agentMatch = path.match(/^\/portal\/agents\/(.+)$/);
  const name = sessionMatch ? 'sessions' : (path.split('/')[2] || 'keys');
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.view === name) link.setAttribute('aria-current', 'page');
  }
  try {
    if (sessionMatch) await sessionView(decodeURIComponent(sessionMatch[1]));
    else if (agentMatch) await agentEditorView(agentMatch[1] === 'new' ? null : decodeURIComponent(agentMatch[1]));
    else if (name === 'usage') await usageView();
    else if (name === 'agents') await agentsView(session);
    else if (name === 'sessions') await sessionsView();
    else await keysView();
    view.dataset.ready = 'true';
  } catch (err) {
    if (err.status === 401) return;
    show('Something went wrong', h('p', { class: 'error' }, err.message));
    view.dataset.ready = 'error';
  }
}

main();
