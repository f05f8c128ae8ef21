// The playback queue behind the widget's playback worklet (widget/playback-queue.js).
import test from 'node:test';
import assert from 'node:assert/strict';
import { PlaybackQueue } from '../../../widget/playback-queue.js';

const ramp = (from, n) => Float32Array.from({ length: n }, (_, i) => from + i);
const pull = (queue, n) => {
  const out = new Float32Array(n).fill(-1);
  const marks = queue.pull(out);
  return { out: [...out], marks };
};

test('nothing plays until the prebuffer is filled', () => {
  const queue = new PlaybackQueue(4);
  queue.push(ramp(1, 3), 'r1');
  assert.deepEqual(pull(queue, 2).out, [0, 0]);
  queue.push(ramp(4, 3), 'r1');
  assert.deepEqual(pull(queue, 4).out, [1, 2, 3, 4]);
});

test('chunks play back to back without gaps across pulls', () => {
  const queue = new PlaybackQueue(1);
  queue.push(ramp(1, 3), 'r1');
  queue.push(ramp(4, 3), 'r1');
  assert.deepEqual(pull(queue, 4).out, [1, 2, 3, 4]);
  assert.deepEqual(pull(queue, 2).out, [5, 6]);
  assert.equal(queue.buffered, 0);
});

test('the end of a reply plays out without waiting for the prebuffer', () => {
  const queue = new PlaybackQueue(100);
  queue.push(ramp(1, 2), 'r1');
  assert.deepEqual(pull(queue, 3).out, [0, 0, 0]);
  queue.end();
  assert.deepEqual(pull(queue, 3).out, [1, 2, 0]);
  assert.equal(queue.underruns, 0, 'the end of a reply is no gap');
});

test('running dry mid-reply counts an underrun and rebuffers', () => {
  const queue = new PlaybackQueue(2);
  queue.push(ramp(1, 2), 'r1');
  assert.deepEqual(pull(queue, 3).out, [1, 2, 0]);
  assert.equal(queue.underruns, 1);
  queue.push(ramp(3, 1), 'r1');
  assert.deepEqual(pull(queue, 1).out, [0], 'waits for the prebuffer again');
});

test('marks are reached when the audio before them has been pulled', () => {
  const queue = new PlaybackQueue(1);
  queue.push(ramp(1, 4), 'r1');
  queue.pushMark('m1');
  queue.push(ramp(5, 2), 'r1');
  queue.pushMark('m2');
  assert.deepEqual(pull(queue, 3).marks, []);
  assert.deepEqual(pull(queue, 1).marks, ['m1']);
  assert.deepEqual(pull(queue, 4).marks, ['m2']);
});

test('a mark with no audio before it is reached at once', () => {
  const queue = new PlaybackQueue(10);
  queue.pushMark('alone');
  assert.deepEqual(pull(queue, 2).marks, ['alone']);
});

test('clear drops all audio and pending marks at once', () => {
  const queue = new PlaybackQueue(1);
  queue.push(ramp(1, 10), 'r1');
  queue.pushMark('m1');
  pull(queue, 4);
  const dropped = queue.clear();
  assert.equal(dropped.samples, 6);
  assert.deepEqual(dropped.marks, ['m1']);
  const after = pull(queue, 4);
  assert.deepEqual(after.out, [0, 0, 0, 0]);
  assert.deepEqual(after.marks, []);
});

test('samples played are counted per reply', () => {
  const queue = new PlaybackQueue(1);
  queue.push(ramp(1, 3), 'a');
  queue.push(ramp(1, 5), 'b');
  pull(queue, 6);
  assert.deepEqual(queue.takePlayed(), { a: 3, b: 3 });
  pull(queue, 6);
  assert.deepEqual(queue.takePlayed(), { b: 2 });
  assert.deepEqual(queue.takePlayed(), {});
});
