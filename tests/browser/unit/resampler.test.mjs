// The widget's resampler and PCM16 conversions (widget/resampler.js), under Node's test runner.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Resampler, floatToPcm16, pcm16ToFloat, levelDb } from '../../../widget/resampler.js';

const sine = (hz, rate, seconds, amplitude = 0.5) =>
  Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / rate));

/** Runs `input` through a resampler in chunks of `chunk` samples, plus its flush. */
function run(resampler, input, chunk) {
  const parts = [];
  for (let i = 0; i < input.length; i += chunk) parts.push(resampler.process(input.subarray(i, i + chunk)));
  parts.push(resampler.flush());
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** RMS of the middle of a signal (edges hold the filter's ramp). */
function middleRms(samples) {
  const from = Math.floor(samples.length * 0.25);
  const to = Math.floor(samples.length * 0.75);
  let sum = 0;
  for (let i = from; i < to; i++) sum += samples[i] * samples[i];
  return Math.sqrt(sum / (to - from));
}

test('48 kHz to 16 kHz keeps speech-band tones and the duration', () => {
  const input = sine(1000, 48000, 1);
  const out = run(new Resampler(48000, 16000), input, 128);
  assert.ok(Math.abs(out.length - 16000) <= 4, `length ${out.length}`);
  const ratio = middleRms(out) / middleRms(input);
  assert.ok(ratio > 0.98 && ratio < 1.02, `1 kHz gain ${ratio}`);
});

test('content above the new Nyquist frequency does not alias into speech', () => {
  // 12 kHz at 48 kHz would fold to 4 kHz at 16 kHz without the low-pass.
  const input = sine(12000, 48000, 1);
  const out = run(new Resampler(48000, 16000), input, 128);
  const attenuationDb = 20 * Math.log10(middleRms(out) / middleRms(input));
  assert.ok(attenuationDb < -50, `12 kHz leaks at ${attenuationDb.toFixed(1)} dB`);
});

test('44.1 kHz microphones resample too', () => {
  const input = sine(440, 44100, 0.5);
  const out = run(new Resampler(44100, 16000), input, 128);
  assert.ok(Math.abs(out.length - 8000) <= 4, `length ${out.length}`);
  const ratio = middleRms(out) / middleRms(input);
  assert.ok(ratio > 0.98 && ratio < 1.02, `gain ${ratio}`);
});

test('16 kHz agent audio upsampled to 48 kHz keeps its tone', () => {
  const input = sine(500, 16000, 0.5);
  const out = run(new Resampler(16000, 48000), input, 320);
  assert.ok(Math.abs(out.length - 24000) <= 6, `length ${out.length}`);
  const expected = sine(500, 48000, 0.5);
  // Compare in the middle, past the filter's delay (about one sample at 16 kHz).
  let worst = 0;
  for (let i = 6000; i < 18000; i++) worst = Math.max(worst, Math.abs(out[i] - expected[i]));
  assert.ok(worst < 0.02, `largest deviation ${worst}`);
});

test('chunk sizes do not change the output', () => {
  const input = sine(700, 48000, 0.3);
  const whole = run(new Resampler(48000, 16000), input, input.length);
  const small = run(new Resampler(48000, 16000), input, 37);
  assert.equal(small.length, whole.length);
  for (let i = 0; i < whole.length; i++) assert.ok(Math.abs(whole[i] - small[i]) < 1e-6, `sample ${i}`);
});

test('a constant signal stays constant', () => {
  const out = run(new Resampler(48000, 16000), new Float32Array(4800).fill(0.25), 128);
  for (let i = 100; i < out.length - 100; i++) assert.ok(Math.abs(out[i] - 0.25) < 1e-4, `sample ${i}: ${out[i]}`);
});

test('reset forgets what came before', () => {
  const resampler = new Resampler(16000, 48000);
  resampler.process(new Float32Array(1000).fill(1));
  resampler.reset();
  const out = resampler.process(new Float32Array(1000));
  assert.ok(out.every((s) => s === 0), 'silence after a reset');
});

test('bad rates are refused', () => {
  assert.throws(() => new Resampler(0, 16000), RangeError);
  assert.throws(() => new Resampler(48000, Number.NaN), RangeError);
});

test('PCM16 is little-endian, clipped and rounded', () => {
  const bytes = new Uint8Array(floatToPcm16(Float32Array.from([0, 1, -1, 2, -2, 0.5])));
  assert.deepEqual([...bytes.slice(0, 2)], [0, 0]);
  assert.deepEqual([...bytes.slice(2, 4)], [0xff, 0x7f]);
  assert.deepEqual([...bytes.slice(4, 6)], [0x00, 0x80]);
  assert.deepEqual([...bytes.slice(6, 8)], [0xff, 0x7f], 'clipped high');
  assert.deepEqual([...bytes.slice(8, 10)], [0x00, 0x80], 'clipped low');
  const back = pcm16ToFloat(bytes.buffer);
  assert.equal(back.length, 6);
  assert.ok(Math.abs(back[5] - 0.5) < 1e-4);
  assert.equal(back[2], -1);
});

test('a trailing odd byte is ignored', () => {
  assert.equal(pcm16ToFloat(new Uint8Array([1, 0, 7]).buffer).length, 1);
});

test('levels are in dBFS', () => {
  assert.equal(levelDb(new Float32Array(320)), -100);
  assert.ok(Math.abs(levelDb(new Float32Array(320).fill(1)) - 0) < 1e-6);
  assert.ok(Math.abs(levelDb(new Float32Array(320).fill(0.1)) + 20) < 1e-4);
});
