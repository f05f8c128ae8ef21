// VoiceSession: one conversation with an agent over the direct socket
// (`/v1/agents/{id}/session`), without any user interface. It opens the microphone, sends it
// as PCM16 frames through the capture worklet, plays the agent through the playback worklet,
// answers marks as their audio plays, stops playback at once on `audio.clear`, and keeps the
// transcript of both sides with each answer's latency. The <switchboard-voice> element is
// built on it; pages that want their own interface can use it directly.
//
// It never sees an API key: it opens the socket with a short-lived session token that the
// embedding site's server mints (`POST /v1/agents/{id}/session-token`).

const SAMPLE_RATES = [8000, 16000, 24000, 48000];

/**
 * @typedef {object} SessionOptions
 * @property {string} agentId the agent to talk to
 * @property {string} [server] the engine's base URL (default: where this module came from)
 * @property {string} [token] a session token minted for this agent (used once)
 * @property {() => Promise<string | {token: string, url?: string}>} [getToken] called for
 *   every start: answers a token, or the session-token endpoint's JSON body
 * @property {string} [tokenUrl] a URL on the embedding site answering that JSON body to a POST
 *   (sent with the page's cookies, so the site can check who asks)
 * @property {number} [sampleRate] the socket's PCM16 rate: 8000, 16000 (default), 24000, 48000
 * @property {'marks' | 'clock'} [acks] how playback is acknowledged (default `marks`)
 * @property {number} [prebufferMs] audio held back before a reply starts playing (default 80)
 * @property {MediaTrackConstraints} [audio] microphone constraints (default: echo
 *   cancellation, noise suppression and automatic gain on, mono)
 */

/** A failure with a stable `code`, as reported in `error` events. */
export class VoiceError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/**
 * Events (all `CustomEvent`s; `detail` says what happened):
 * - `state`: `{state}`, one of `idle`, `connecting`, `listening`, `speaking` (the agent),
 *   `ending`, `ended`, `failed`
 * - `transcript`: `{entry}`, an entry of `transcript` was added or changed
 * - `metrics`: the `turn.metrics` event of a finished turn
 * - `clear`: `{responseId, droppedSamples}`, playback was cut (barge-in)
 * - `level`: `{db}`, the microphone's level, every 20 ms frame
 * - `error`: `{code, message}`
 * - `ended`: the `session.ended` summary, or `{reason}` when the socket closed without one
 * - `event`: every server event as it arrived
 */
export class VoiceSession extends EventTarget {
  /** @param {SessionOptions} options */
  constructor(options) {
    super();
    if (!options || typeof options.agentId !== 'string' || options.agentId === '') {
      throw new VoiceError('invalid_options', 'agentId is required');
    }
    const sampleRate = options.sampleRate ?? 16000;
    if (!SAMPLE_RATES.includes(sampleRate)) {
      throw new VoiceError('invalid_options', `sampleRate must be one of ${SAMPLE_RATES.join(', ')}`);
    }
    const acks = options.acks ?? 'marks';
    if (acks !== 'marks' && acks !== 'clock') {
      throw new VoiceError('invalid_options', "acks must be 'marks' or 'clock'");
    }
    this.options = { ...options, sampleRate, acks, prebufferMs: options.prebufferMs ?? 80 };
    this.server = new URL(options.server ?? new URL('..', import.meta.url).href, globalThis.location?.href);
    this.state = 'idle';
    this.sessionId = null;
    /**
     * Both sides, in order: `{id, speaker: 'user' | 'agent', text, final, responseId?,
     * latencyMs?, metrics?, interrupted, samplesPlayed}`.
     */
    this.transcript = [];
    /** Counters a page (or a test) can read at any time. */
    this.stats = {
      callerFramesSent: 0,
      agentSamplesReceived: 0,
      agentSamplesPlayed: 0,
      underruns: 0,
      clears: 0,
      marksAnswered: 0,
      lastLatencyMs: null,
    };
    this.muted = false;
    this.ws = null;
    this.context = null;
    this.stream = null;
    this.capture = null;
    this.playback = null;
    /** Tag of the reply whose audio is arriving (audio may precede its `agent.audio.start`). */
    this.audioTag = null;
    this.tagSeq = 0;
    /** Tags given before the reply's id was known, and that id. */
    this.tagAliases = new Map();
    this.playedTotal = 0;
    /** Fractional samples played per transcript entry (the worklet's rate is not ours). */
    this.playedExact = new WeakMap();
    this.entrySeq = 0;
    this.partial = null;
  }

