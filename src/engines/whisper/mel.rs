//! The log-mel front end: 16 kHz samples to Whisper's normalised log-mel spectrogram.
//!
//! As Whisper does, the audio is followed by 30 s of silence, the STFT (400-point periodic
//! Hann window, hop 160) is centred by reflect-padding the input by `n_fft / 2` on both sides
//! and its last frame is dropped, the power spectrum goes through a Slaney-scale mel filter
//! bank (as librosa's default, generated here rather than shipped as a blob), and the
//! log10 values are clamped to 8 below their maximum and scaled as `(x + 4) / 4`.
//!
//! The DFT of all frames is one matrix product with a precomputed windowed cos/sin basis,
//! which on CPU beats a naive per-frame FFT for a 400-point transform. Frames that only see
//! the silent padding are not computed: their power is zero, so their log value is known.

use candle_core::{Device, Tensor};

/// Samples per second Whisper expects.
pub const SAMPLE_RATE: usize = 16_000;
/// STFT window length.
pub const N_FFT: usize = 400;
/// STFT hop: one mel frame per 10 ms.
pub const HOP_LENGTH: usize = 160;
/// Mel frames in one 30 s window.
pub const N_FRAMES: usize = 3_000;
/// Samples in one 30 s window.
pub const N_SAMPLES: usize = 480_000;

const N_BINS: usize = N_FFT / 2 + 1;
/// log10 of the power floor: the value of a frame with no energy.
const LOG_FLOOR: f32 = -10.0;

/// Computes log-mel spectrograms; built once per model (the mel count differs by model).
pub struct MelFrontEnd {
    n_mels: usize,
    /// `(N_FFT, 2 * N_BINS)`: the Hann-windowed cos basis, then the sin basis.
    dft: Tensor,
    /// `(N_BINS, n_mels)`: the transposed filter bank.
    filters: Tensor,
}

/// A whole clip's log-mel spectrogram, row-major `(n_mels, frames)`, followed by 30 s of
/// padding frames.
pub struct LogMel {
    data: Vec<f32>,
    n_mels: usize,
    frames: usize,
    /// Frames that carry audio (the rest is the padding).
    pub content_frames: usize,
}

