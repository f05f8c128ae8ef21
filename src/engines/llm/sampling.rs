//! Choosing the next token from the logits: a repetition penalty, then greedy decoding at
//! temperature 0, else temperature scaling and nucleus (top-p) sampling.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Candidates considered by nucleus sampling: the top-p mass of a chat model's distribution
/// practically always lies within them, and it spares sorting the whole vocabulary per token.
const MAX_CANDIDATES: usize = 256;

/// How the next token is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplingParams {
    /// 0 (or less) decodes greedily; otherwise logits are divided by it.
    pub temperature: f32,
    /// Nucleus sampling keeps the most likely tokens up to this probability mass.
    pub top_p: f32,
    /// Logits of tokens seen in the last `repeat_window` tokens are pushed down by this factor
    /// (1.0 disables it). Small models loop without it.
    pub repeat_penalty: f32,
    pub repeat_window: usize,
    /// Fixed seed for reproducible sampling; `None` seeds from the OS.
    pub seed: Option<u64>,
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_p: 0.9,
            repeat_penalty: 1.1,
            repeat_window: 64,
            seed: None,
        }
    }
}

/// Picks tokens; holds the random state of one generation.
pub struct Sampler {
    params: SamplingParams,
    rng: StdRng,
    candidates: Vec<(u32, f32)>,
}

impl Sampler {
    pub fn new(params: SamplingParams) -> Self {
        let rng = match params.seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_os_rng(),
        };
        Self {
            params,
            rng,
            candidates: Vec::with_capacity(MAX_CANDIDATES),
        }
    }

    /// The next token given the logits and the tokens so far (for the repetition penalty).
    /// `logits` is modified in place.
    pub fn sample(&mut self, logits: &mut [f32], history: &[u32]) -> u32 {
        let p = self.params.repeat_penalty;
        if p != 1.0 && p > 0.0 {
            let start = history.len().saturating_sub(self.params.repeat_window);
            let mut seen = Vec::with_capacity(history.len() - start);
            for &token in &history[start..] {
                if seen.contains(&token) {
                    continue;
                }
                seen.push(token);
                if let Some(logit) = logits.get_mut(token as usize) {
                    *logit = if *logit >= 0.0 {
                        *logit / p
                    } else {
                        *logit * p
                    };
                }
            }
        }
        if self.params.temperature <= 0.0 || !self.params.temperature.is_finite() {
            return argmax(logits);
        }
        self.nucleus(logits)
    }

    fn nucleus(&mut self, logits: &[f32]) -> u32 {
        let candidates = &mut self.candidates;
        candidates.clear();
        candidates.extend(
            logits
                .iter()
                .enumerate()
                .filter(|(_, l)| l.is_finite())
                .map(|(i, &l)| (i as u32, l)),
        );
        if candidates.is_empty() {
            return 0;
        }
        let by_logit = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1);
        if candidates.len() > MAX_CANDIDATES {
            candidates.select_nth_unstable_by(MAX_CANDIDATES - 1, by_logit);
            candidates.truncate(MAX_CANDIDATES);
        }
        candidates.sort_unstable_by(by_logit);
        let max = candidates[0].1;
        let t = self.params.temperature;
        let mut total = 0.0f32;
        for candidate in candidates.iter_mut() {
            candidate.1 = ((candidate.1 - max) / t).exp();
            total += candidate.1;
        }
        // Keep the smallest head whose mass reaches top_p.
        let top_p = self.params.top_p.clamp(f32::MIN_POSITIVE, 1.0);
        let mut kept_mass = 0.0f32;
        let mut kept = 0;
        for candidate in candidates.iter() {
            kept_mass += candidate.1 / total;
            kept += 1;
            if kept_mass >= top_p {
                break;
            }
        }
        let head = &candidates[..kept];
        let mass: f32 = head.iter().map(|c| c.1).sum();
        let mut draw = self.rng.random::<f32>() * mass;
        for candidate in head {
            draw -= candidate.1;
            if draw <= 0.0 {
                return candidate.0;
            }
        }
        head[head.len() - 1].0
    }
}

fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0usize;
    let mut best_value = f32::NEG_INFINITY;
    for (i, &v) in logits.iter().enumerate() {
        if v > best_value {
            best = i;
            best_value = v;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(temperature: f32, top_p: f32) -> SamplingParams {
        SamplingParams {
            temperature,
            top_p,
            repeat_penalty: 1.0,
            repeat_window: 0,
            seed: Some(7),
        }
    }

    #[test]
    fn temperature_zero_is_argmax() {
        let mut sampler = Sampler::new(params(0.0, 0.9));
        let mut logits = vec![0.1, 2.0, 1.9, -3.0];
        assert_eq!(sampler.sample(&mut logits, &[]), 1);
    }

    #[test]
    fn top_p_excludes_the_tail() {
        // Token 0 holds ~0.88 of the mass: with top_p 0.5 only it can be drawn.
        let mut sampler = Sampler::new(params(1.0, 0.5));
        for _ in 0..200 {
            let mut logits = vec![4.0, 2.0, 0.0, 0.0];
            assert_eq!(sampler.sample(&mut logits, &[]), 0);
        }
    }

    #[test]
    fn sampling_reaches_every_kept_token() {
        let mut sampler = Sampler::new(params(1.0, 1.0));
        let mut seen = [false; 3];
        for _ in 0..500 {
            let mut logits = vec![1.0, 1.0, 1.0];
            seen[sampler.sample(&mut logits, &[]) as usize] = true;
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn the_repeat_penalty_demotes_recent_tokens() {
        let mut sampler = Sampler::new(SamplingParams {
            repeat_penalty: 2.0,
            repeat_window: 8,
            ..params(0.0, 1.0)
        });
        let mut logits = vec![3.0, 2.0];
        assert_eq!(sampler.sample(&mut logits, &[0]), 1);
    }
}