  /**
   * Connects and starts talking. Call it from a user gesture (a click): browsers only let a
   * page start audio and ask for the microphone then.
   */
  async start() {
    if (this.state !== 'idle') throw new VoiceError('invalid_state', `cannot start a session that is ${this.state}`);
    this.setState('connecting');
    try {
      // Created first, inside the gesture, so the browser lets it run.
      this.context = new AudioContext({ latencyHint: 'interactive' });
      const resumed = this.context.resume();
      const base = new URL('.', import.meta.url);
      const microphone = navigator.mediaDevices
        .getUserMedia({
          audio: this.options.audio ?? {
            echoCancellation: true,
            noiseSuppression: true,
            autoGainControl: true,
            channelCount: 1,
          },
        })
        .then((stream) => {
          // A session that failed or ended meanwhile must not keep the microphone on.
          if (this.state !== 'connecting') stream.getTracks().forEach((track) => track.stop());
          else this.stream = stream;
        });
      const [, target] = await Promise.all([
        microphone,
        this.socketUrl(),
        this.context.audioWorklet.addModule(new URL('capture-worklet.js', base)),
        this.context.audioWorklet.addModule(new URL('playback-worklet.js', base)),
        resumed,
      ]);
      if (this.state !== 'connecting') {
        this.release();
        return;
      }
      this.buildGraph();
      await this.open(target);
    } catch (error) {
      const failure = asVoiceError(error);
      this.fail(failure);
      throw failure;
    }
  }

  /** Sends a typed turn (the agent stops talking and answers it). */
  sendText(text) {
    const trimmed = String(text ?? '').trim();
    if (trimmed === '') return;
    this.send({ type: 'text', text: trimmed });
  }

  /** Asks the agent to stop talking. */
  interrupt() {
    this.send({ type: 'interrupt' });
  }

  /** Mutes the microphone (silence is sent, so the line stays open). */
  setMuted(muted) {
    this.muted = Boolean(muted);
    this.capture?.port.postMessage({ type: 'mute', muted: this.muted });
    this.stream?.getAudioTracks().forEach((track) => {
      track.enabled = !this.muted;
    });
  }