impl MelFrontEnd {
    /// Prepares the DFT basis and the mel filter bank.
    pub fn new(n_mels: usize) -> candle_core::Result<Self> {
        let window: Vec<f64> = (0..N_FFT)
            .map(|n| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / N_FFT as f64).cos())
            .collect();
        let mut dft = vec![0f32; N_FFT * 2 * N_BINS];
        for n in 0..N_FFT {
            for k in 0..N_BINS {
                // The angle modulo 2 pi keeps the basis exact for high k * n.
                let phase = ((k * n) % N_FFT) as f64 * 2.0 * std::f64::consts::PI / N_FFT as f64;
                dft[n * 2 * N_BINS + k] = (window[n] * phase.cos()) as f32;
                dft[n * 2 * N_BINS + N_BINS + k] = (-window[n] * phase.sin()) as f32;
            }
        }
        let bank = mel_filters(SAMPLE_RATE, N_FFT, n_mels);
        let mut transposed = vec![0f32; N_BINS * n_mels];
        for m in 0..n_mels {
            for k in 0..N_BINS {
                transposed[k * n_mels + m] = bank[m * N_BINS + k];
            }
        }
        Ok(Self {
            n_mels,
            dft: Tensor::from_vec(dft, (N_FFT, 2 * N_BINS), &Device::Cpu)?,
            filters: Tensor::from_vec(transposed, (N_BINS, n_mels), &Device::Cpu)?,
        })
    }

    /// The log-mel spectrogram of `audio` (16 kHz mono) followed by 30 s of silence.
    pub fn log_mel(&self, audio: &[f32]) -> candle_core::Result<LogMel> {
        let n = audio.len();
        let frames = (n + N_SAMPLES) / HOP_LENGTH;
        // Frames whose window reaches into the audio; later ones only see zeros.
        let computed = ((n + N_FFT / 2).div_ceil(HOP_LENGTH) + 1).min(frames);
        let half = (N_FFT / 2) as isize;
        // The padded signal is audio ++ zeros; the centring reflects it at the start.
        let sample = |i: isize| -> f32 {
            let i = if i < 0 { -i } else { i } as usize;
            audio.get(i).copied().unwrap_or(0.0)
        };
        let mut framed = vec![0f32; computed * N_FFT];
        for (f, frame) in framed.chunks_exact_mut(N_FFT).enumerate() {
            let start = (f * HOP_LENGTH) as isize - half;
            for (j, v) in frame.iter_mut().enumerate() {
                *v = sample(start + j as isize);
            }
        }
        let mut data = vec![LOG_FLOOR; self.n_mels * frames];
        self.log10_mel_into(framed, computed, &mut data, frames)?;
        clamp_and_scale(&mut data);
        Ok(LogMel {
            data,
            n_mels: self.n_mels,
            frames,
            content_frames: n / HOP_LENGTH,
        })
    }

    /// The log-mel spectrogram of exactly `audio` (16 kHz mono), as Whisper's feature
    /// extractor computes it for a fixed-length window (Smart Turn's 8 s): the STFT centred by
    /// reflect-padding both ends, its last frame dropped, no silence appended. Row-major
    /// `(n_mels, audio.len() / HOP_LENGTH)`.
    pub fn log_mel_window(&self, audio: &[f32]) -> candle_core::Result<Vec<f32>> {
        let n = audio.len();
        let frames = n / HOP_LENGTH;
        if n <= N_FFT / 2 {
            return Err(candle_core::Error::Msg(format!(
                "{n} samples are too few for a log-mel window"
            )));
        }
        let half = (N_FFT / 2) as isize;
        let last = (n - 1) as isize;
        // Reflection without repeating the edge sample, as numpy's `mode="reflect"`.
        let sample = |i: isize| -> f32 {
            let i = if i < 0 { -i } else { i };
            let i = if i > last { 2 * last - i } else { i };
            audio[i as usize]
        };
        let mut framed = vec![0f32; frames * N_FFT];
        for (f, frame) in framed.chunks_exact_mut(N_FFT).enumerate() {
            let start = (f * HOP_LENGTH) as isize - half;
            for (j, v) in frame.iter_mut().enumerate() {
                *v = sample(start + j as isize);
            }
        }
        let mut data = vec![LOG_FLOOR; self.n_mels * frames];
        self.log10_mel_into(framed, frames, &mut data, frames)?;
        clamp_and_scale(&mut data);
        Ok(data)
    }

    /// Writes log10 of the mel power of the first `computed` frames of `framed` (`N_FFT`
    /// samples each) into the row-major `(n_mels, frames)` `data`.
    fn log10_mel_into(
        &self,
        framed: Vec<f32>,
        computed: usize,
        data: &mut [f32],
        frames: usize,
    ) -> candle_core::Result<()> {
        if computed == 0 {
            return Ok(());
        }
        let framed = Tensor::from_vec(framed, (computed, N_FFT), &Device::Cpu)?;
        let spectrum = framed.matmul(&self.dft)?;
        let re = spectrum.narrow(1, 0, N_BINS)?;
        let im = spectrum.narrow(1, N_BINS, N_BINS)?;
        let power = (re.sqr()? + im.sqr()?)?;
        let mel = power.matmul(&self.filters)?.to_vec2::<f32>()?;
        for (f, row) in mel.iter().enumerate() {
            for (m, &v) in row.iter().enumerate() {
                data[m * frames + f] = v.max(1e-10).log10();
            }
        }
        Ok(())
    }
}

/// Whisper's dynamic range and scale: values clamped to 8 below their maximum, then
/// `(x + 4) / 4`.
fn clamp_and_scale(data: &mut [f32]) {
    let max = data.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for v in data {
        *v = (v.max(max - 8.0) + 4.0) / 4.0;
    }
}

impl LogMel {
    /// The `len`-frame window starting at frame `seek` (at most [`N_FRAMES`], the model's
    /// 30 s), padded past the audio's end, as a `(1, n_mels, len)` tensor.
    pub fn window(&self, seek: usize, len: usize) -> candle_core::Result<Tensor> {
        let len = len.min(N_FRAMES);
        let mut out = vec![0f32; self.n_mels * len];
        let pad = (LOG_FLOOR.max(-10.0) + 4.0) / 4.0;
        for m in 0..self.n_mels {
            let row = &self.data[m * self.frames..(m + 1) * self.frames];
            for (t, v) in out[m * len..(m + 1) * len].iter_mut().enumerate() {
                *v = row.get(seek + t).copied().unwrap_or(pad);
            }
        }
        Tensor::from_vec(out, (1, self.n_mels, len), &Device::Cpu)
    }
}

