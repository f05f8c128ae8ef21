// The embeddable voice widget: the <switchboard-voice> element, and the one-tag embed.
//
//   <script type="module" src="https://voice.example.com/widget/widget.js"
//           data-agent-id="support" data-token-url="/voice-token"></script>
//
// A script tag with data-agent-id mounts one element (floating at the bottom right, or inside
// the element that data-target selects). Pages can also write <switchboard-voice> themselves
// after importing this module. Everything on screen is built with textContent: transcripts
// never become markup.
//
// Attributes beyond the session's options (docs/realtime.md lists them all):
//   diagnostics  show each answer's latency and its per-stage milliseconds (engineering
//                detail for developers; end customers see none of it without this)
//   launcher     start minimised as a small round button that opens the panel; the panel's
//                minimise button folds it back (a live conversation goes on meanwhile)

import { VoiceSession, VoiceError } from './session.js';

export { VoiceSession, VoiceError };

const STATE_LABELS = {
  idle: 'Ready',
  connecting: 'Connecting…',
  listening: 'Listening',
  speaking: 'Agent speaking',
  ending: 'Ending…',
  ended: 'Call ended',
  failed: 'Could not connect',
};

/** Events the element re-dispatches from its session, as `switchboard:<name>`. */
const FORWARDED = ['state', 'transcript', 'metrics', 'clear', 'error', 'ended', 'event'];

/** A microphone drawn in SVG (no icon font or emoji glyph is assumed on the visitor's system). */
function microphoneIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '24');
  svg.setAttribute('height', '24');
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('fill', 'currentColor');
  path.setAttribute(
    'd',
    'M12 14a3 3 0 0 0 3-3V5a3 3 0 0 0-6 0v6a3 3 0 0 0 3 3zm5-3a5 5 0 0 1-10 0H5a7 7 0 0 0 6 6.92V21h2v-3.08A7 7 0 0 0 19 11z',
  );
  svg.append(path);
  return svg;
}

export class SwitchboardVoice extends HTMLElement {
  static get observedAttributes() {
    return ['label', 'diagnostics', 'launcher'];
  }

  constructor() {
    super();
    /** A function answering a session token (or the session-token JSON); see docs/realtime.md. */
    this.getToken = undefined;
    /** A session token for the next start (used once). */
    this.token = undefined;
    this.session = null;
    this.rows = new Map();
    const root = this.attachShadow({ mode: 'open' });
    const style = document.createElement('link');
    style.rel = 'stylesheet';
    style.href = new URL('widget.css', import.meta.url).href;
    // Until its stylesheet applies, the element takes its place but shows nothing: no flash
    // of an unstyled panel (a launcher's whole panel) while widget.css loads. A constructed
    // stylesheet, not a <style> element: a page whose content security policy allows no
    // inline styles (style-src 'self') refuses the one and applies the other.
    if ('adoptedStyleSheets' in root && typeof CSSStyleSheet.prototype.replaceSync === 'function') {
      const unstyled = new CSSStyleSheet();
      unstyled.replaceSync(':host { visibility: hidden; }');
      root.adoptedStyleSheets = [unstyled];
      const styled = () => {
        root.adoptedStyleSheets = root.adoptedStyleSheets.filter((sheet) => sheet !== unstyled);
      };
      style.addEventListener('load', styled, { once: true });
      style.addEventListener('error', styled, { once: true });
    }
    // The panel and the launcher both exist; the `launcher` attribute (handled in
    // attributeChangedCallback, also for the attributes a parsed element starts with) folds
    // the panel away.
    root.append(style, this.build(), this.buildLauncher());
  }

  /** The launcher: a small button standing for the closed panel. */
  buildLauncher() {
    this.launcherButton = document.createElement('button');
    this.launcherButton.type = 'button';
    this.launcherButton.className = 'launcher';
    this.launcherButton.setAttribute('part', 'launcher');
    this.launcherButton.setAttribute('aria-label', `Open ${this.getAttribute('label') || 'Voice assistant'}`);
    this.launcherButton.setAttribute('aria-expanded', 'false');
    this.launcherButton.append(microphoneIcon());
    this.launcherButton.addEventListener('click', () => {
      this.minimised = false;
      this.panelEl.querySelector('button.call')?.focus();
    });
    return this.launcherButton;
  }

  /** Whether only the launcher shows (the `minimised` attribute reflects it). */
  get minimised() {
    return this.hasAttribute('minimised');
  }

  set minimised(value) {
    const folded = Boolean(value) && this.hasAttribute('launcher');
    this.toggleAttribute('minimised', folded);
    this.launcherButton.setAttribute('aria-expanded', String(!folded));
  }

  /** Whether the engineering diagnostics show (the `diagnostics` attribute). */
  get diagnostics() {
    return this.hasAttribute('diagnostics');
  }

