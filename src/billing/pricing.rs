//! The price list: what one metered operation costs in credits, per `[pricing]`.

use crate::config::PricingConfig;

/// One metered operation and its size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Usage {
    /// Speech synthesis of this many characters.
    Tts { characters: u64 },
    /// Transcription of this many seconds of audio.
    Stt { seconds: f64 },
    /// A language-model call with its prompt and generated tokens.
    Llm {
        input_tokens: u64,
        output_tokens: u64,
    },
    /// Embedding this many tokens into a collection.
    RagEmbed { tokens: u64 },
    /// This many similarity searches.
    RagSearch { searches: u64 },
}

/// The usage breakdown a cost is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tts,
    Stt,
    Llm,
    Rag,
}

impl Usage {
    pub fn kind(&self) -> Kind {
        match self {
            Usage::Tts { .. } => Kind::Tts,
            Usage::Stt { .. } => Kind::Stt,
            Usage::Llm { .. } => Kind::Llm,
            Usage::RagEmbed { .. } | Usage::RagSearch { .. } => Kind::Rag,
        }
    }

    /// What this costs under `prices`, in credits (never negative).
    pub fn credits(&self, prices: &PricingConfig) -> f64 {
        let credits = match *self {
            Usage::Tts { characters } => characters as f64 / 1000.0 * prices.tts_per_1k_characters,
            Usage::Stt { seconds } => seconds.max(0.0) / 60.0 * prices.stt_per_minute,
            Usage::Llm {
                input_tokens,
                output_tokens,
            } => {
                input_tokens as f64 / 1000.0 * prices.llm_per_1k_input_tokens
                    + output_tokens as f64 / 1000.0 * prices.llm_per_1k_output_tokens
            }
            Usage::RagEmbed { tokens } => {
                tokens as f64 / 1000.0 * prices.rag_per_1k_embedded_tokens
            }
            Usage::RagSearch { searches } => searches as f64 * prices.rag_per_search,
        };
        if credits.is_finite() {
            credits.max(0.0)
        } else {
            0.0
        }
    }
}

/// Credits as a plain decimal: integers without a fraction, others to 4 places.
pub fn format_credits(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        let text = format!("{value:.4}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prices() -> PricingConfig {
        PricingConfig {
            tts_per_1k_characters: 1.0,
            stt_per_minute: 2.0,
            llm_per_1k_input_tokens: 0.5,
            llm_per_1k_output_tokens: 1.5,
            rag_per_1k_embedded_tokens: 0.1,
            rag_per_search: 0.01,
        }
    }

    #[test]
    fn each_kind_is_priced_by_its_own_unit() {
        let p = prices();
        assert_eq!(Usage::Tts { characters: 2500 }.credits(&p), 2.5);
        assert_eq!(Usage::Stt { seconds: 90.0 }.credits(&p), 3.0);
        let llm = Usage::Llm {
            input_tokens: 2000,
            output_tokens: 1000,
        };
        assert_eq!(llm.credits(&p), 2.5);
        assert!((Usage::RagEmbed { tokens: 5000 }.credits(&p) - 0.5).abs() < 1e-9);
        assert_eq!(Usage::RagSearch { searches: 3 }.credits(&p), 0.03);
        assert_eq!(Usage::Stt { seconds: -4.0 }.credits(&p), 0.0);
    }
}
