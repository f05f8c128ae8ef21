//! Streaming encoders for synthesized speech: WAV (PCM16), MP3 (LAME), Ogg Opus (libopus in
//! an RFC 7845 Ogg stream) and raw PCM16. Each takes mono f32 samples at its format's rate as
//! they are synthesized and returns the bytes that can be sent at once, so a client hears the
//! first sentence while later ones are still being synthesized.

use mp3lame_encoder::{Bitrate, Builder, FlushNoGap, MonoPcm, Quality};
use ogg::writing::{PacketWriteEndInfo, PacketWriter};
use switchboard_actors::audio::opus::OpusEncoder;
use switchboard_actors::audio::pcm::{f32_to_i16_sample, SampleRate};

use super::pcm::MediaError;

/// Ogg logical stream serial number; one stream per file, so any constant works.
const OGG_SERIAL: u32 = 0x5357_4244;
/// Opus frames of 20 ms at 48 kHz.
const OPUS_FRAME: usize = 960;

/// A response audio format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// RIFF WAVE, PCM 16-bit mono.
    Wav,
    /// MPEG-1/2 Layer III, mono, 64 kbit/s.
    Mp3,
    /// Opus in an Ogg container, mono.
    OggOpus,
    /// Headerless PCM 16-bit little-endian mono.
    Pcm16,
}

impl OutputFormat {
    /// Sample rate of the encoded audio: 24 kHz (what OpenAI's `pcm` promises, and enough for
    /// speech) except Opus, which runs at 48 kHz.
    pub fn sample_rate(self) -> u32 {
        match self {
            Self::OggOpus => 48_000,
            _ => 24_000,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Wav => "audio/wav",
            Self::Mp3 => "audio/mpeg",
            Self::OggOpus => "audio/ogg",
            Self::Pcm16 => "audio/pcm",
        }
    }
}

/// Encodes one mono stream in chunks. Call [`push`](Self::push) with samples at
/// [`OutputFormat::sample_rate`] as they come, then [`finish`](Self::finish) once.
pub struct AudioEncoder {
    state: State,
}

enum State {
    Wav { header_sent: bool, streaming: bool },
    Pcm16,
    Mp3(Box<mp3lame_encoder::Encoder>),
    Ogg(Box<OggOpusStream>),
}

struct OggOpusStream {
    writer: PacketWriter<'static, Vec<u8>>,
    encoder: OpusEncoder,
    pending: Vec<i16>,
    pre_skip: u64,
    samples_in: u64,
    packets_out: u64,
}

impl AudioEncoder {
    /// A streaming encoder. For WAV the total length is not known up front, so the RIFF and
    /// data sizes are written as 0xFFFFFFFF, the convention of streaming WAV that players and
    /// decoders read to the end of the stream.
    pub fn new(format: OutputFormat) -> Result<Self, MediaError> {
        let state = match format {
            OutputFormat::Wav => State::Wav {
                header_sent: false,
                streaming: true,
            },
            OutputFormat::Pcm16 => State::Pcm16,
            OutputFormat::Mp3 => State::Mp3(Box::new(mp3_encoder(format.sample_rate())?)),
            OutputFormat::OggOpus => State::Ogg(Box::new(OggOpusStream::new()?)),
        };
        Ok(Self { state })
    }

    /// Encodes the next samples and returns the bytes ready to send (possibly none).
    pub fn push(&mut self, samples: &[f32]) -> Result<Vec<u8>, MediaError> {
        match &mut self.state {
            State::Wav {
                header_sent,
                streaming,
            } => {
                let mut out = Vec::with_capacity(44 + samples.len() * 2);
                if !*header_sent {
                    let data_len = if *streaming {
                        None
                    } else {
                        Some(samples.len() * 2)
                    };
                    write_wav_header(&mut out, OutputFormat::Wav.sample_rate(), data_len);
                    *header_sent = true;
                }
                push_pcm16(&mut out, samples);
                Ok(out)
            }
            State::Pcm16 => {
                let mut out = Vec::with_capacity(samples.len() * 2);
                push_pcm16(&mut out, samples);
                Ok(out)
            }
            State::Mp3(encoder) => {
                let mut out =
                    Vec::with_capacity(mp3lame_encoder::max_required_buffer_size(samples.len()));
                encoder
                    .encode_to_vec(MonoPcm(samples), &mut out)
                    .map_err(|e| MediaError::Encode(format!("MP3: {e:?}")))?;
                Ok(out)
            }
            State::Ogg(stream) => stream.push(samples),
        }
    }

