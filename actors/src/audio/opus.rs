//! Opus for the browser WebSocket path: mono 20 ms frames at 48 kHz (what browsers send) or
//! 16 kHz (what speech models want). [`OpusEncoder`] and [`OpusDecoder`] own their libopus
//! state and scratch buffers, so encoding and decoding a frame allocates nothing.

use audiopus::coder::{Decoder, Encoder};
use audiopus::packet::Packet;
use audiopus::{Application, Bitrate, Channels, MutSignals, Signal};

use super::error::{check_frame_len, AudioError};
use super::pcm::{frame_samples, FrameDuration, SampleRate};

/// libopus's encoder documentation recommends a 4000-byte output buffer: enough for any
/// packet it will produce.
const MAX_PACKET_BYTES: usize = 4000;

/// Longest Opus packet duration (RFC 6716: up to 120 ms of audio per packet). The decoder's
/// buffer is sized for it so a peer sending long packets gets decoded, not rejected.
const MAX_PACKET_MS: usize = 120;

/// Default encoder bitrate. Opus's recommended settings put wideband speech at 16-20 kbit/s
/// and fullband speech at 28-40 kbit/s; 24 kbit/s leaves headroom over wideband while keeping
/// a browser stream at 3 KB/s.
pub const DEFAULT_BITRATE_BPS: i32 = 24_000;

fn opus_rate(rate: SampleRate) -> audiopus::SampleRate {
    match rate {
        SampleRate::Hz8000 => audiopus::SampleRate::Hz8000,
        SampleRate::Hz16000 => audiopus::SampleRate::Hz16000,
        SampleRate::Hz24000 => audiopus::SampleRate::Hz24000,
        SampleRate::Hz48000 => audiopus::SampleRate::Hz48000,
    }
}

/// Encodes mono PCM frames of one fixed size into Opus packets.
#[derive(Debug)]
pub struct OpusEncoder {
    encoder: Encoder,
    rate: SampleRate,
    frame_len: usize,
    packet: Vec<u8>,
}

impl OpusEncoder {
    /// An encoder for 20 ms mono voice frames at `rate`, at [`DEFAULT_BITRATE_BPS`].
    pub fn new(rate: SampleRate) -> Result<Self, AudioError> {
        Self::with_frame(rate, FrameDuration::Ms20)
    }

    /// An encoder for mono voice frames of `frame` duration at `rate` (Opus accepts 10 and 20 ms
    /// frames; 30 ms is not an Opus frame size and is refused).
    pub fn with_frame(rate: SampleRate, frame: FrameDuration) -> Result<Self, AudioError> {
        if frame == FrameDuration::Ms30 {
            return Err(AudioError::Unsupported("Opus has no 30 ms frame size"));
        }
        let mut encoder = Encoder::new(opus_rate(rate), Channels::Mono, Application::Voip)?;
        encoder.set_bitrate(Bitrate::BitsPerSecond(DEFAULT_BITRATE_BPS))?;
        encoder.set_signal(Signal::Voice)?;
        Ok(Self {
            encoder,
            rate,
            frame_len: frame_samples(rate, frame),
            packet: vec![0; MAX_PACKET_BYTES],
        })
    }

    /// Sets the target bitrate in bits per second (libopus accepts 500..=512000).
    pub fn set_bitrate(&mut self, bps: i32) -> Result<(), AudioError> {
        self.encoder.set_bitrate(Bitrate::BitsPerSecond(bps))?;
        Ok(())
    }

    /// Enables in-band forward error correction, tuned for `loss_percent` expected packet loss.
    pub fn set_fec(&mut self, loss_percent: u8) -> Result<(), AudioError> {
        self.encoder.set_inband_fec(loss_percent > 0)?;
        self.encoder.set_packet_loss_perc(loss_percent.min(100))?;
        Ok(())
    }

    /// Sample rate of the PCM this encoder takes.
    pub fn rate(&self) -> SampleRate {
        self.rate
    }

    /// Samples per frame passed to [`encode`](Self::encode).
    pub fn frame_len(&self) -> usize {
        self.frame_len
    }

    /// Samples of look-ahead the encoder adds, at its input rate.
    pub fn lookahead(&self) -> Result<u32, AudioError> {
        Ok(self.encoder.lookahead()?)
    }

    /// Encodes one frame; the returned packet borrows the encoder's scratch buffer and is valid
    /// until the next call.
    pub fn encode(&mut self, pcm: &[i16]) -> Result<&[u8], AudioError> {
        check_frame_len(self.frame_len, pcm.len())?;
        let len = self.encoder.encode(pcm, &mut self.packet)?;
        Ok(&self.packet[..len])
    }
}

/// Decodes Opus packets into mono PCM at a fixed rate, concealing lost packets on request.
#[derive(Debug)]
pub struct OpusDecoder {
    decoder: Decoder,
    rate: SampleRate,
    pcm: Vec<i16>,
    last_frame_len: usize,
}