  build() {
    const el = (tag, className, text) => {
      const node = document.createElement(tag);
      if (className) node.className = className;
      if (text) node.textContent = text;
      return node;
    };
    const panel = el('section', 'panel');
    panel.setAttribute('part', 'panel');
    this.panelEl = panel;
    const header = el('header');
    this.titleEl = el('span', 'title', this.getAttribute('label') || 'Voice assistant');
    this.statusEl = el('span', 'status', STATE_LABELS.idle);
    this.statusEl.setAttribute('role', 'status');
    this.minimiseButton = el('button', 'minimise', '\u2212');
    this.minimiseButton.type = 'button';
    this.minimiseButton.setAttribute('aria-label', 'Minimise');
    this.minimiseButton.addEventListener('click', () => {
      this.minimised = true;
      this.launcherButton.focus();
    });
    header.append(this.titleEl, this.statusEl, this.minimiseButton);

    this.logEl = el('ol', 'log');
    this.logEl.setAttribute('aria-live', 'polite');
    this.logEl.setAttribute('aria-label', 'Conversation');

    this.latencyEl = el('p', 'latency');
    this.latencyEl.hidden = true;

    const controls = el('div', 'controls');
    this.callButton = el('button', 'call', 'Start talking');
    this.callButton.type = 'button';
    this.callButton.setAttribute('part', 'call-button');
    this.callButton.addEventListener('click', () => this.toggle());
    this.muteButton = el('button', 'mute', 'Mute');
    this.muteButton.type = 'button';
    this.muteButton.disabled = true;
    this.muteButton.setAttribute('aria-pressed', 'false');
    this.muteButton.addEventListener('click', () => {
      if (!this.session) return;
      const muted = !this.session.muted;
      this.session.setMuted(muted);
      this.muteButton.setAttribute('aria-pressed', String(muted));
      this.muteButton.textContent = muted ? 'Unmute' : 'Mute';
    });
    this.meterEl = el('span', 'meter');
    this.meterFill = el('span', 'meter-fill');
    this.meterEl.append(this.meterFill);
    this.meterEl.setAttribute('aria-hidden', 'true');
    controls.append(this.callButton, this.muteButton, this.meterEl);

    this.typed = el('form', 'typed');
    this.typedInput = el('input');
    this.typedInput.type = 'text';
    this.typedInput.placeholder = 'Or type a message';
    this.typedInput.maxLength = 10000;
    this.typedInput.disabled = true;
    this.typedInput.setAttribute('aria-label', 'Message to the agent');
    this.typedSend = el('button', null, 'Send');
    this.typedSend.type = 'submit';
    this.typedSend.disabled = true;
    this.typed.append(this.typedInput, this.typedSend);
    this.typed.addEventListener('submit', (event) => {
      event.preventDefault();
      if (this.session && this.typedInput.value.trim() !== '') {
        this.session.sendText(this.typedInput.value);
        this.typedInput.value = '';
      }
    });

    panel.append(header, this.logEl, this.latencyEl, controls, this.typed);
    return panel;
  }

  attributeChangedCallback(name, _old, value) {
    if (name === 'label' && this.titleEl) {
      this.titleEl.textContent = value || 'Voice assistant';
      this.launcherButton?.setAttribute('aria-label', `Open ${value || 'Voice assistant'}`);
    }
    if (name === 'diagnostics' && this.latencyEl && !this.diagnostics) this.latencyEl.hidden = true;
    if (name === 'launcher' && this.launcherButton) this.minimised = value !== null;
  }

  disconnectedCallback() {
    // Removed from the page: hang up rather than keep the microphone.
    this.session?.end();
  }

  /** The live session's transcript (empty before the first start). */
  get transcript() {
    return this.session?.transcript ?? [];
  }

  /** The live session's counters. */
  get stats() {
    return this.session?.stats ?? null;
  }

  toggle() {
    const state = this.session?.state;
    if (state === 'ending') return;
    if (state === 'connecting' || state === 'listening' || state === 'speaking') this.end();
    else this.start().catch(() => {});
  }

  /** Starts a new conversation (call it from a click). */
  async start() {
    const live = this.session?.state;
    if (live === 'connecting' || live === 'listening' || live === 'speaking' || live === 'ending') return;
    const agentId = this.getAttribute('agent-id');
    const options = {
      agentId,
      server: this.getAttribute('server') || undefined,
      tokenUrl: this.getAttribute('token-url') || undefined,
      getToken: this.getToken,
      token: this.token,
      acks: this.getAttribute('acks') || undefined,
      sampleRate: this.hasAttribute('sample-rate') ? Number(this.getAttribute('sample-rate')) : undefined,
    };
    this.token = undefined;
    let session;
    try {
      session = new VoiceSession(options);
    } catch (error) {
      this.showError(error);
      throw error;
    }
    this.session = session;
    this.rows.clear();
    this.logEl.replaceChildren();
    this.latencyEl.hidden = true;
    for (const name of FORWARDED) {
      session.addEventListener(name, (event) => {
        this.dispatchEvent(
          new CustomEvent(`switchboard:${name}`, { detail: event.detail, bubbles: true, composed: true }),
        );
      });
    }
    session.addEventListener('state', (event) => this.showState(event.detail.state));
    session.addEventListener('transcript', (event) => this.showEntry(event.detail.entry));
    session.addEventListener('metrics', (event) => this.showLatency(event.detail));
    session.addEventListener('level', (event) => {
      const width = Math.max(0, Math.min(100, ((event.detail.db + 60) / 60) * 100));
      this.meterFill.style.width = `${width}%`;
    });
    session.addEventListener('error', (event) => this.showError(event.detail));
    await session.start();
  }

