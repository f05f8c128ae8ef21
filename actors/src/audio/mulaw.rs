//! G.711 mu-law, the payload codec of telephony media streams (8 kHz mono, one byte per
//! sample). Decoding is a 256-entry table; encoding is the ITU-T G.711 bias/segment method
//! with a 256-entry segment table. Both are exact G.711 (no zero-code trap), so bytes produced
//! here interoperate with any carrier that speaks PCMU.

use super::error::{check_capacity, AudioError};

/// Added to the magnitude before segment search. 0x84 = 33 << 2: G.711 defines mu-law on a
/// 14-bit scale where the segment boundaries sit at (2^(n+5) - 33); on the 16-bit scale used
/// here that offset becomes 132, which makes every segment start at a power of two.
const BIAS: i32 = 0x84;

/// Largest magnitude that still encodes without overflowing the top segment: 32767 - BIAS,
/// so that the biased magnitude stays within 16 bits.
const CLIP: i32 = 32635;

/// Mu-law byte for digital silence (positive zero).
pub const SILENCE: u8 = 0xFF;

const fn decode_one(code: u8) -> i16 {
    // Codes are transmitted inverted so that idle lines carry mostly one bits.
    let u = !code;
    let exponent = ((u >> 4) & 0x07) as i32;
    let mantissa = (u & 0x0F) as i32;
    let magnitude = (((mantissa << 3) + BIAS) << exponent) - BIAS;
    if u & 0x80 != 0 {
        -magnitude as i16
    } else {
        magnitude as i16
    }
}

const fn build_decode_table() -> [i16; 256] {
    let mut table = [0i16; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = decode_one(i as u8);
        i += 1;
    }
    table
}

/// Segment number for `(biased_magnitude >> 7)`: the index of the highest set bit, i.e. the
/// position of the biased magnitude among the eight power-of-two segments.
const fn build_segment_table() -> [u8; 256] {
    let mut table = [0u8; 256];
    let mut i = 1;
    while i < 256 {
        table[i] = (7 - (i as u8).leading_zeros()) as u8;
        i += 1;
    }
    table
}

/// Linear PCM value of every mu-law code.
static DECODE_TABLE: [i16; 256] = build_decode_table();
static SEGMENT_TABLE: [u8; 256] = build_segment_table();

/// Decodes one mu-law byte to a 16-bit linear sample.
#[inline]
pub fn decode(code: u8) -> i16 {
    DECODE_TABLE[code as usize]
}

/// Encodes one 16-bit linear sample to a mu-law byte.
#[inline]
pub fn encode(sample: i16) -> u8 {
    let sample = sample as i32;
    let sign: u8 = if sample < 0 { 0x80 } else { 0x00 };
    // Widened to i32 first so that -32768 has a magnitude.
    let magnitude = sample.abs().min(CLIP) + BIAS;
    let exponent = SEGMENT_TABLE[((magnitude >> 7) & 0xFF) as usize];
    let mantissa = ((magnitude >> (exponent + 3)) & 0x0F) as u8;
    !(sign | (exponent << 4) | mantissa)
}

/// Decodes `input` into `out[..input.len()]` and returns the number of samples written.
pub fn decode_into(input: &[u8], out: &mut [i16]) -> Result<usize, AudioError> {
    check_capacity(input.len(), out.len())?;
    for (o, &code) in out.iter_mut().zip(input) {
        *o = DECODE_TABLE[code as usize];
    }
    Ok(input.len())
}

