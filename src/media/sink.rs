//! Where decoded packets go: each packet is validated, mixed down (or kept per channel) and
//! resampled to the rate the caller needs as soon as it is decoded, so decoding never holds
//! the file's full multi-channel PCM at its own rate. The duration cap is enforced on the way,
//! which bounds what a small compressed file can expand into (SECURITY.md, "Decoded audio").

use super::pcm::{DecodedAudio, MediaError, MAX_CHANNELS, MAX_DURATION_SECONDS};
use super::resample::StreamResampler;

/// Lowest and highest sample rates accepted from a file's header or a decoded packet. Below
/// 1 kHz is not speech; 384 kHz is the highest rate audio interfaces record. Anything outside
/// is a damaged or hostile header, refused before a resampler or table is built.
pub const MIN_SAMPLE_RATE: u32 = 1_000;
pub const MAX_SAMPLE_RATE: u32 = 384_000;

/// What decoding keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeTarget {
    /// The rate of the result; `None` keeps the file's own rate.
    pub sample_rate: Option<u32>,
    /// Keep every channel (transcription, which tells the voices on them apart) instead of
    /// mixing them into one.
    pub split_channels: bool,
}

impl DecodeTarget {
    /// The file as it is: every channel at its own rate.
    pub const ORIGINAL: DecodeTarget = DecodeTarget {
        sample_rate: None,
        split_channels: true,
    };

    /// One channel at `rate`.
    pub fn mono(rate: u32) -> DecodeTarget {
        DecodeTarget {
            sample_rate: Some(rate),
            split_channels: false,
        }
    }
}

/// Refuses a sample rate or channel count no real recording has.
pub fn check_format(sample_rate: u32, channels: usize) -> Result<(), MediaError> {
    if !(MIN_SAMPLE_RATE..=MAX_SAMPLE_RATE).contains(&sample_rate) {
        return Err(MediaError::Implausible(format!(
            "a sample rate of {sample_rate} Hz (accepted: {MIN_SAMPLE_RATE} to {MAX_SAMPLE_RATE} Hz)"
        )));
    }
    if !(1..=MAX_CHANNELS).contains(&channels) {
        return Err(MediaError::Implausible(format!(
            "{channels} channels (accepted: 1 to {MAX_CHANNELS})"
        )));
    }
    Ok(())
}

/// Most frames of the file's own rate the target may take: the duration cap, shortened for
/// files split into more than two channels so the kept samples never exceed two channels
/// of the cap.
fn max_source_frames(rate: u32, kept_channels: usize) -> u64 {
    let cap = MAX_DURATION_SECONDS * rate as u64;
    if kept_channels > 2 {
        cap * 2 / kept_channels as u64
    } else {
        cap
    }
}

/// Takes decoded packets and builds the [`DecodedAudio`] the target asks for.
pub struct PcmSink {
    target: DecodeTarget,
    state: Option<SinkState>,
    mixed: Vec<f32>,
}

struct SinkState {
    source_rate: u32,
    /// The stream's channel count, from its first packet.
    channels: usize,
    resamplers: Vec<StreamResampler>,
    out: Vec<Vec<f32>>,
    frames: u64,
    max_frames: u64,
}

impl PcmSink {
    pub fn new(target: DecodeTarget) -> Self {
        PcmSink {
            target,
            state: None,
            mixed: Vec::new(),
        }
    }

    /// Refuses early a file whose header declares more frames than the cap allows.
    pub fn check_declared(
        &self,
        rate: u32,
        channels: usize,
        frames: Option<u64>,
    ) -> Result<(), MediaError> {
        let kept = if self.target.split_channels {
            channels
        } else {
            1
        };
        match frames {
            Some(frames) if frames > max_source_frames(rate, kept) => Err(MediaError::TooLong),
            _ => Ok(()),
        }
    }