  /** Hangs up. */
  async end() {
    await this.session?.end();
  }

  /** Sends a typed turn. */
  sendText(text) {
    this.session?.sendText(text);
  }

  /** Asks the agent to stop talking. */
  interrupt() {
    this.session?.interrupt();
  }

  showState(state) {
    this.dataset.state = state;
    this.statusEl.textContent = STATE_LABELS[state] ?? state;
    const live = state === 'connecting' || state === 'listening' || state === 'speaking';
    this.callButton.textContent = live ? 'End' : 'Start talking';
    this.callButton.classList.toggle('live', live);
    const open = state === 'listening' || state === 'speaking';
    this.muteButton.disabled = !open;
    this.typedInput.disabled = !open;
    this.typedSend.disabled = !open;
    if (!live) {
      this.meterFill.style.width = '0%';
      this.muteButton.textContent = 'Mute';
      this.muteButton.setAttribute('aria-pressed', 'false');
    }
  }

  showEntry(entry) {
    let row = this.rows.get(entry.id);
    if (entry.removed) {
      row?.remove();
      this.rows.delete(entry.id);
      return;
    }
    if (!row) {
      row = document.createElement('li');
      row.dataset.entry = String(entry.id);
      const who = document.createElement('span');
      who.className = 'who';
      who.textContent = entry.speaker === 'user' ? 'You' : 'Agent';
      const text = document.createElement('span');
      text.className = 'text';
      const latency = document.createElement('span');
      latency.className = 'turn-latency';
      row.append(who, text, latency);
      this.rows.set(entry.id, row);
      this.logEl.append(row);
    }
    row.className = `turn ${entry.speaker}`;
    row.classList.toggle('partial', !entry.final);
    row.classList.toggle('interrupted', Boolean(entry.interrupted));
    row.classList.toggle('failed', Boolean(entry.error));
    // An interrupted answer shows what the caller actually heard.
    const shown = entry.interrupted && typeof entry.heard === 'string' ? `${entry.heard} …`.trim() : entry.text;
    row.querySelector('.text').textContent = shown;
    row.querySelector('.turn-latency').textContent =
      this.diagnostics && typeof entry.latencyMs === 'number' ? `${entry.latencyMs} ms` : '';
    this.logEl.scrollTop = this.logEl.scrollHeight;
  }

  showLatency(metrics) {
    if (!this.diagnostics || metrics.speaker !== 'agent' || typeof metrics.latencyMs !== 'number') return;
    const parts = [
      ['endpoint', metrics.endpointMs],
      ['speech recognition', metrics.sttMs],
      ['model', metrics.llmMs],
      ['tools', metrics.toolMs],
      ['voice', metrics.ttsMs],
      ['platform', metrics.platformMs],
    ]
      .filter(([, ms]) => typeof ms === 'number' && ms > 0)
      .map(([name, ms]) => `${name} ${ms} ms`);
    this.latencyEl.textContent = `Last answer after ${metrics.latencyMs} ms${parts.length ? ` (${parts.join(' · ')})` : ''}`;
    this.latencyEl.hidden = false;
  }

  showError(error) {
    const message = error?.message ?? String(error);
    const row = document.createElement('li');
    row.className = 'turn notice';
    row.textContent = message;
    this.logEl.append(row);
    this.logEl.scrollTop = this.logEl.scrollHeight;
  }
}

if (!customElements.get('switchboard-voice')) {
  customElements.define('switchboard-voice', SwitchboardVoice);
}

/** Mounts an element for every `<script data-agent-id>` that loaded this module. */
function mountFromScriptTags() {
  for (const script of document.querySelectorAll('script[data-agent-id]')) {
    if (!script.src || new URL(script.src, document.baseURI).href !== import.meta.url) continue;
    if (script.dataset.mounted) continue;
    script.dataset.mounted = 'true';
    const element = document.createElement('switchboard-voice');
    element.setAttribute('agent-id', script.dataset.agentId);
    for (const [data, attribute] of [
      ['server', 'server'],
      ['tokenUrl', 'token-url'],
      ['label', 'label'],
      ['acks', 'acks'],
      ['sampleRate', 'sample-rate'],
    ]) {
      if (script.dataset[data]) element.setAttribute(attribute, script.dataset[data]);
    }
    // Boolean attributes: data-diagnostics and data-launcher (present, or "true").
    for (const flag of ['diagnostics', 'launcher']) {
      const value = script.dataset[flag];
      if (value !== undefined && value !== 'false') element.setAttribute(flag, '');
    }
    const target = script.dataset.target ? document.querySelector(script.dataset.target) : null;
    if (target) {
      target.append(element);
    } else {
      element.setAttribute('floating', '');
      document.body.append(element);
    }
  }
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', mountFromScriptTags, { once: true });
} else {
  mountFromScriptTags();
}