fn hz_to_mel(hz: f64) -> f64 {
    // Slaney: linear below 1 kHz, logarithmic above.
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let log_step = 6.4f64.ln() / 27.0;
    if hz >= min_log_hz {
        min_log_mel + (hz / min_log_hz).ln() / log_step
    } else {
        hz / f_sp
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let log_step = 6.4f64.ln() / 27.0;
    if mel >= min_log_mel {
        min_log_hz * (log_step * (mel - min_log_mel)).exp()
    } else {
        mel * f_sp
    }
}

/// The Slaney-normalised triangular mel filter bank, row-major `(n_mels, n_fft / 2 + 1)`, as
/// `librosa.filters.mel(sr, n_fft, n_mels)` computes it.
pub fn mel_filters(sample_rate: usize, n_fft: usize, n_mels: usize) -> Vec<f32> {
    let bins = n_fft / 2 + 1;
    let nyquist = sample_rate as f64 / 2.0;
    let fft_freqs: Vec<f64> = (0..bins)
        .map(|k| k as f64 * nyquist / (bins - 1) as f64)
        .collect();
    let (lo, hi) = (hz_to_mel(0.0), hz_to_mel(nyquist));
    let mel_freqs: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(lo + (hi - lo) * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut bank = vec![0f32; n_mels * bins];
    for m in 0..n_mels {
        let (left, centre, right) = (mel_freqs[m], mel_freqs[m + 1], mel_freqs[m + 2]);
        let norm = 2.0 / (right - left);
        for (k, &f) in fft_freqs.iter().enumerate() {
            let rising = (f - left) / (centre - left);
            let falling = (right - f) / (right - centre);
            bank[m * bins + k] = (rising.min(falling).max(0.0) * norm) as f32;
        }
    }
    bank
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_bank_matches_librosa() {
        // Reference values: librosa.filters.mel(sr=16000, n_fft=400, n_mels=80).
        let bank = mel_filters(16_000, 400, 80);
        let at = |m: usize, k: usize| bank[m * 201 + k];
        for (m, k, want) in [
            (0, 1, 0.024_862_595),
            (10, 10, 0.019_908_22),
            (40, 43, 0.014_735_566),
            (79, 192, 0.003_164_712),
            (79, 196, 0.001_795_036),
        ] {
            assert!(
                (at(m, k) - want).abs() < 1e-6,
                "filter {m} bin {k}: {}",
                at(m, k)
            );
        }
        assert_eq!(at(0, 0), 0.0);
        // Every filter passes something, and each is a single triangle.
        for m in 0..80 {
            assert!(bank[m * 201..(m + 1) * 201].iter().any(|&v| v > 0.0));
        }
    }

    #[test]
    fn a_tone_lights_the_right_band_and_silence_is_flat() {
        let mel = MelFrontEnd::new(80).unwrap();
        let tone: Vec<f32> = (0..16_000)
            .map(|i| (2.0 * std::f32::consts::PI * 440.0 * i as f32 / 16_000.0).sin() * 0.5)
            .collect();
        let spec = mel.log_mel(&tone).unwrap();
        assert_eq!(spec.content_frames, 100);
        let window = spec.window(0, N_FRAMES).unwrap().squeeze(0).unwrap();
        let frame50: Vec<f32> = window
            .narrow(1, 50, 1)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let peak = frame50
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
            .unwrap();
        // The loudest band is the one whose centre frequency is nearest 440 Hz.
        let band_centre = |m: usize| mel_to_hz(hz_to_mel(8000.0) * (m + 1) as f64 / 81.0);
        assert!((band_centre(peak) - 440.0).abs() < 40.0, "peak band {peak}");
        let silence = mel.log_mel(&vec![0.0; 8_000]).unwrap();
        let w = silence
            .window(0, N_FRAMES)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        assert!(w.iter().all(|v| (v - w[0]).abs() < 1e-6));
    }
}