  /** Ends the conversation: the server sends its summary, then everything is released. */
  async end() {
    if (this.state === 'ended' || this.state === 'failed' || this.state === 'idle') return;
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
      this.finish({ reason: 'ended before it connected' });
      return;
    }
    this.setState('ending');
    this.send({ type: 'end' });
    const closed = new Promise((resolve) => this.ws.addEventListener('close', resolve, { once: true }));
    const timeout = new Promise((resolve) => setTimeout(resolve, 3000));
    await Promise.race([closed, timeout]);
    this.finish({ reason: 'ended by the client' });
  }

  /** Where to open the socket: the token source's URL or this server's, with our options. */
  async socketUrl() {
    const { agentId, token, getToken, tokenUrl } = this.options;
    let minted;
    if (typeof token === 'string' && token !== '') {
      minted = token;
      // A token opens one session: the next start needs a new one.
      this.options.token = undefined;
    } else if (typeof getToken === 'function') {
      minted = await getToken();
    } else if (typeof tokenUrl === 'string' && tokenUrl !== '') {
      const response = await fetch(tokenUrl, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ agentId }),
      });
      if (!response.ok) {
        throw new VoiceError('token_refused', `the token URL answered ${response.status}`);
      }
      minted = await response.json();
    } else {
      throw new VoiceError('no_token', 'give a token, getToken or tokenUrl');
    }
    const tokenValue = typeof minted === 'string' ? minted : minted?.token;
    if (typeof tokenValue !== 'string' || tokenValue === '') {
      throw new VoiceError('no_token', 'the token source answered no token');
    }
    const url =
      typeof minted === 'object' && typeof minted.url === 'string' && minted.url !== ''
        ? new URL(minted.url)
        : new URL(`v1/agents/${encodeURIComponent(agentId)}/session`, withSlash(this.server));
    if (url.protocol === 'http:') url.protocol = 'ws:';
    if (url.protocol === 'https:') url.protocol = 'wss:';
    url.searchParams.set('token', tokenValue);
    url.searchParams.set('sampleRate', String(this.options.sampleRate));
    url.searchParams.set('acks', this.options.acks);
    return url;
  }

  buildGraph() {
    const ctx = this.context;
    const rate = this.options.sampleRate;
    this.capture = new AudioWorkletNode(ctx, 'switchboard-capture', {
      numberOfInputs: 1,
      numberOfOutputs: 1,
      outputChannelCount: [1],
      processorOptions: { targetRate: rate, frameMs: 20 },
    });
    this.capture.port.onmessage = (event) => this.onCaptured(event.data);
    this.capture.port.postMessage({ type: 'mute', muted: this.muted });
    this.source = ctx.createMediaStreamSource(this.stream);
    this.source.connect(this.capture);
    // The capture node writes silence; connecting it keeps the graph pulling it.
    this.capture.connect(ctx.destination);

    this.playback = new AudioWorkletNode(ctx, 'switchboard-playback', {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [1],
      processorOptions: { sourceRate: rate, prebufferMs: this.options.prebufferMs },
    });
    this.playback.port.onmessage = (event) => this.onPlayback(event.data);
    this.playback.connect(ctx.destination);
  }

  open(url) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.binaryType = 'arraybuffer';
      this.ws = ws;
      let opened = false;
      ws.addEventListener('open', () => {
        opened = true;
        this.setState('listening');
        resolve();
      });
      ws.addEventListener('message', (event) => {
        if (typeof event.data === 'string') this.onEvent(event.data);
        else this.onAudio(event.data);
      });
      ws.addEventListener('close', (event) => {
        if (!opened) {
          // The server refused the upgrade (an expired token, an unknown agent, a session
          // limit): browsers do not show the status, so say what it usually is.
          reject(
            new VoiceError(
              'connect_failed',
              'the server refused the session (an expired or used token, an unknown agent, or the session limit)',
            ),
          );
          return;
        }
        if (this.state !== 'ended' && this.state !== 'failed') {
          this.finish(event.code === 1000 ? { reason: 'closed by the server' } : { reason: `connection lost (${event.code})` });
        }
      });
    });
  }

  onCaptured(message) {
    if (message?.type !== 'frame') return;
    this.emit('level', { db: message.level });
    if (this.ws?.readyState === WebSocket.OPEN && this.state !== 'ending') {
      // A congested socket drops frames rather than building up delay.
      if (this.ws.bufferedAmount < 64 * 1024) {
        this.ws.send(message.pcm);
        this.stats.callerFramesSent++;
      }
    }
  }

  onAudio(bytes) {
    if (!this.playback || bytes.byteLength === 0) return;
    const pcm = this.carry ? joinBytes(this.carry, bytes) : bytes;
    const even = pcm.byteLength - (pcm.byteLength % 2);
    this.carry = even < pcm.byteLength ? pcm.slice(even) : null;
    const whole = even === pcm.byteLength ? pcm : pcm.slice(0, even);
    this.stats.agentSamplesReceived += whole.byteLength / 2;
    if (this.audioTag === null) this.audioTag = `pending-${++this.tagSeq}`;
    this.playback.port.postMessage({ type: 'audio', pcm: whole, tag: this.audioTag }, [whole]);
  }

  onPlayback(message) {
    switch (message?.type) {
      case 'mark':
        if (this.options.acks === 'marks') {
          this.send({ type: 'mark', name: message.name });
          this.stats.marksAnswered++;
        }
        break;
      case 'progress':
        for (const [tag, samples] of Object.entries(message.played)) {
          this.playedTotal += samples;
          const entry = this.agentEntry(this.tagAliases.get(tag) ?? tag);
          if (entry) {
            const exact = (this.playedExact.get(entry) ?? 0) + samples;
            this.playedExact.set(entry, exact);
            entry.samplesPlayed = Math.round(exact);
          }
        }
        this.stats.agentSamplesPlayed = Math.round(this.playedTotal);
        this.stats.underruns = message.underruns;
        break;
      case 'cleared':
        this.emit('clear', { responseId: this.clearedId, droppedSamples: message.droppedSamples });
        break;
      default:
        break;
    }
  }

  onEvent(text) {
    let event;
    try {
      event = JSON.parse(text);
    } catch {
      return;
    }
    if (!event || typeof event.type !== 'string') return;
    this.emit('event', event);
    switch (event.type) {
      case 'session.started':
        this.sessionId = event.sessionId;
        break;
      case 'transcript.partial':
        this.userText(event.text, false);
        break;
      case 'transcript.final':
        this.userText(event.text, true);
        break;
      case 'agent.text.delta': {
        const entry = this.ensureAgentEntry(event.responseId);
        entry.text += event.text;
        this.changed(entry);
        break;
      }
      case 'agent.audio.start':
        if (this.audioTag !== null && this.audioTag.startsWith('pending-')) {
          this.tagAliases.set(this.audioTag, String(event.responseId));
        }
        this.audioTag = String(event.responseId);
        this.ensureAgentEntry(event.responseId);
        this.dropStalePartial();
        this.setState('speaking');
        break;
      case 'agent.cancelled':
        this.dropCancelledReply(event.responseId);
        break;
      case 'agent.audio.end':
        this.playback?.port.postMessage({ type: 'end' });
        this.audioTag = null;
        if (this.state === 'speaking') this.setState('listening');
        break;
      case 'audio.clear':
        // Barge-in: what is queued must not play. The worklet drops it at its next quantum.
        this.clearedId = event.responseId;
        this.playback?.port.postMessage({ type: 'clear' });
        this.audioTag = null;
        this.stats.clears++;
        if (this.state === 'speaking') this.setState('listening');
        break;
      case 'audio.mark':
        if (this.playback) this.playback.port.postMessage({ type: 'mark', name: event.name });
        else this.send({ type: 'mark', name: event.name });
        break;
      case 'turn.metrics':
        this.turnMetrics(event);
        break;
      case 'error':
        this.emit('error', { code: event.code, message: event.message });
        break;
      case 'session.ended':
        this.summary = event;
        break;
      default:
        break;
    }
  }

  userText(text, final) {
    if (typeof text !== 'string') return;
    let entry = this.partial;
    if (!entry) {
      entry = this.addEntry({ speaker: 'user', text: '', final: false });
      this.partial = entry;
    }
    entry.text = text;
    entry.final = final;
    if (final) this.partial = null;
    this.changed(entry);
  }

  /** A reply dropped before any of it was spoken (the caller went on talking) goes away. */
  dropCancelledReply(responseId) {
    const entry = this.agentEntry(responseId);
    if (!entry || entry.samplesPlayed > 0) return;
    this.transcript.splice(this.transcript.indexOf(entry), 1);
    entry.removed = true;
    this.changed(entry);
  }

  /** A partial the recogniser never confirmed (no words in the end) goes away. */
  dropStalePartial() {
    if (!this.partial) return;
    const index = this.transcript.indexOf(this.partial);
    if (index >= 0) this.transcript.splice(index, 1);
    const removed = this.partial;
    this.partial = null;
    removed.removed = true;
    this.changed(removed);
  }

  ensureAgentEntry(responseId) {
    return (
      this.agentEntry(responseId) ??
      this.addEntry({ speaker: 'agent', text: '', final: false, responseId: String(responseId) })
    );
  }

  agentEntry(responseId) {
    const id = String(responseId);
    for (let i = this.transcript.length - 1; i >= 0; i--) {
      const entry = this.transcript[i];
      if (entry.speaker === 'agent' && entry.responseId === id) return entry;
    }
    return null;
  }

  turnMetrics(event) {
    this.emit('metrics', event);
    if (event.speaker === 'user') {
      // transcript.final came just before; a typed turn has one too.
      const entry = [...this.transcript].reverse().find((e) => e.speaker === 'user' && !e.metrics);
      if (entry) {
        entry.metrics = event;
        entry.final = true;
        this.changed(entry);
      }
      return;
    }
    // An agent turn's metrics name its reply (a server without `responseId` in them: the
    // oldest agent entry still open, as its metrics follow its audio end).
    let entry =
      event.responseId !== undefined
        ? this.agentEntry(event.responseId)
        : this.transcript.find((e) => e.speaker === 'agent' && !e.metrics);
    if (!entry) {
      const fields = { speaker: 'agent', text: '', final: false };
      if (event.responseId !== undefined) fields.responseId = String(event.responseId);
      entry = this.addEntry(fields);
    }
    entry.metrics = event;
    entry.final = true;
    entry.interrupted = Boolean(event.interrupted);
    entry.error = event.error ?? null;
    // What was actually played (empty when the answer was cut before its first word).
    if (typeof event.text === 'string') entry.heard = event.text;
    if (entry.text === '' && typeof event.text === 'string') entry.text = event.text;
    if (typeof event.latencyMs === 'number') {
      entry.latencyMs = event.latencyMs;
      this.stats.lastLatencyMs = event.latencyMs;
    }
    this.changed(entry);
  }

  addEntry(fields) {
    const entry = { id: ++this.entrySeq, interrupted: false, samplesPlayed: 0, ...fields };
    this.transcript.push(entry);
    return entry;
  }

  changed(entry) {
    this.emit('transcript', { entry });
  }

  send(message) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.emit('state', { state });
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  fail(error) {
    if (this.state === 'ended' || this.state === 'failed') return;
    this.emit('error', { code: error.code, message: error.message });
    this.release();
    this.setState('failed');
  }

  finish(detail) {
    if (this.state === 'ended' || this.state === 'failed') return;
    this.release();
    this.setState('ended');
    this.emit('ended', this.summary ?? detail);
  }

  /** Stops the microphone, the audio graph and the socket. */
  release() {
    this.stream?.getTracks().forEach((track) => track.stop());
    this.source?.disconnect();
    this.capture?.disconnect();
    this.playback?.disconnect();
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close(1000, 'the client left');
    if (this.context && this.context.state !== 'closed') this.context.close().catch(() => {});
    this.capture = null;
    this.playback = null;
    this.source = null;
  }
}

function withSlash(url) {
  const copy = new URL(url.href);
  if (!copy.pathname.endsWith('/')) copy.pathname += '/';
  return copy;
}

function joinBytes(a, b) {
  const joined = new Uint8Array(a.byteLength + b.byteLength);
  joined.set(new Uint8Array(a), 0);
  joined.set(new Uint8Array(b), a.byteLength);
  return joined.buffer;
}

function asVoiceError(error) {
  if (error instanceof VoiceError) return error;
  if (error?.name === 'NotAllowedError') {
    return new VoiceError('microphone_denied', 'the microphone was not allowed');
  }
  if (error?.name === 'NotFoundError') {
    return new VoiceError('no_microphone', 'no microphone was found');
  }
  return new VoiceError('start_failed', error?.message ?? String(error));
}
