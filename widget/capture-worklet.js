// AudioWorklet processor "switchboard-capture": the microphone at the context's rate in,
// PCM16 little-endian mono at the socket's rate out, one 20 ms frame per message (the buffer
// is transferred, not copied). Runs on the audio rendering thread; the main thread only
// forwards the frames to the WebSocket.

import { Resampler, floatToPcm16, levelDb } from './resampler.js';

class CaptureProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const { targetRate = 16000, frameMs = 20 } = options.processorOptions ?? {};
    // `sampleRate` is the AudioWorkletGlobalScope's: the context's rate.
    this.resampler = new Resampler(sampleRate, targetRate);
    this.frame = new Float32Array(Math.round((targetRate * frameMs) / 1000));
    this.filled = 0;
    this.muted = false;
    this.mono = new Float32Array(128);
    this.port.onmessage = (event) => {
      if (event.data?.type === 'mute') this.muted = Boolean(event.data.muted);
    };
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true;
    const length = channels[0].length;
    if (this.mono.length !== length) this.mono = new Float32Array(length);
    // Down-mix: the average of the channels.
    this.mono.set(channels[0]);
    for (let c = 1; c < channels.length; c++) {
      const channel = channels[c];
      for (let i = 0; i < length; i++) this.mono[i] += channel[i];
    }
    if (channels.length > 1) {
      for (let i = 0; i < length; i++) this.mono[i] /= channels.length;
    }
    const resampled = this.resampler.process(this.mono);
    for (let i = 0; i < resampled.length; i++) {
      this.frame[this.filled++] = this.muted ? 0 : resampled[i];
      if (this.filled === this.frame.length) {
        const pcm = floatToPcm16(this.frame);
        this.port.postMessage({ type: 'frame', pcm, level: levelDb(this.frame) }, [pcm]);
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor('switchboard-capture', CaptureProcessor);
