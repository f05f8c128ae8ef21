// Audio helpers shared by the widget's worklets: a streaming band-limited resampler and
// conversions between float samples and PCM16 little-endian (the direct socket's format).
// Pure functions and classes without browser APIs, so they also run under Node's test runner.

/** Blackman window over t in [-1, 1]: about 74 dB of stopband attenuation. */
function blackman(t) {
  return 0.42 + 0.5 * Math.cos(Math.PI * t) + 0.08 * Math.cos(2 * Math.PI * t);
}

/**
 * Converts a stream of float samples from one rate to another with a windowed-sinc filter.
 * Downsampling low-passes below the output's Nyquist frequency first (no aliasing of
 * 16-24 kHz microphone content into the speech band); upsampling interpolates band-limited.
 * Feed chunks of any length to `process`; the output continues seamlessly across chunks.
 */
export class Resampler {
  /**
   * @param {number} inRate input sample rate, Hz
   * @param {number} outRate output sample rate, Hz
   * @param {{zeroCrossings?: number, resolution?: number}} [options] filter half-length in
   *   zero crossings of the cutoff, and kernel table entries per input sample
   */
  constructor(inRate, outRate, { zeroCrossings = 16, resolution = 256 } = {}) {
    if (!(inRate > 0) || !(outRate > 0)) {
      throw new RangeError(`sample rates must be positive (got ${inRate} -> ${outRate})`);
    }
    this.inRate = inRate;
    this.outRate = outRate;
    /** Input samples advanced per output sample. */
    this.step = inRate / outRate;
    // Cutoff relative to the input's Nyquist frequency, a little under the lower Nyquist so
    // the transition band ends before it.
    this.cutoff = 0.92 * Math.min(1, outRate / inRate);
    /** Half-width of the kernel, in input samples. */
    this.halfWidth = zeroCrossings / this.cutoff;
    this.resolution = resolution;
    const size = Math.ceil(2 * this.halfWidth * resolution) + 2;
    this.table = new Float32Array(size);
    for (let i = 0; i < size; i++) {
      const x = i / resolution - this.halfWidth;
      const t = x / this.halfWidth;
      if (Math.abs(t) > 1) continue;
      const arg = Math.PI * this.cutoff * x;
      const sinc = arg === 0 ? 1 : Math.sin(arg) / arg;
      this.table[i] = this.cutoff * sinc * blackman(t);
    }
    this.reset();
  }

  /** Forgets all input (after a cut in the stream, such as a barge-in). */
  reset() {
    const lead = Math.ceil(this.halfWidth);
    this.buffer = new Float32Array(Math.max(4096, lead * 4));
    // Zeros before the first sample, so the first output is centred on it.
    this.length = lead;
    this.position = lead;
  }

  /** Kernel value at distance `x` input samples from the output instant. */
  kernel(x) {
    const f = (x + this.halfWidth) * this.resolution;
    const i = Math.floor(f);
    if (i < 0 || i + 1 >= this.table.length) return 0;
    const frac = f - i;
    return this.table[i] + (this.table[i + 1] - this.table[i]) * frac;
  }

  /** How many output samples `inputLength` more input samples can produce at most. */
  maxOutput(inputLength) {
    return Math.ceil((this.length + inputLength - this.position) / this.step) + 1;
  }

  /**
   * Adds `input` and answers every output sample it completes (a new array, possibly empty).
   * @param {Float32Array} input
   * @returns {Float32Array}
   */
  process(input) {
    this.append(input);
    const out = new Float32Array(Math.max(0, this.maxOutput(0)));
    let n = 0;
    const w = this.halfWidth;
    while (this.position + w < this.length - 1 && n < out.length) {
      const centre = this.position;
      const first = Math.max(0, Math.ceil(centre - w));
      const last = Math.min(this.length - 1, Math.floor(centre + w));
      let sum = 0;
      let weights = 0;
      for (let i = first; i <= last; i++) {
        const k = this.kernel(i - centre);
        sum += this.buffer[i] * k;
        weights += k;
      }
      // Normalising by the weights keeps a constant signal exactly constant.
      out[n++] = weights !== 0 ? sum / weights : 0;
      this.position += this.step;
    }
    this.discard();
    return out.subarray(0, n);
  }

  /** Pushes out what the filter still holds (the end of an utterance) and resets. */
  flush() {
    const tail = this.process(new Float32Array(Math.ceil(this.halfWidth) + 2));
    this.reset();
    return tail;
  }

  append(input) {
    if (this.length + input.length > this.buffer.length) {
      const grown = new Float32Array(Math.max(this.buffer.length * 2, this.length + input.length));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
    }
    this.buffer.set(input, this.length);
    this.length += input.length;
  }

  /** Drops input no future output reaches. */
  discard() {
    const keepFrom = Math.floor(this.position - this.halfWidth) - 1;
    if (keepFrom <= 0) return;
    this.buffer.copyWithin(0, keepFrom, this.length);
    this.length -= keepFrom;
    this.position -= keepFrom;
  }
}

/**
 * Float samples in [-1, 1] as PCM16 little-endian bytes (clipped, rounded).
 * @param {Float32Array} samples
 * @returns {ArrayBuffer}
 */
export function floatToPcm16(samples) {
  const bytes = new ArrayBuffer(samples.length * 2);
  const view = new DataView(bytes);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]));
    view.setInt16(i * 2, Math.round(s < 0 ? s * 0x8000 : s * 0x7fff), true);
  }
  return bytes;
}

/**
 * PCM16 little-endian bytes as float samples; a trailing odd byte is ignored.
 * @param {ArrayBuffer} bytes
 * @returns {Float32Array}
 */
export function pcm16ToFloat(bytes) {
  const view = new DataView(bytes);
  const count = Math.floor(bytes.byteLength / 2);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    out[i] = view.getInt16(i * 2, true) / 0x8000;
  }
  return out;
}

/** Root-mean-square level of `samples` in dBFS (-100 for silence). */
export function levelDb(samples) {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
  const rms = Math.sqrt(sum / Math.max(1, samples.length));
  return rms > 1e-5 ? 20 * Math.log10(rms) : -100;
}
