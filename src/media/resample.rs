//! Sample-rate conversion between any two rates (22.05 kHz voices to 24 kHz responses,
//! 44.1 kHz uploads to the 16 kHz recognisers), with rubato's FFT resampler: whole clips with
//! [`resample`], and audio arriving piece by piece (a file being decoded) with
//! [`StreamResampler`], which holds only one block of input and output at a time.

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler};

/// Input block length for the FFT resampler; long enough for a sharp anti-aliasing filter.
const CHUNK: usize = 1024;

/// Resamples mono `samples` from `from` Hz to `to` Hz. The output is aligned with the input
/// (the resampler's delay is trimmed) and has `len * to / from` samples, rounded up.
pub fn resample(samples: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || samples.is_empty() || from == 0 || to == 0 {
        return samples.to_vec();
    }
    let resampled = Fft::<f32>::new(from as usize, to as usize, CHUNK, 1, FixedSync::Input)
        .ok()
        .and_then(|mut resampler| {
            let input = InterleavedSlice::new(samples, 1, samples.len()).ok()?;
            resampler
                .process_all(&input, samples.len(), None)
                .ok()
                .map(|out| out.take_data())
        });
    // Construction only fails for zero or absurd rates, which callers never pass; linear
    // interpolation keeps the function total if it ever does.
    resampled.unwrap_or_else(|| linear(samples, from, to))
}

/// Converts one channel piece by piece: [`StreamResampler::push`] what was decoded,
/// [`StreamResampler::finish`] at the end. The output is aligned with the input (the
/// resampler's delay is dropped) and has `len * to / from` samples, rounded up, like
/// [`resample`]. Memory held: one input block and one output block.
pub struct StreamResampler {
    inner: Option<Fft<f32>>,
    from: u32,
    to: u32,
    /// Input not yet processed, shorter than one block.
    pending: Vec<f32>,
    block: Vec<f32>,
    /// Output samples still to drop at the start (the resampler's delay).
    delay: usize,
    input_frames: u64,
    output_frames: u64,
}

impl StreamResampler {
    /// A converter from `from` Hz to `to` Hz; equal rates pass samples through.
    /// Callers check the rates first (`media::decode` refuses implausible ones).
    pub fn new(from: u32, to: u32) -> Self {
        let inner = (from != to && from > 0 && to > 0)
            .then(|| Fft::<f32>::new(from as usize, to as usize, CHUNK, 1, FixedSync::Input).ok())
            .flatten();
        let (block, delay) = match &inner {
            Some(fft) => (vec![0.0; fft.output_frames_max()], fft.output_delay()),
            None => (Vec::new(), 0),
        };
        StreamResampler {
            inner,
            from,
            to,
            pending: Vec::new(),
            block,
            delay,
            input_frames: 0,
            output_frames: 0,
        }
    }

    /// Output samples this many input samples make.
    fn expected(&self, input: u64) -> u64 {
        if self.inner.is_none() {
            return input;
        }
        (input * self.to as u64).div_ceil(self.from as u64)
    }