impl OpusDecoder {
    /// A mono decoder producing PCM at `rate` (any packet is decoded at this rate, whatever
    /// rate it was encoded at).
    pub fn new(rate: SampleRate) -> Result<Self, AudioError> {
        let decoder = Decoder::new(opus_rate(rate), Channels::Mono)?;
        Ok(Self {
            decoder,
            rate,
            pcm: vec![0; rate.samples_per_ms() * MAX_PACKET_MS],
            last_frame_len: frame_samples(rate, FrameDuration::Ms20),
        })
    }

    /// Output sample rate.
    pub fn rate(&self) -> SampleRate {
        self.rate
    }

    /// Decodes one packet; the returned samples borrow the decoder's scratch buffer and are
    /// valid until the next call. Malformed packets are an error, never a panic.
    pub fn decode(&mut self, packet: &[u8]) -> Result<&[i16], AudioError> {
        let packet = Packet::try_from(packet)?;
        let out = MutSignals::try_from(&mut self.pcm[..])?;
        let n = self.decoder.decode(Some(packet), out, false)?;
        self.last_frame_len = n;
        Ok(&self.pcm[..n])
    }

    /// Produces concealment audio for one lost packet, as long as the last decoded one.
    pub fn conceal_lost(&mut self) -> Result<&[i16], AudioError> {
        let len = self.last_frame_len;
        let out = MutSignals::try_from(&mut self.pcm[..len])?;
        let n = self.decoder.decode(None, out, false)?;
        Ok(&self.pcm[..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    fn sine(rate: SampleRate, freq: f64, amp: f64, len: usize) -> Vec<i16> {
        (0..len)
            .map(|n| (amp * (2.0 * PI * freq * n as f64 / rate.hz() as f64).sin()) as i16)
            .collect()
    }

    /// Best normalised cross-correlation of `b` against `a` over lags up to `max_lag`.
    fn best_correlation(a: &[i16], b: &[i16], max_lag: usize) -> (usize, f64) {
        let mut best = (0, f64::MIN);
        for lag in 0..=max_lag {
            let n = a.len().min(b.len() - lag);
            let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
            for i in 0..n {
                let (x, y) = (a[i] as f64, b[i + lag] as f64);
                ab += x * y;
                aa += x * x;
                bb += y * y;
            }
            let c = ab / (aa.sqrt() * bb.sqrt()).max(1.0);
            if c > best.1 {
                best = (lag, c);
            }
        }
        best
    }

    fn round_trip(rate: SampleRate) {
        let mut enc = OpusEncoder::new(rate).expect("libopus accepts mono at this rate");
        let mut dec = OpusDecoder::new(rate).expect("libopus accepts mono at this rate");
        let frame = enc.frame_len();
        let input = sine(rate, 440.0, 10_000.0, frame * 50);
        let mut output = Vec::with_capacity(input.len());
        let mut bytes = 0;
        for chunk in input.chunks_exact(frame) {
            let packet = enc.encode(chunk).expect("frame sized").to_vec();
            bytes += packet.len();
            let pcm = dec.decode(&packet).expect("packet from our encoder");
            assert_eq!(pcm.len(), frame);
            output.extend_from_slice(pcm);
        }
        // 24 kbit/s over one second of audio, with slack for the encoder's rate control.
        assert!(bytes < 4_500, "{bytes} bytes for 1 s");

        let lookahead = enc.lookahead().expect("lookahead is always readable") as usize;
        let (lag, corr) = best_correlation(&input[frame..], &output[frame..], 2 * lookahead + 10);
        assert!(corr > 0.95, "{rate:?}: correlation {corr} at lag {lag}");
        let energy = |s: &[i16]| s.iter().map(|&x| (x as f64).powi(2)).sum::<f64>();
        let ratio = energy(&output[frame..]) / energy(&input[frame..]);
        assert!(
            (0.7..1.3).contains(&ratio),
            "{rate:?}: energy ratio {ratio}"
        );
    }

    #[test]
    fn sine_round_trips_at_48k() {
        round_trip(SampleRate::Hz48000);
    }

    #[test]
    fn sine_round_trips_at_16k() {
        round_trip(SampleRate::Hz16000);
    }

    #[test]
    fn decoder_rate_is_independent_of_encoder_rate() {
        let mut enc = OpusEncoder::new(SampleRate::Hz48000).expect("valid");
        let mut dec = OpusDecoder::new(SampleRate::Hz16000).expect("valid");
        let input = sine(SampleRate::Hz48000, 300.0, 8000.0, 960);
        let packet = enc.encode(&input).expect("frame sized").to_vec();
        assert_eq!(dec.decode(&packet).expect("valid packet").len(), 320);
        assert_eq!(dec.conceal_lost().expect("concealment").len(), 320);
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut enc = OpusEncoder::new(SampleRate::Hz16000).expect("valid");
        assert!(matches!(
            enc.encode(&[0; 100]),
            Err(AudioError::FrameLength {
                expected: 320,
                actual: 100
            })
        ));
        assert!(OpusEncoder::with_frame(SampleRate::Hz16000, FrameDuration::Ms30).is_err());
        let mut dec = OpusDecoder::new(SampleRate::Hz16000).expect("valid");
        assert!(dec.decode(&[]).is_err());
        // A TOC byte announcing a code-3 packet with a frame count but no frames.
        assert!(dec.decode(&[0xFF, 0x7F]).is_err());
    }
}