    /// Adds one packet of `planes` interleaved channels at `rate`. The first packet sets the
    /// stream's channel count; later packets with fewer channels fill the missing ones from
    /// their last channel, and extra channels are dropped, so every kept channel has the same
    /// length.
    pub fn push(
        &mut self,
        interleaved: &[f32],
        planes: usize,
        rate: u32,
    ) -> Result<(), MediaError> {
        check_format(rate, planes)?;
        let target = self.target;
        let state = match &mut self.state {
            Some(state) => {
                if state.source_rate != rate {
                    return Err(MediaError::Corrupt(format!(
                        "the sample rate changes from {} Hz to {rate} Hz",
                        state.source_rate
                    )));
                }
                state
            }
            None => {
                let kept = if target.split_channels { planes } else { 1 };
                let out_rate = target.sample_rate.unwrap_or(rate);
                self.state.insert(SinkState {
                    source_rate: rate,
                    channels: planes,
                    resamplers: (0..kept)
                        .map(|_| StreamResampler::new(rate, out_rate))
                        .collect(),
                    out: vec![Vec::new(); kept],
                    frames: 0,
                    max_frames: max_source_frames(rate, kept),
                })
            }
        };
        let frames = interleaved.len() / planes;
        state.frames += frames as u64;
        if state.frames > state.max_frames {
            return Err(MediaError::TooLong);
        }
        let channels = state.channels;
        let frames_of = interleaved.chunks_exact(planes);
        if target.split_channels {
            for (index, (resampler, out)) in
                state.resamplers.iter_mut().zip(&mut state.out).enumerate()
            {
                let source = index.min(planes - 1);
                self.mixed.clear();
                self.mixed
                    .extend(frames_of.clone().map(|frame| frame[source]));
                resampler.push(&self.mixed, out);
            }
        } else {
            let scale = 1.0 / channels as f32;
            self.mixed.clear();
            self.mixed.extend(
                frames_of.map(|frame| {
                    (0..channels).map(|i| frame[i.min(planes - 1)]).sum::<f32>() * scale
                }),
            );
            if let (Some(resampler), Some(out)) =
                (state.resamplers.first_mut(), state.out.first_mut())
            {
                resampler.push(&self.mixed, out);
            }
        }
        Ok(())
    }

    /// The kept audio, or `None` when no packet was decoded.
    pub fn finish(self) -> Option<DecodedAudio> {
        let state = self.state?;
        let rate = self.target.sample_rate.unwrap_or(state.source_rate);
        let mut channels = state.out;
        for (resampler, out) in state.resamplers.into_iter().zip(&mut channels) {
            resampler.finish(out);
        }
        if channels.iter().all(Vec::is_empty) {
            return None;
        }
        Some(DecodedAudio {
            sample_rate: rate,
            channels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implausible_rates_and_channel_counts_are_refused() {
        for (rate, channels) in [
            (u32::MAX, 1),
            (0, 1),
            (999, 1),
            (384_001, 2),
            (16_000, 0),
            (16_000, 9),
        ] {
            assert!(
                matches!(
                    check_format(rate, channels),
                    Err(MediaError::Implausible(_))
                ),
                "{rate} Hz, {channels} channels"
            );
        }
        assert!(check_format(8_000, 1).is_ok());
        assert!(check_format(384_000, 8).is_ok());
    }

    #[test]
    fn channels_stay_the_same_length_when_a_stream_changes_its_channel_count() {
        let mut sink = PcmSink::new(DecodeTarget::ORIGINAL);
        sink.push(&[0.1, 0.2, 0.3, 0.4], 2, 8_000).unwrap();
        // Mono packets in a stereo stream fill both channels.
        sink.push(&[0.5, 0.6], 1, 8_000).unwrap();
        // A packet with more channels than the stream began with keeps the first two.
        sink.push(&[0.7, 0.8, 0.9], 3, 8_000).unwrap();
        let audio = sink.finish().unwrap();
        assert_eq!(audio.channels[0], vec![0.1, 0.3, 0.5, 0.6, 0.7]);
        assert_eq!(audio.channels[1], vec![0.2, 0.4, 0.5, 0.6, 0.8]);
        assert_eq!(audio.mono().len(), 5);
    }

    #[test]
    fn mono_targets_mix_down_and_resample_as_packets_come() {
        let mut sink = PcmSink::new(DecodeTarget::mono(16_000));
        let stereo: Vec<f32> = (0..48_000).flat_map(|_| [0.5, 0.0]).collect();
        for packet in stereo.chunks(2 * 1152) {
            sink.push(packet, 2, 48_000).unwrap();
        }
        let audio = sink.finish().unwrap();
        assert_eq!((audio.sample_rate, audio.channels.len()), (16_000, 1));
        assert_eq!(audio.frames(), 16_000);
        assert!((audio.channels[0][8_000] - 0.25).abs() < 0.01);
    }

    #[test]
    fn the_duration_cap_stops_decoding_and_shrinks_with_split_channels() {
        let sink = PcmSink::new(DecodeTarget::mono(16_000));
        let cap = MAX_DURATION_SECONDS * 8_000;
        assert!(sink.check_declared(8_000, 8, Some(cap)).is_ok());
        assert_eq!(
            sink.check_declared(8_000, 8, Some(cap + 1)),
            Err(MediaError::TooLong)
        );
        let split = PcmSink::new(DecodeTarget::ORIGINAL);
        assert_eq!(
            split.check_declared(8_000, 8, Some(cap / 4 + 1)),
            Err(MediaError::TooLong)
        );
        assert!(split.check_declared(8_000, 2, Some(cap)).is_ok());
    }
}
