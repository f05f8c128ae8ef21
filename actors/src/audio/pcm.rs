//! Linear PCM on the wire and in memory: the sample rates and frame durations the engine uses,
//! PCM16 little-endian byte conversion, i16/f32 sample conversion, stereo downmix, and
//! [`FrameBuffer`], which turns arbitrarily sized network chunks into fixed-size frames.

use dasp_sample::Sample;

use super::error::{check_capacity, AudioError};

/// Sample rates the audio path handles: telephony (8 kHz), speech models (16 kHz),
/// common TTS output (24 kHz) and browsers/Opus (48 kHz).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleRate {
    /// 8 kHz, G.711 telephony.
    Hz8000,
    /// 16 kHz, wideband speech (VAD, speech recognition).
    Hz16000,
    /// 24 kHz, typical text-to-speech output.
    Hz24000,
    /// 48 kHz, browsers and Opus fullband.
    Hz48000,
}

impl SampleRate {
    /// All supported rates, lowest first.
    pub const ALL: [SampleRate; 4] = [
        SampleRate::Hz8000,
        SampleRate::Hz16000,
        SampleRate::Hz24000,
        SampleRate::Hz48000,
    ];

    /// Samples per second.
    pub const fn hz(self) -> u32 {
        match self {
            SampleRate::Hz8000 => 8_000,
            SampleRate::Hz16000 => 16_000,
            SampleRate::Hz24000 => 24_000,
            SampleRate::Hz48000 => 48_000,
        }
    }

    /// The rate with `hz` samples per second, if it is one the audio path supports.
    pub const fn from_hz(hz: u32) -> Option<SampleRate> {
        match hz {
            8_000 => Some(SampleRate::Hz8000),
            16_000 => Some(SampleRate::Hz16000),
            24_000 => Some(SampleRate::Hz24000),
            48_000 => Some(SampleRate::Hz48000),
            _ => None,
        }
    }

    /// Samples in one millisecond (all supported rates are whole kHz).
    pub const fn samples_per_ms(self) -> usize {
        (self.hz() / 1000) as usize
    }
}

/// Frame durations the real-time path works in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameDuration {
    /// 10 ms.
    Ms10,
    /// 20 ms, the telephony and Opus default.
    Ms20,
    /// 30 ms.
    Ms30,
}

impl FrameDuration {
    /// All supported durations, shortest first.
    pub const ALL: [FrameDuration; 3] = [
        FrameDuration::Ms10,
        FrameDuration::Ms20,
        FrameDuration::Ms30,
    ];

    /// Length in milliseconds.
    pub const fn ms(self) -> u32 {
        match self {
            FrameDuration::Ms10 => 10,
            FrameDuration::Ms20 => 20,
            FrameDuration::Ms30 => 30,
        }
    }
}

/// Mono samples in one frame of `duration` at `rate`.
pub const fn frame_samples(rate: SampleRate, duration: FrameDuration) -> usize {
    rate.samples_per_ms() * duration.ms() as usize
}

/// Bytes in one mono PCM16 frame of `duration` at `rate`.
pub const fn frame_bytes(rate: SampleRate, duration: FrameDuration) -> usize {
    frame_samples(rate, duration) * 2
}

/// Converts PCM16 little-endian bytes into `out[..bytes.len() / 2]`; returns samples written.
pub fn pcm16le_to_i16(bytes: &[u8], out: &mut [i16]) -> Result<usize, AudioError> {
    if !bytes.len().is_multiple_of(2) {
        return Err(AudioError::OddByteLength(bytes.len()));
    }
    let n = bytes.len() / 2;
    check_capacity(n, out.len())?;
    for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = i16::from_le_bytes([pair[0], pair[1]]);
    }
    Ok(n)
}

/// Converts samples into PCM16 little-endian bytes in `out[..samples.len() * 2]`; returns
/// bytes written.
pub fn i16_to_pcm16le(samples: &[i16], out: &mut [u8]) -> Result<usize, AudioError> {
    let n = samples.len() * 2;
    check_capacity(n, out.len())?;
    for (pair, s) in out.chunks_exact_mut(2).zip(samples) {
        pair.copy_from_slice(&s.to_le_bytes());
    }
    Ok(n)
}

/// Converts i16 samples to f32 in [-1, 1) into `out[..input.len()]`; returns samples written.
pub fn i16_to_f32(input: &[i16], out: &mut [f32]) -> Result<usize, AudioError> {
    check_capacity(input.len(), out.len())?;
    for (o, &s) in out.iter_mut().zip(input) {
        *o = s.to_sample::<f32>();
    }
    Ok(input.len())
}