/// Encodes `input` into `out[..input.len()]` and returns the number of bytes written.
pub fn encode_into(input: &[i16], out: &mut [u8]) -> Result<usize, AudioError> {
    check_capacity(input.len(), out.len())?;
    for (o, &sample) in out.iter_mut().zip(input) {
        *o = encode(sample);
    }
    Ok(input.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes() {
        assert_eq!(decode(0xFF), 0);
        assert_eq!(decode(0x7F), 0, "0x7F is negative zero");
        assert_eq!(decode(0x80), 32124);
        assert_eq!(decode(0x00), -32124);
        assert_eq!(decode(0xFE), 8);
        assert_eq!(decode(0x7E), -8);
        assert_eq!(encode(0), 0xFF);
        assert_eq!(encode(32124), 0x80);
        assert_eq!(encode(-32124), 0x00);
        assert_eq!(encode(i16::MAX), 0x80);
        assert_eq!(encode(i16::MIN), 0x00);
        // Worked example: 1000 + 132 = 1132 lies in segment 3 (1024..2048), mantissa 1.
        assert_eq!(encode(1000), 0xCE);
        assert_eq!(decode(0xCE), 988);
    }

    #[test]
    fn every_code_survives_decode_then_encode() {
        for code in 0..=255u8 {
            let back = encode(decode(code));
            if code == 0x7F {
                // Negative zero decodes to 0, which G.711 encodes as positive zero.
                assert_eq!(back, 0xFF);
            } else {
                assert_eq!(back, code, "code {code:#04x}");
            }
        }
    }

    #[test]
    fn decode_table_is_monotonic_per_sign() {
        // Positive codes 0xFF..=0x80 grow in magnitude, negative 0x7F..=0x00 likewise.
        for code in 0x81..=0xFFu8 {
            assert!(decode(code - 1) > decode(code));
        }
        for code in 0x01..=0x7Fu8 {
            assert!(decode(code - 1) < decode(code));
        }
    }

    #[test]
    fn round_trip_error_is_within_half_a_step() {
        for x in i16::MIN..=i16::MAX {
            let y = decode(encode(x)) as i32;
            let x = x as i32;
            // The step of the segment holding |x| is 2^(seg+3) and decode returns the middle of
            // the step, so the error is at most 2^(seg+2) <= (|x| + BIAS) / 32, plus clipping.
            let bound = (x.abs() + BIAS) / 32;
            assert!((y - x).abs() <= bound, "x={x} y={y} bound={bound}");
            assert!(y.signum() * x.signum() >= 0, "sign flipped for {x}");
        }
    }

    #[test]
    fn slice_apis_match_scalar_and_check_capacity() {
        let pcm: Vec<i16> = (0..160)
            .map(|i| ((i * 409) % 65536 - 32768) as i16)
            .collect();
        let mut bytes = [0u8; 160];
        assert_eq!(encode_into(&pcm, &mut bytes).expect("capacity is 160"), 160);
        for (b, s) in bytes.iter().zip(&pcm) {
            assert_eq!(*b, encode(*s));
        }
        let mut back = [0i16; 160];
        assert_eq!(
            decode_into(&bytes, &mut back).expect("capacity is 160"),
            160
        );
        for (b, s) in back.iter().zip(&bytes) {
            assert_eq!(*b, decode(*s));
        }
        let mut short = [0i16; 10];
        assert!(matches!(
            decode_into(&bytes, &mut short),
            Err(AudioError::BufferTooSmall {
                needed: 160,
                available: 10
            })
        ));
        let mut short = [0u8; 10];
        assert!(encode_into(&pcm, &mut short).is_err());
    }

    #[test]
    fn sine_snr_matches_g711() {
        // A full-scale-ish tone through mu-law should keep roughly 38 dB SNR.
        let pcm: Vec<i16> = (0..8000)
            .map(|n| {
                (16000.0 * (2.0 * std::f64::consts::PI * 1004.0 * n as f64 / 8000.0).sin()) as i16
            })
            .collect();
        let (mut sig, mut err) = (0f64, 0f64);
        for &x in &pcm {
            let y = decode(encode(x));
            sig += (x as f64).powi(2);
            err += (x as f64 - y as f64).powi(2);
        }
        let snr = 10.0 * (sig / err).log10();
        assert!(snr > 35.0, "snr {snr:.1} dB");
    }
}