    /// Flushes the encoder and returns the last bytes of the stream.
    pub fn finish(self) -> Result<Vec<u8>, MediaError> {
        match self.state {
            State::Wav { header_sent, .. } => {
                let mut out = Vec::new();
                if !header_sent {
                    write_wav_header(&mut out, OutputFormat::Wav.sample_rate(), Some(0));
                }
                Ok(out)
            }
            State::Pcm16 => Ok(Vec::new()),
            State::Mp3(mut encoder) => {
                let mut out = Vec::with_capacity(7200);
                encoder
                    .flush_to_vec::<FlushNoGap>(&mut out)
                    .map_err(|e| MediaError::Encode(format!("MP3 flush: {e:?}")))?;
                Ok(out)
            }
            State::Ogg(stream) => stream.finish(),
        }
    }
}

/// Encodes a whole clip at once. WAV gets exact sizes in its header.
pub fn encode_all(samples: &[f32], format: OutputFormat) -> Result<Vec<u8>, MediaError> {
    let mut encoder = AudioEncoder::new(format)?;
    if let State::Wav { streaming, .. } = &mut encoder.state {
        *streaming = false;
    }
    let mut out = encoder.push(samples)?;
    out.extend(encoder.finish()?);
    Ok(out)
}

fn push_pcm16(out: &mut Vec<u8>, samples: &[f32]) {
    for &sample in samples {
        out.extend_from_slice(&f32_to_i16_sample(sample).to_le_bytes());
    }
}

fn write_wav_header(out: &mut Vec<u8>, rate: u32, data_len: Option<usize>) {
    let (riff_len, data_len) = match data_len {
        Some(len) => {
            let len = u32::try_from(len).unwrap_or(u32::MAX - 36);
            (len.saturating_add(36), len)
        }
        None => (u32::MAX, u32::MAX),
    };
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&riff_len.to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes()); // byte rate
    out.extend_from_slice(&2u16.to_le_bytes()); // block align
    out.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
}

fn mp3_encoder(rate: u32) -> Result<mp3lame_encoder::Encoder, MediaError> {
    let failed = |e: mp3lame_encoder::BuildError| MediaError::Encode(format!("MP3 setup: {e:?}"));
    let mut builder =
        Builder::new().ok_or_else(|| MediaError::Encode("LAME could not allocate".into()))?;
    builder.set_num_channels(1).map_err(failed)?;
    builder.set_sample_rate(rate).map_err(failed)?;
    builder.set_brate(Bitrate::Kbps64).map_err(failed)?;
    builder.set_quality(Quality::Good).map_err(failed)?;
    builder.build().map_err(failed)
}

impl OggOpusStream {
    fn new() -> Result<Self, MediaError> {
        let failed = |e: switchboard_actors::audio::AudioError| MediaError::Encode(e.to_string());
        let encoder = OpusEncoder::new(SampleRate::Hz48000).map_err(failed)?;
        let pre_skip = u64::from(encoder.lookahead().map_err(failed)?);
        let mut stream = Self {
            writer: PacketWriter::new(Vec::new()),
            encoder,
            pending: Vec::with_capacity(OPUS_FRAME * 2),
            pre_skip,
            samples_in: 0,
            packets_out: 0,
        };
        // RFC 7845 §5.1: identification header on its own page.
        let mut head = Vec::with_capacity(19);
        head.extend_from_slice(b"OpusHead");
        head.push(1); // version
        head.push(1); // channels
        head.extend_from_slice(&(pre_skip as u16).to_le_bytes());
        head.extend_from_slice(&48_000u32.to_le_bytes()); // input sample rate
        head.extend_from_slice(&0i16.to_le_bytes()); // output gain
        head.push(0); // channel mapping family
        stream.write(head, PacketWriteEndInfo::EndPage, 0)?;
        // §5.2: comment header, its own page too.
        let vendor = b"switchboard";
        let mut tags = Vec::with_capacity(8 + 4 + vendor.len() + 4);
        tags.extend_from_slice(b"OpusTags");
        tags.extend_from_slice(&(vendor.len() as u32).to_le_bytes());
        tags.extend_from_slice(vendor);
        tags.extend_from_slice(&0u32.to_le_bytes());
        stream.write(tags, PacketWriteEndInfo::EndPage, 0)?;
        Ok(stream)
    }

    fn write(
        &mut self,
        packet: Vec<u8>,
        end: PacketWriteEndInfo,
        granule: u64,
    ) -> Result<(), MediaError> {
        self.writer
            .write_packet(packet, OGG_SERIAL, end, granule)
            .map_err(|e| MediaError::Encode(format!("Ogg: {e}")))
    }

    fn take_bytes(&mut self) -> Vec<u8> {
        std::mem::take(self.writer.inner_mut())
    }

    fn encode_frame(
        &mut self,
        frame: &[i16],
        end: PacketWriteEndInfo,
        granule: u64,
    ) -> Result<(), MediaError> {
        let packet = self
            .encoder
            .encode(frame)
            .map_err(|e| MediaError::Encode(e.to_string()))?
            .to_vec();
        self.packets_out += 1;
        self.write(packet, end, granule)
    }

