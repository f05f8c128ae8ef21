// The agent's audio waiting to be played, in order with the marks between sentences. The
// playback worklet pulls one render quantum at a time from it; a clear drops everything at
// once. Kept free of browser APIs so Node's test runner can check it.

/**
 * A FIFO of sample chunks and marks with a short prebuffer: playback of a reply starts once
 * `prebuffer` samples are queued (or the reply's end has arrived), which absorbs network
 * jitter, and then plays without gaps for as long as audio keeps arriving.
 */
export class PlaybackQueue {
  /** @param {number} prebuffer samples to hold back before a reply starts playing */
  constructor(prebuffer) {
    this.prebuffer = prebuffer;
    /** @type {Array<{samples?: Float32Array, offset?: number, tag?: string, mark?: string}>} */
    this.items = [];
    this.buffered = 0;
    this.playing = false;
    /** The current reply's last audio has been queued: play out without waiting. */
    this.complete = false;
    /** Times playback ran dry in the middle of a reply. */
    this.underruns = 0;
    /** Samples played per tag (the reply's id) since the last `takePlayed`. */
    this.played = new Map();
  }

  /** Queues audio of the reply `tag`. */
  push(samples, tag) {
    if (samples.length === 0) return;
    this.items.push({ samples, offset: 0, tag });
    this.buffered += samples.length;
    this.complete = false;
  }

  /** Queues a mark, reached once all audio queued before it has been pulled. */
  pushMark(name) {
    this.items.push({ mark: name });
  }

  /** The reply's audio is all queued: whatever is buffered plays without a prebuffer. */
  end() {
    this.complete = true;
  }

  /**
   * Drops all queued audio and marks. Answers what was dropped.
   * @returns {{samples: number, marks: string[]}}
   */
  clear() {
    const marks = this.items.filter((item) => item.mark !== undefined).map((item) => item.mark);
    const samples = this.buffered;
    this.items = [];
    this.buffered = 0;
    this.playing = false;
    this.complete = false;
    return { samples, marks };
  }

  /**
   * Fills `out` with the next samples (silence where none are due) and answers the marks
   * reached: every mark whose preceding audio has now been pulled.
   * @param {Float32Array} out
   * @returns {string[]}
   */
  pull(out) {
    const marks = [];
    this.takeMarks(marks);
    if (!this.playing && this.buffered > 0 && (this.buffered >= this.prebuffer || this.complete)) {
      this.playing = true;
    }
    let written = 0;
    if (this.playing) {
      while (written < out.length && this.items.length > 0) {
        const head = this.items[0];
        if (head.mark !== undefined) {
          marks.push(head.mark);
          this.items.shift();
          continue;
        }
        const n = Math.min(out.length - written, head.samples.length - head.offset);
        out.set(head.samples.subarray(head.offset, head.offset + n), written);
        written += n;
        head.offset += n;
        this.buffered -= n;
        this.played.set(head.tag, (this.played.get(head.tag) ?? 0) + n);
        if (head.offset === head.samples.length) this.items.shift();
      }
      this.takeMarks(marks);
      if (this.buffered === 0) {
        // Ran dry before the reply's end: a gap the listener hears.
        if (!this.complete) this.underruns++;
        this.playing = false;
      }
    }
    out.fill(0, written);
    return marks;
  }

  /** Marks at the head of the queue have nothing left to wait for. */
  takeMarks(marks) {
    while (this.items.length > 0 && this.items[0].mark !== undefined) {
      marks.push(this.items.shift().mark);
    }
  }

  /**
   * Samples played per tag since the last call.
   * @returns {Record<string, number>}
   */
  takePlayed() {
    const played = Object.fromEntries(this.played);
    this.played.clear();
    return played;
  }
}
