// The transcript VoiceSession keeps from the server's events (widget/session.js), under Node's
// test runner: the events go in as the socket delivers them, no audio or socket involved.
import test from 'node:test';
import assert from 'node:assert/strict';
import { VoiceSession } from '../../../widget/session.js';

function session() {
  return new VoiceSession({ agentId: 'demo', server: 'http://127.0.0.1:1/' });
}

function deliver(voice, ...events) {
  for (const event of events) voice.onEvent(JSON.stringify(event));
}

const metrics = (fields) => ({
  type: 'turn.metrics',
  text: '',
  startMs: 0,
  endMs: 0,
  sttMs: 0,
  llmMs: 0,
  ttsMs: 0,
  interrupted: false,
  error: null,
  latencyMs: null,
  ...fields,
});

test('a reply dropped before it was spoken leaves the transcript, and later metrics find their own reply', () => {
  const voice = session();
  deliver(
    voice,
    { type: 'transcript.final', text: 'And so my fellow Americans' },
    metrics({ index: 0, speaker: 'user', text: 'And so my fellow Americans' }),
    // The answer is written, then dropped: the caller went on talking.
    { type: 'agent.text.delta', responseId: 2, text: 'I am sorry.' },
    { type: 'agent.cancelled', responseId: 2 },
    { type: 'transcript.final', text: 'ask not' },
    metrics({ index: 1, speaker: 'user', text: 'ask not' }),
    { type: 'agent.text.delta', responseId: 3, text: 'Ask away.' },
    { type: 'agent.audio.start', responseId: 3 },
    { type: 'agent.audio.end', responseId: 3, interrupted: false },
    metrics({ index: 2, speaker: 'agent', responseId: 3, text: 'Ask away.', latencyMs: 900 }),
  );
  const agent = voice.transcript.filter((e) => e.speaker === 'agent');
  assert.deepEqual(
    agent.map((e) => [e.responseId, e.text, e.final, e.latencyMs]),
    [['3', 'Ask away.', true, 900]],
  );
  assert.deepEqual(
    voice.transcript.map((e) => e.speaker),
    ['user', 'user', 'agent'],
  );
});

test('metrics naming a reply go to that reply even when an older one is still open', () => {
  const voice = session();
  deliver(
    voice,
    { type: 'agent.text.delta', responseId: 5, text: 'A long story' },
    { type: 'agent.audio.start', responseId: 5 },
    { type: 'agent.text.delta', responseId: 6, text: 'We open at nine.' },
    metrics({ index: 4, speaker: 'agent', responseId: 6, text: 'We open at nine.', latencyMs: 700 }),
  );
  const [older, newer] = voice.transcript;
  assert.equal(older.final, false);
  assert.equal(older.metrics, undefined);
  assert.equal(newer.final, true);
  assert.equal(newer.latencyMs, 700);
});

test('a cancelled reply that already played is kept, and an unknown one changes nothing', () => {
  const voice = session();
  deliver(voice, { type: 'agent.text.delta', responseId: 1, text: 'Hello.' });
  voice.transcript[0].samplesPlayed = 480;
  deliver(voice, { type: 'agent.cancelled', responseId: 1 }, { type: 'agent.cancelled', responseId: 99 });
  assert.equal(voice.transcript.length, 1);
  assert.equal(voice.transcript[0].text, 'Hello.');
});

test('metrics without a reply id go to the oldest open reply, as older servers sent them', () => {
  const voice = session();
  deliver(
    voice,
    { type: 'agent.text.delta', responseId: 1, text: 'One.' },
    { type: 'agent.text.delta', responseId: 2, text: 'Two.' },
    metrics({ index: 0, speaker: 'agent', text: 'One.' }),
  );
  assert.deepEqual(
    voice.transcript.map((e) => e.final),
    [true, false],
  );
});