    /// Converts `samples`, appending what is ready to `out`.
    pub fn push(&mut self, samples: &[f32], out: &mut Vec<f32>) {
        self.input_frames += samples.len() as u64;
        if self.inner.is_none() {
            out.extend_from_slice(samples);
            self.output_frames += samples.len() as u64;
            return;
        }
        let mut rest = samples;
        while !rest.is_empty() {
            let need = self.input_needed();
            let take = need.saturating_sub(self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() == need {
                self.process_pending(out);
            }
        }
    }

    /// Flushes the last samples into `out`.
    pub fn finish(mut self, out: &mut Vec<f32>) {
        let total = self.expected(self.input_frames);
        // Silence pushes the delayed tail out; a bounded number of blocks does it.
        let mut guard = 0;
        while self.inner.is_some() && self.output_frames < total && guard < 64 {
            let need = self.input_needed();
            self.pending.resize(need, 0.0);
            self.process_pending(out);
            guard += 1;
        }
        if self.output_frames > total {
            let extra = (self.output_frames - total) as usize;
            out.truncate(out.len().saturating_sub(extra));
        }
    }

    fn input_needed(&self) -> usize {
        self.inner.as_ref().map_or(1, |fft| fft.input_frames_next())
    }

    fn process_pending(&mut self, out: &mut Vec<f32>) {
        let Some(fft) = self.inner.as_mut() else {
            return;
        };
        let frames = self.pending.len();
        let capacity = self.block.len();
        let produced = InterleavedSlice::new(&self.pending, 1, frames)
            .ok()
            .zip(InterleavedSlice::new_mut(&mut self.block, 1, capacity).ok())
            .and_then(|(input, mut output)| fft.process_into_buffer(&input, &mut output, None).ok())
            .map_or(0, |(_, written)| written);
        self.pending.clear();
        let skip = self.delay.min(produced);
        self.delay -= skip;
        out.extend_from_slice(&self.block[skip..produced]);
        self.output_frames += (produced - skip) as u64;
    }
}

fn linear(samples: &[f32], from: u32, to: u32) -> Vec<f32> {
    let out_len = (samples.len() as u64 * to as u64).div_ceil(from as u64) as usize;
    let step = from as f64 / to as f64;
    (0..out_len)
        .map(|i| {
            let position = i as f64 * step;
            let index = position as usize;
            let frac = (position - index as f64) as f32;
            let a = samples[index.min(samples.len() - 1)];
            let b = samples[(index + 1).min(samples.len() - 1)];
            a + (b - a) * frac
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(hz: f32, rate: u32, seconds: f32) -> Vec<f32> {
        (0..(rate as f32 * seconds) as usize)
            .map(|i| (2.0 * std::f32::consts::PI * hz * i as f32 / rate as f32).sin() * 0.5)
            .collect()
    }

    /// Frequency estimate from zero crossings: good enough to tell a tone survived.
    fn zero_crossing_hz(samples: &[f32], rate: u32) -> f32 {
        let crossings = samples
            .windows(2)
            .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
            .count();
        crossings as f32 / 2.0 / (samples.len() as f32 / rate as f32)
    }

    #[test]
    fn keeps_length_and_pitch_across_odd_rates() {
        for (from, to) in [
            (22_050, 24_000),
            (44_100, 16_000),
            (16_000, 48_000),
            (8_000, 22_050),
        ] {
            let input = tone(440.0, from, 1.0);
            let output = resample(&input, from, to);
            let expected = (input.len() as u64 * to as u64).div_ceil(from as u64) as i64;
            assert!(
                (output.len() as i64 - expected).abs() <= 1,
                "{from}->{to}: {} samples, expected {expected}",
                output.len()
            );
            let hz = zero_crossing_hz(&output[1000..output.len() - 1000], to);
            assert!(
                (hz - 440.0).abs() < 5.0,
                "{from}->{to}: tone came out at {hz} Hz"
            );
        }
    }

    #[test]
    fn streaming_matches_the_whole_clip_in_length_and_pitch() {
        for (from, to) in [(44_100, 16_000), (192_000, 16_000), (8_000, 16_000)] {
            let input = tone(440.0, from, 1.3);
            let mut resampler = StreamResampler::new(from, to);
            let mut output = Vec::new();
            // Uneven pieces, as decoded packets come.
            for piece in input.chunks(777) {
                resampler.push(piece, &mut output);
            }
            resampler.finish(&mut output);
            let expected = (input.len() as u64 * to as u64).div_ceil(from as u64) as usize;
            assert_eq!(output.len(), expected, "{from}->{to}");
            let whole = resample(&input, from, to);
            let hz = zero_crossing_hz(&output[1000..output.len() - 1000], to);
            assert!((hz - 440.0).abs() < 5.0, "{from}->{to}: {hz} Hz");
            let diff = output[1000..output.len() - 1000]
                .iter()
                .zip(&whole[1000..])
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(
                diff < 0.05,
                "{from}->{to}: differs from the whole clip by {diff}"
            );
        }
    }

    #[test]
    fn equal_rates_and_empty_input_are_copies() {
        assert_eq!(resample(&[0.1, 0.2], 16_000, 16_000), vec![0.1, 0.2]);
        assert!(resample(&[], 44_100, 16_000).is_empty());
    }
}