/// Converts one f32 sample to i16, rounding to nearest and saturating out-of-range values.
///
/// dasp's own f32 to i16 conversion truncates toward zero, which biases quiet signals toward
/// zero and doubles the quantisation error, and resampler output legitimately overshoots
/// full scale, so the hot path rounds and saturates instead.
#[inline]
pub fn f32_to_i16_sample(s: f32) -> i16 {
    // `as` saturates at the i16 range and maps NaN to 0.
    (s * 32768.0).round_ties_even() as i16
}

/// Converts f32 samples (nominally [-1, 1]) to i16 into `out[..input.len()]`, rounding and
/// saturating; returns samples written.
pub fn f32_to_i16(input: &[f32], out: &mut [i16]) -> Result<usize, AudioError> {
    check_capacity(input.len(), out.len())?;
    for (o, &s) in out.iter_mut().zip(input) {
        *o = f32_to_i16_sample(s);
    }
    Ok(input.len())
}

/// Averages interleaved stereo (L, R, L, R, ...) into mono `out[..interleaved.len() / 2]`;
/// returns samples written.
pub fn downmix_stereo_i16(interleaved: &[i16], out: &mut [i16]) -> Result<usize, AudioError> {
    if !interleaved.len().is_multiple_of(2) {
        return Err(AudioError::Unsupported(
            "stereo input with an odd number of samples",
        ));
    }
    let n = interleaved.len() / 2;
    check_capacity(n, out.len())?;
    for (o, lr) in out.iter_mut().zip(interleaved.chunks_exact(2)) {
        // Summing in i32 cannot overflow, and halving the sum cannot leave the i16 range.
        *o = ((lr[0] as i32 + lr[1] as i32) >> 1) as i16;
    }
    Ok(n)
}

/// Averages interleaved stereo f32 into mono `out[..interleaved.len() / 2]`; returns samples
/// written.
pub fn downmix_stereo_f32(interleaved: &[f32], out: &mut [f32]) -> Result<usize, AudioError> {
    if !interleaved.len().is_multiple_of(2) {
        return Err(AudioError::Unsupported(
            "stereo input with an odd number of samples",
        ));
    }
    let n = interleaved.len() / 2;
    check_capacity(n, out.len())?;
    for (o, lr) in out.iter_mut().zip(interleaved.chunks_exact(2)) {
        *o = lr[0].add_amp(lr[1]) * 0.5;
    }
    Ok(n)
}

/// Accumulates input of any length and hands it back in fixed-size frames.
///
/// Network chunks rarely line up with codec frames (a WebSocket message may carry 1.5 frames,
/// or an odd number of PCM16 bytes). The buffer keeps the remainder between pushes. Storage is
/// reused: once it has grown to the largest backlog seen, neither [`push`](Self::push) nor
/// [`pop_frame`](Self::pop_frame) allocates.
#[derive(Debug, Clone)]
pub struct FrameBuffer<T> {
    buf: Vec<T>,
    read: usize,
    frame_len: usize,
}

impl<T: Copy> FrameBuffer<T> {
    /// A buffer yielding frames of `frame_len` units, preallocated for four frames.
    ///
    /// # Panics
    /// If `frame_len` is zero, which is a programming error rather than a property of input.
    pub fn new(frame_len: usize) -> Self {
        Self::with_capacity(frame_len, frame_len * 4)
    }

    /// A buffer yielding frames of `frame_len` units with room for `capacity` pending units.
    ///
    /// # Panics
    /// If `frame_len` is zero.
    pub fn with_capacity(frame_len: usize, capacity: usize) -> Self {
        assert!(frame_len > 0, "FrameBuffer frame length must be positive");
        Self {
            buf: Vec::with_capacity(capacity.max(frame_len)),
            read: 0,
            frame_len,
        }
    }

    /// Units per frame.
    pub fn frame_len(&self) -> usize {
        self.frame_len
    }

