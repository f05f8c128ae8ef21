// AudioWorklet processor "switchboard-playback": the agent's PCM16 audio at the socket's rate
// in, resampled to the context's rate and played gaplessly from a queue. A `clear` message
// silences it within one render quantum (128 samples, under 3 ms). Marks between sentences
// are answered when the audio before them has been played out, and progress (samples played
// per reply, underruns) is reported to the main thread every 50 ms.

import { Resampler, pcm16ToFloat } from './resampler.js';
import { PlaybackQueue } from './playback-queue.js';

class PlaybackProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const { sourceRate = 16000, prebufferMs = 80 } = options.processorOptions ?? {};
    this.sourceRate = sourceRate;
    this.resampler = new Resampler(sourceRate, sampleRate);
    this.queue = new PlaybackQueue(Math.round((sampleRate * prebufferMs) / 1000));
    this.tag = '';
    /** Audio went into the resampler since its last flush or reset. */
    this.fed = false;
    this.lastReport = 0;
    this.port.onmessage = (event) => this.command(event.data);
  }

  command(message) {
    switch (message?.type) {
      case 'audio': {
        if (message.tag !== this.tag) {
          this.tag = message.tag;
        }
        this.queue.push(this.resampler.process(pcm16ToFloat(message.pcm)), this.tag);
        this.fed = true;
        break;
      }
      case 'mark':
        this.queue.pushMark(message.name);
        break;
      case 'end':
        // The reply's last audio is here: push out what the filter holds and play it all.
        // (Nothing after a clear: the filter was emptied with the queue.)
        if (this.fed) this.queue.push(this.resampler.flush(), this.tag);
        this.fed = false;
        this.queue.end();
        break;
      case 'clear': {
        this.resampler.reset();
        this.fed = false;
        const dropped = this.queue.clear();
        this.report(true);
        this.port.postMessage({
          type: 'cleared',
          droppedSamples: Math.round((dropped.samples * this.sourceRate) / sampleRate),
          marks: dropped.marks,
        });
        break;
      }
      default:
        break;
    }
  }

  process(_inputs, outputs) {
    const output = outputs[0];
    if (!output || output.length === 0) return true;
    const first = output[0];
    const marks = this.queue.pull(first);
    for (let c = 1; c < output.length; c++) output[c].set(first);
    for (const name of marks) this.port.postMessage({ type: 'mark', name });
    if (marks.length > 0 || currentTime - this.lastReport >= 0.05) this.report(false);
    return true;
  }

  /** Samples played per reply, in the socket's rate, since the last report. */
  report(force) {
    const played = this.queue.takePlayed();
    const scale = this.sourceRate / sampleRate;
    for (const tag of Object.keys(played)) played[tag] = played[tag] * scale;
    this.lastReport = currentTime;
    if (!force && Object.keys(played).length === 0 && this.reportedIdle) return;
    this.reportedIdle = Object.keys(played).length === 0;
    this.port.postMessage({
      type: 'progress',
      played,
      bufferedMs: (this.queue.buffered / sampleRate) * 1000,
      underruns: this.queue.underruns,
    });
  }
}

registerProcessor('switchboard-playback', PlaybackProcessor);