    fn push(&mut self, samples: &[f32]) -> Result<Vec<u8>, MediaError> {
        self.pending
            .extend(samples.iter().map(|&s| f32_to_i16_sample(s)));
        self.samples_in += samples.len() as u64;
        let whole_frames = self.pending.len() / OPUS_FRAME;
        for index in 0..whole_frames {
            let frame: Vec<i16> =
                self.pending[index * OPUS_FRAME..(index + 1) * OPUS_FRAME].to_vec();
            // The last frame of a push closes its page so the bytes go out now.
            let end = if index + 1 == whole_frames {
                PacketWriteEndInfo::EndPage
            } else {
                PacketWriteEndInfo::NormalPacket
            };
            let granule = self.pre_skip + (self.packets_out + 1) * OPUS_FRAME as u64;
            self.encode_frame(&frame, end, granule)?;
        }
        self.pending.drain(..whole_frames * OPUS_FRAME);
        Ok(self.take_bytes())
    }

    fn finish(mut self) -> Result<Vec<u8>, MediaError> {
        // The last packet is padded with silence; its granule position tells the decoder how
        // many samples are real (RFC 7845 §4.4), so the padding is trimmed on playback.
        let mut frame = std::mem::take(&mut self.pending);
        frame.resize(OPUS_FRAME, 0);
        let granule = self.pre_skip + self.samples_in;
        self.encode_frame(&frame, PacketWriteEndInfo::EndStream, granule)?;
        Ok(self.take_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::decode::decode;

    fn tone(rate: u32, seconds: f32) -> Vec<f32> {
        (0..(rate as f32 * seconds) as usize)
            .map(|i| (2.0 * std::f32::consts::PI * 300.0 * i as f32 / rate as f32).sin() * 0.4)
            .collect()
    }

    fn rms(samples: &[f32]) -> f32 {
        (samples.iter().map(|s| s * s).sum::<f32>() / samples.len().max(1) as f32).sqrt()
    }

    /// Encodes in uneven chunks as synthesis does, then decodes the result back.
    fn round_trip(format: OutputFormat, extension: &str) -> crate::media::DecodedAudio {
        let rate = format.sample_rate();
        let audio = tone(rate, 1.5);
        let mut encoder = AudioEncoder::new(format).unwrap();
        let mut bytes = Vec::new();
        for chunk in audio.chunks(7_001) {
            bytes.extend(encoder.push(chunk).unwrap());
        }
        bytes.extend(encoder.finish().unwrap());
        decode(&bytes, Some(extension)).unwrap_or_else(|e| panic!("{format:?}: {e}"))
    }

    #[test]
    fn every_streamed_format_decodes_back_to_the_same_length_and_level() {
        for (format, extension) in [
            (OutputFormat::Wav, "wav"),
            (OutputFormat::Mp3, "mp3"),
            (OutputFormat::OggOpus, "ogg"),
        ] {
            let decoded = round_trip(format, extension);
            assert_eq!(decoded.sample_rate, format.sample_rate(), "{format:?}");
            assert_eq!(decoded.channels.len(), 1, "{format:?}");
            let seconds = decoded.duration_seconds();
            assert!((seconds - 1.5).abs() < 0.08, "{format:?}: {seconds} s");
            let level = rms(&decoded.channels[0]);
            assert!(
                (level - 0.4 / 2f32.sqrt()).abs() < 0.05,
                "{format:?}: rms {level}"
            );
        }
    }

    #[test]
    fn whole_clip_wav_has_exact_sizes() {
        let bytes = encode_all(&tone(24_000, 0.5), OutputFormat::Wav).unwrap();
        assert_eq!(bytes.len(), 44 + 12_000 * 2);
        assert_eq!(&bytes[4..8], &((bytes.len() - 8) as u32).to_le_bytes());
        assert_eq!(&bytes[40..44], &(24_000u32).to_le_bytes());
        let decoded = decode(&bytes, Some("wav")).unwrap();
        assert_eq!(decoded.frames(), 12_000);
    }

    #[test]
    fn pcm_is_headerless_little_endian() {
        let bytes = encode_all(&[0.5, -0.5], OutputFormat::Pcm16).unwrap();
        assert_eq!(bytes.len(), 4);
        let first = i16::from_le_bytes([bytes[0], bytes[1]]);
        assert!((first - 16_384).abs() <= 1, "{first}");
    }

    #[test]
    fn an_empty_stream_is_still_a_valid_file() {
        let ogg = AudioEncoder::new(OutputFormat::OggOpus)
            .unwrap()
            .finish()
            .unwrap();
        assert!(ogg.starts_with(b"OggS"));
        let wav = AudioEncoder::new(OutputFormat::Wav)
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(wav.len(), 44);
    }
}