    /// Units received but not yet returned as a frame.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.read
    }

    /// Appends `input` to the pending units.
    pub fn push(&mut self, input: &[T]) {
        if self.read > 0 {
            // Move the unread tail to the front so the Vec's capacity is reused instead of
            // growing with every push.
            self.buf.copy_within(self.read.., 0);
            self.buf.truncate(self.buf.len() - self.read);
            self.read = 0;
        }
        self.buf.extend_from_slice(input);
    }

    /// The next complete frame, or `None` until enough units have been pushed.
    pub fn pop_frame(&mut self) -> Option<&[T]> {
        if self.pending() < self.frame_len {
            return None;
        }
        let start = self.read;
        self.read += self.frame_len;
        Some(&self.buf[start..self.read])
    }

    /// Drops all pending units (e.g. on barge-in, when queued audio is obsolete).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.read = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes() {
        let expect = [
            (SampleRate::Hz8000, [80, 160, 240]),
            (SampleRate::Hz16000, [160, 320, 480]),
            (SampleRate::Hz24000, [240, 480, 720]),
            (SampleRate::Hz48000, [480, 960, 1440]),
        ];
        for (rate, sizes) in expect {
            for (d, n) in FrameDuration::ALL.iter().zip(sizes) {
                assert_eq!(frame_samples(rate, *d), n, "{rate:?} {d:?}");
                assert_eq!(frame_bytes(rate, *d), 2 * n);
            }
            assert_eq!(SampleRate::from_hz(rate.hz()), Some(rate));
        }
        assert_eq!(SampleRate::from_hz(44_100), None);
    }

    #[test]
    fn pcm16le_round_trip() {
        let samples = [0i16, 1, -1, i16::MAX, i16::MIN, 0x1234];
        let mut bytes = [0u8; 12];
        assert_eq!(
            i16_to_pcm16le(&samples, &mut bytes).expect("12 bytes fit"),
            12
        );
        assert_eq!(&bytes[..4], &[0, 0, 1, 0]);
        assert_eq!(&bytes[10..], &[0x34, 0x12]);
        let mut back = [0i16; 6];
        assert_eq!(pcm16le_to_i16(&bytes, &mut back).expect("6 samples fit"), 6);
        assert_eq!(back, samples);
        assert!(matches!(
            pcm16le_to_i16(&bytes[..3], &mut back),
            Err(AudioError::OddByteLength(3))
        ));
        assert!(matches!(
            pcm16le_to_i16(&bytes, &mut back[..2]),
            Err(AudioError::BufferTooSmall { .. })
        ));
    }

    #[test]
    fn float_conversion_round_trips_exactly() {
        let samples: Vec<i16> = (i16::MIN..=i16::MAX).step_by(7).collect();
        let mut f = vec![0f32; samples.len()];
        let mut back = vec![0i16; samples.len()];
        i16_to_f32(&samples, &mut f).expect("same length");
        assert!(f.iter().all(|x| (-1.0..1.0).contains(x)));
        f32_to_i16(&f, &mut back).expect("same length");
        assert_eq!(back, samples);
        assert_eq!(f32_to_i16_sample(1.5), i16::MAX);
        assert_eq!(f32_to_i16_sample(-1.5), i16::MIN);
        assert_eq!(f32_to_i16_sample(f32::NAN), 0);
        assert_eq!(f32_to_i16_sample(0.6 / 32768.0), 1, "rounds to nearest");
    }

    #[test]
    fn stereo_downmix() {
        let stereo = [100i16, 300, i16::MAX, i16::MAX, i16::MIN, i16::MIN, -3, 4];
        let mut mono = [0i16; 4];
        assert_eq!(downmix_stereo_i16(&stereo, &mut mono).expect("4 fit"), 4);
        assert_eq!(mono, [200, i16::MAX, i16::MIN, 0]);
        let stereo_f = [0.5f32, -0.5, 1.0, 0.0];
        let mut mono_f = [0f32; 2];
        downmix_stereo_f32(&stereo_f, &mut mono_f).expect("2 fit");
        assert_eq!(mono_f, [0.0, 0.5]);
        assert!(downmix_stereo_i16(&stereo[..3], &mut mono).is_err());
    }

    #[test]
    fn frame_buffer_rechunks_arbitrary_input() {
        let mut fb = FrameBuffer::<u8>::new(160);
        let input: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        let mut out = Vec::new();
        // Uneven chunk sizes, including empty and larger-than-a-frame pushes.
        let mut pos = 0;
        for size in [0usize, 1, 59, 160, 333, 7, 240, 200].iter().cycle() {
            if pos >= input.len() {
                break;
            }
            let end = (pos + size).min(input.len());
            fb.push(&input[pos..end]);
            pos = end;
            while let Some(frame) = fb.pop_frame() {
                assert_eq!(frame.len(), 160);
                out.extend_from_slice(frame);
            }
        }
        assert_eq!(out.len(), 960);
        assert_eq!(&out[..], &input[..960]);
        assert_eq!(fb.pending(), 40);
        fb.clear();
        assert_eq!(fb.pending(), 0);
        assert!(fb.pop_frame().is_none());
    }

    #[test]
    fn frame_buffer_reuses_storage() {
        let mut fb = FrameBuffer::<i16>::new(320);
        let chunk = [7i16; 500];
        fb.push(&chunk);
        let cap = fb.buf.capacity();
        for _ in 0..1000 {
            while fb.pop_frame().is_some() {}
            fb.push(&chunk);
        }
        assert_eq!(
            fb.buf.capacity(),
            cap,
            "steady state must not grow the buffer"
        );
    }
}
