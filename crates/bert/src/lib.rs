//! The BERT encoder behind zenmode's `--embedding-model`, written out for
//! one short sequence at a time.
//!
//! A crate of its own so that every build profile can compile it at full
//! optimization while zenmode itself compiles faster (Cargo.toml's
//! `[profile.*.package.zenmode-bert]`): this is the one hot loop, and the
//! CI profile's opt-level 1 with overflow checks ran it at half speed. It
//! knows nothing of zenmode; zenmode's `select::transformer` tokenizes,
//! caches and calls [`Bert::mean_output`].
//!
//! Select encodes one request per call, a dozen to a few dozen tokens, and
//! the budget over a large catalog is 5 ms. candle's general BERT
//! spent 15 to 18 ms there: three quarters in its f32 matrix product, which
//! packs and splits work sized for large operands, the rest in creating a
//! tensor and a strided copy per operation. Here the weights of each linear
//! layer are packed once, at load, for the arithmetic the machine does best
//! ([`Arithmetic`], `linear.rs`):
//! - on Intel AMX (`amx.rs`), bfloat16 tiles with f32 sums: a 48-token
//!   request in about 3.2 ms on one core, against 8.4 ms for the f32
//!   products on two;
//! - elsewhere, f32 products over panels of half-float weights, walked
//!   once for a few tokens at a time with their sums in registers
//!   (AVX-512 or AVX2 with FMA where the CPU has them, chosen at run time;
//!   plain loops otherwise).
//!
//! Everything else, layer norms, attention over a few dozen tokens and
//! GELU, is a loop over preallocated slices written so that the compiler
//! vectorizes it.
//!
//! With f32 the arithmetic is the model's (no quantization): only the order
//! of additions differs. bfloat16 rounds the weights and each layer's
//! inputs to 8 bits of mantissa. Both give vectors within a cosine of
//! 0.9999 of the reference implementation's and of each other (zenmode's
//! `tests/transformer.rs`).

mod amx;
mod linear;
mod weights;

pub use linear::Arithmetic;
use linear::Linear;
use safetensors::SafeTensors;
use serde::Deserialize;
pub(crate) use weights::Weights;

/// Values in one AVX-512 register: the attention's loops work sixteen at a
/// time.
const LANES: usize = 16;

/// What the encoder reads from the model's `config.json`; the other fields
/// of a BERT configuration (dropout, initializer range ...) do not matter
/// for encoding.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_activation")]
    pub hidden_act: Activation,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
}

fn default_activation() -> Activation {
    Activation::Gelu
}

fn default_type_vocab() -> usize {
    2
}

fn default_layer_norm_eps() -> f64 {
    1e-12
}

/// BERT's activations, by the names configurations use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Activation {
    #[serde(rename = "gelu")]
    Gelu,
    #[serde(
        alias = "gelu_new",
        alias = "gelu_pytorch_tanh",
        rename = "gelu_approximate"
    )]
    GeluApproximate,
    #[serde(rename = "relu")]
    Relu,
}

struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    fn load(weights: &Weights<'_>, prefix: &str, size: usize, eps: f64) -> Result<Self, String> {
        Ok(LayerNorm {
            weight: weights.get(&format!("{prefix}.weight"), &[size])?,
            bias: weights.get(&format!("{prefix}.bias"), &[size])?,
            eps: eps as f32,
        })
    }

    /// Normalizes each row of `x` in place.
    fn apply(&self, x: &mut [f32]) {
        layer_norm(x, &self.weight, &self.bias, self.eps);
    }
}

struct Layer {
    /// Query, key and value, stacked.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// A BERT encoder (all-MiniLM-L6-v2, or any of its shape) ready to encode
/// one sequence at a time.
pub struct Bert {
    /// Token embeddings, one row of `hidden` values per vocabulary entry.
    words: Vec<f32>,
    /// Position embeddings plus the type-0 embedding (every token here is
    /// of type 0), one row per position.
    positions: Vec<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    activation: Activation,
    arithmetic: Arithmetic,
}

/// Scratch space of one forward pass.
#[derive(Default)]
struct Buffers {
    qkv: Vec<f32>,
    context: Vec<f32>,
    projected: Vec<f32>,
    intermediate: Vec<f32>,
    scores: Vec<f32>,
}

impl Bert {
    /// Reads the model from the bytes of its `model.safetensors`, its
    /// layers packed for `arithmetic`; the caller has checked that
    /// `config` is a usable shape. [`Arithmetic::Tiles`] falls back to f32
    /// where the tiles are not available, and for layers whose shape they
    /// do not fit.
    pub fn load(bytes: &[u8], config: &Config, arithmetic: Arithmetic) -> Result<Self, String> {
        Self::load_with_overlay(bytes, None, config, arithmetic)
    }

    /// [`Bert::load`], with the tensors an `overlay` safetensors file holds
    /// (a fine-tuned layer, say) read from it instead of from `bytes`.
    /// Every tensor of the overlay must be one the model reads, of the same
    /// shape: a file made for another model is refused, not half applied.
    pub fn load_with_overlay(
        bytes: &[u8],
        overlay: Option<&[u8]>,
        config: &Config,
        arithmetic: Arithmetic,
    ) -> Result<Self, String> {
        let arithmetic = if arithmetic == Arithmetic::Tiles && !amx::available() {
            Arithmetic::F32
        } else {
            arithmetic
        };
        let file = SafeTensors::deserialize(bytes)
            .map_err(|error| format!("not a safetensors file: {error}"))?;
        // Checkpoints saved from a `BertModel` name their tensors
        // `embeddings...`; those saved from a task model put `bert.` first.
        let prefix = if file.tensor("embeddings.word_embeddings.weight").is_ok() {
            ""
        } else {
            "bert."
        };
        let overlay = overlay
            .map(SafeTensors::deserialize)
            .transpose()
            .map_err(|error| format!("the overlay is not a safetensors file: {error}"))?;
        let weights = Weights::new(file, prefix, overlay);
        let hidden = config.hidden_size;
        let words = weights.get(
            "embeddings.word_embeddings.weight",
            &[config.vocab_size, hidden],
        )?;
        let mut positions = weights.get(
            "embeddings.position_embeddings.weight",
            &[config.max_position_embeddings, hidden],
        )?;
        let token_types = weights.get(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, hidden],
        )?;
        for row in positions.chunks_exact_mut(hidden) {
            for (p, t) in row.iter_mut().zip(&token_types[..hidden]) {
                *p += t;
            }
        }
        let embedding_norm = LayerNorm::load(
            &weights,
            "embeddings.LayerNorm",
            hidden,
            config.layer_norm_eps,
        )?;
        let layers = (0..config.num_hidden_layers)
            .map(|index| {
                let at = |name: &str| format!("encoder.layer.{index}.{name}");
                Ok(Layer {
                    qkv: Linear::load(
                        &weights,
                        &[
                            at("attention.self.query"),
                            at("attention.self.key"),
                            at("attention.self.value"),
                        ],
                        hidden,
                        hidden,
                        arithmetic,
                    )?,
                    attention_out: Linear::load(
                        &weights,
                        &[at("attention.output.dense")],
                        hidden,
                        hidden,
                        arithmetic,
                    )?,
                    attention_norm: LayerNorm::load(
                        &weights,
                        &at("attention.output.LayerNorm"),
                        hidden,
                        config.layer_norm_eps,
                    )?,
                    intermediate: Linear::load(
                        &weights,
                        &[at("intermediate.dense")],
                        hidden,
                        config.intermediate_size,
                        arithmetic,
                    )?,
                    output: Linear::load(
                        &weights,
                        &[at("output.dense")],
                        config.intermediate_size,
                        hidden,
                        arithmetic,
                    )?,
                    output_norm: LayerNorm::load(
                        &weights,
                        &at("output.LayerNorm"),
                        hidden,
                        config.layer_norm_eps,
                    )?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        weights.overlay_fully_read()?;
        Ok(Bert {
            words,
            positions,
            embedding_norm,
            layers,
            hidden,
            heads: config.num_attention_heads,
            activation: config.hidden_act,
            arithmetic,
        })
    }

    /// The arithmetic the encoder was loaded with: vectors computed with
    /// one differ from the other's in the last digits, so a cache of them
    /// names it.
    pub fn arithmetic(&self) -> Arithmetic {
        self.arithmetic
    }

    /// The mean of the encoder's output over the tokens `ids` (one
    /// sequence, type 0, no padding), not normalized; `None` if the
    /// sequence is empty, longer than the model's positions, or names a
    /// token the vocabulary lacks.
    pub fn mean_output(&self, ids: &[u32]) -> Option<Vec<f32>> {
        let hidden = self.hidden;
        let tokens = ids.len();
        if tokens == 0 || tokens * hidden > self.positions.len() {
            return None;
        }
        let mut x = Vec::with_capacity(tokens * hidden);
        for (id, position) in ids.iter().zip(self.positions.chunks_exact(hidden)) {
            let word = self
                .words
                .get(*id as usize * hidden..(*id as usize + 1) * hidden)?;
            x.extend(word.iter().zip(position).map(|(w, p)| w + p));
        }
        self.embedding_norm.apply(&mut x);
        // Each thread keeps its scratch space between sequences: freed,
        // its pages went back to the system and came back zeroed, a twentieth
        // of a request's time.
        thread_local! {
            static BUFFERS: std::cell::RefCell<Buffers> = std::cell::RefCell::default();
        }
        BUFFERS.with_borrow_mut(|buffers| {
            for layer in &self.layers {
                self.layer(layer, &mut x, tokens, buffers);
            }
        });
        let mut mean = vec![0.0f32; hidden];
        for row in x.chunks_exact(hidden) {
            for (m, v) in mean.iter_mut().zip(row) {
                *m += v;
            }
        }
        for m in &mut mean {
            *m /= tokens as f32;
        }
        Some(mean)
    }

    fn layer(&self, layer: &Layer, x: &mut [f32], tokens: usize, b: &mut Buffers) {
        layer.qkv.forward(x, tokens, &mut b.qkv);
        self.attention(tokens, b);
        layer
            .attention_out
            .forward(&b.context, tokens, &mut b.projected);
        for (v, p) in x.iter_mut().zip(&b.projected) {
            *v += p;
        }
        layer.attention_norm.apply(x);
        layer.intermediate.forward(x, tokens, &mut b.intermediate);
        match self.activation {
            Activation::Gelu => gelu(&mut b.intermediate),
            other => b
                .intermediate
                .iter_mut()
                .for_each(|v| *v = activate(other, *v)),
        }
        layer
            .output
            .forward(&b.intermediate, tokens, &mut b.projected);
        for (v, p) in x.iter_mut().zip(&b.projected) {
            *v += p;
        }
        layer.output_norm.apply(x);
    }

    /// Self-attention of every head over every token, from the stacked
    /// query, key and value rows in `b.qkv` into `b.context`. No token is
    /// masked: one sequence, no padding.
    fn attention(&self, tokens: usize, b: &mut Buffers) {
        b.context.clear();
        b.context.resize(tokens * self.hidden, 0.0);
        b.scores.resize(
            tokens.div_ceil(LANES) * LANES * (1 + self.hidden / self.heads),
            0.0,
        );
        attention(
            &b.qkv,
            &mut b.context,
            &mut b.scores,
            tokens,
            self.hidden,
            self.heads,
        );
    }
}

/// Defines `$name`, which runs `$body` compiled for the widest vector
/// instructions this CPU has: the loops below are written so that the
/// compiler vectorizes them, and x86-64's baseline has only SSE2.
macro_rules! widest {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) => $body:ident) => {
        $(#[$doc])*
        fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,fma")]
                unsafe fn wide($($arg: $ty),*) {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn medium($($arg: $ty),*) {
                    $body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // Safety: the CPU has the features `wide` is built for.
                    return unsafe { wide($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // Safety: as above, for `medium`.
                    return unsafe { medium($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

widest! {
    /// Self-attention of every head over every token, from the stacked
    /// query, key and value rows in `qkv` into `context` (zeroed, one row
    /// per token). No token is masked: one sequence, no padding.
    fn attention(
        qkv: &[f32],
        context: &mut [f32],
        scores: &mut [f32],
        tokens: usize,
        hidden: usize,
        heads: usize
    ) => attention_body
}

#[inline(always)]
fn attention_body(
    qkv: &[f32],
    context: &mut [f32],
    scratch: &mut [f32],
    tokens: usize,
    hidden: usize,
    heads: usize,
) {
    let width = hidden / heads;
    let scale = 1.0 / (width as f32).sqrt();
    let stride = 3 * hidden;
    // A head's keys transposed (`width` rows of `lanes` keys, zero past
    // the last), so that sixteen of a query's scores are sixteen sums kept
    // in one register over the head's width, with no sum across a
    // register per score; the scores past the last key are -inf, nothing
    // after the softmax.
    let lanes = tokens.div_ceil(LANES) * LANES;
    let (scores, keys) = scratch[..lanes * (1 + width)].split_at_mut(lanes);
    keys.fill(0.0);
    for head in 0..heads {
        let offset = head * width;
        for key in 0..tokens {
            let k = &qkv[key * stride + hidden + offset..][..width];
            for (d, value) in k.iter().enumerate() {
                keys[d * lanes + key] = *value * scale;
            }
        }
        for query in 0..tokens {
            let q = &qkv[query * stride + offset..][..width];
            let mut start = 0;
            while start < lanes {
                let at = &mut scores[start..];
                start += match (lanes - start) / LANES {
                    1 => key_scores::<1>(q, keys, lanes, start, at),
                    2 => key_scores::<2>(q, keys, lanes, start, at),
                    3 => key_scores::<3>(q, keys, lanes, start, at),
                    _ => key_scores::<4>(q, keys, lanes, start, at),
                };
            }
            scores[tokens..].fill(f32::NEG_INFINITY);
            let mut maxima = [f32::NEG_INFINITY; LANES];
            for chunk in scores.chunks_exact(LANES) {
                for (m, s) in maxima.iter_mut().zip(chunk) {
                    *m = if *s > *m { *s } else { *m };
                }
            }
            let max = maxima.iter().fold(f32::NEG_INFINITY, |m, s| m.max(*s));
            let mut totals = [0.0f32; LANES];
            for chunk in scores.chunks_exact_mut(LANES) {
                for (t, s) in totals.iter_mut().zip(chunk) {
                    *s = exp(*s - max);
                    *t += *s;
                }
            }
            let inverse = 1.0 / totals.iter().sum::<f32>();
            let out = &mut context[query * hidden + offset..][..width];
            // Sixteen of the head's outputs at a time, summed over the
            // values in registers.
            let values = &qkv[2 * hidden + offset..];
            if width == 2 * LANES {
                let sums = value_sums::<{ 2 * LANES }>(&scores[..tokens], values, stride, 0);
                for (o, sum) in out.iter_mut().zip(sums) {
                    *o = sum * inverse;
                }
                continue;
            }
            let mut pieces = out.chunks_exact_mut(LANES);
            for (piece, out) in pieces.by_ref().enumerate() {
                let sums = value_sums::<LANES>(&scores[..tokens], values, stride, piece * LANES);
                for (o, sum) in out.iter_mut().zip(sums) {
                    *o = sum * inverse;
                }
            }
            let done = width - pieces.into_remainder().len();
            for (value, score) in scores[..tokens].iter().enumerate() {
                let v = &qkv[value * stride + 2 * hidden + offset..][..width];
                for (o, x) in out[done..].iter_mut().zip(&v[done..]) {
                    *o += score * inverse * x;
                }
            }
        }
    }
}

/// Scores of one query against `N` blocks of sixteen keys from `start`,
/// into `out`'s first `N * LANES` values; returns how many keys that is.
/// `N` blocks at once: their sums are independent, so the additions of
/// one do not wait for another's.
#[inline(always)]
fn key_scores<const N: usize>(
    q: &[f32],
    keys: &[f32],
    lanes: usize,
    start: usize,
    out: &mut [f32],
) -> usize {
    let mut sums = [[0.0f32; LANES]; N];
    for (row, q_value) in keys.chunks_exact(lanes).zip(q) {
        let row = &row[start..][..N * LANES];
        for (block, sums) in sums.iter_mut().enumerate() {
            for (sum, k) in sums.iter_mut().zip(&row[block * LANES..][..LANES]) {
                *sum += q_value * k;
            }
        }
    }
    for (chunk, sums) in out.chunks_exact_mut(LANES).zip(&sums) {
        chunk.copy_from_slice(sums);
    }
    N * LANES
}

/// The sum over values of each value's `W` entries from `column` times
/// its score, in one pass over the values' rows (a head 32 wide, MiniLM's,
/// is one pass); the even and odd values in separate sums, so that one
/// addition need not wait for the one before.
#[inline(always)]
fn value_sums<const W: usize>(
    scores: &[f32],
    values: &[f32],
    stride: usize,
    column: usize,
) -> [f32; W] {
    let mut even = [0.0f32; W];
    let mut odd = [0.0f32; W];
    let mut rows = values[column..].chunks(stride);
    let mut pairs = scores.chunks_exact(2);
    for scores in pairs.by_ref() {
        let (Some(first), Some(second)) = (rows.next(), rows.next()) else {
            break;
        };
        for ((e, o), (x, y)) in even
            .iter_mut()
            .zip(odd.iter_mut())
            .zip(first[..W].iter().zip(&second[..W]))
        {
            *e += scores[0] * x;
            *o += scores[1] * y;
        }
    }
    if let ([last], Some(row)) = (pairs.remainder(), rows.next()) {
        for (e, x) in even.iter_mut().zip(&row[..W]) {
            *e += last * x;
        }
    }
    for (e, o) in even.iter_mut().zip(odd) {
        *e += o;
    }
    even
}

widest! {
    /// Normalizes each row of `x` (rows as long as `weight`) in place.
    fn layer_norm(x: &mut [f32], weight: &[f32], bias: &[f32], eps: f32) => layer_norm_body
}

#[inline(always)]
fn layer_norm_body(x: &mut [f32], weight: &[f32], bias: &[f32], eps: f32) {
    let width = weight.len();
    for row in x.chunks_exact_mut(width) {
        let mean = lane_sum(row, |v| v) / width as f32;
        let variance = lane_sum(row, |v| (v - mean) * (v - mean)) / width as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(weight).zip(bias) {
            *v = (*v - mean) * scale * w + b;
        }
    }
}

/// The sum of `f` over `values`, in sixteen running sums (one would make
/// each addition wait for the one before).
#[inline(always)]
fn lane_sum(values: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut sums = [0.0f32; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in chunks.by_ref() {
        for (sum, v) in sums.iter_mut().zip(chunk) {
            *sum += f(*v);
        }
    }
    let rest: f32 = chunks.remainder().iter().map(|v| f(*v)).sum();
    sums.iter().sum::<f32>() + rest
}

widest! {
    /// BERT's exact GELU, `x Φ(x)`, over every value.
    fn gelu(values: &mut [f32]) => gelu_body
}

#[inline(always)]
fn gelu_body(values: &mut [f32]) {
    for v in values {
        *v = activate(Activation::Gelu, *v);
    }
}

fn activate(activation: Activation, v: f32) -> f32 {
    match activation {
        Activation::Gelu => 0.5 * v * (1.0 + erf(v * std::f32::consts::FRAC_1_SQRT_2)),
        Activation::GeluApproximate => {
            let inner = (2.0f32 / std::f32::consts::PI).sqrt() * (v + 0.044715 * v * v * v);
            0.5 * v * (1.0 + inner.tanh())
        }
        Activation::Relu => v.max(0.0),
    }
}

/// The error function, to within 1.5e-7 (Abramowitz and Stegun 7.1.26),
/// well under f32's rounding of the values it feeds.
fn erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp(-x * x);
    y.copysign(x)
}

/// `e^x` for `x` up to 88 (softmax and erf give at most 0), to about one
/// unit in the last place: `2^k · e^r` with `|r| ≤ ln 2 / 2`, `e^r` by
/// its Taylor series to degree 7. Plain arithmetic, so loops that call it
/// vectorize (the C library's `expf` is a call per value).
#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // Rounded to the nearest integer by adding 1.5 · 2^23, which leaves
    // `k` in the low bits of `shifted` (`round` and `as i32` would be a
    // call or scalar code per value on x86, not a vector instruction).
    const SHIFT: f32 = 12_582_912.0;
    let shifted = x * std::f32::consts::LOG2_E + SHIFT;
    let k = shifted - SHIFT;
    // ln 2 in two parts, so that `x - k ln 2` loses no bits.
    let r = x - k * 0.693_145_75 - k * 1.428_606_8e-6;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // 2^k: `k + 127` in the exponent field (`k` is in -126..=127 here).
    let exponent = shifted
        .to_bits()
        .wrapping_sub(SHIFT.to_bits())
        .wrapping_add(127);
    p * f32::from_bits(exponent << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectorized attention gives what the textbook loops give (score,
    /// softmax, weighted sum), for token counts on either side of a
    /// register's sixteen and head widths with and without a remainder.
    #[test]
    fn attention_matches_the_plain_loops() {
        for (heads, width) in [(2, 32), (3, 24), (1, 5)] {
            let hidden = heads * width;
            for tokens in [1, 5, 16, 17, 40, 70] {
                let qkv: Vec<f32> = (0..tokens * 3 * hidden)
                    .map(|i| ((i * 37 % 29) as f32 - 14.0) / 9.0)
                    .collect();
                let mut context = vec![0.0; tokens * hidden];
                let mut scratch = vec![0.0; tokens.div_ceil(LANES) * LANES * (1 + width)];
                attention(&qkv, &mut context, &mut scratch, tokens, hidden, heads);
                let at = |token: usize, part: usize, head: usize, d: usize| {
                    qkv[token * 3 * hidden + part * hidden + head * width + d]
                };
                for head in 0..heads {
                    for query in 0..tokens {
                        let scores: Vec<f32> = (0..tokens)
                            .map(|key| {
                                (0..width)
                                    .map(|d| at(query, 0, head, d) * at(key, 1, head, d))
                                    .sum::<f32>()
                                    / (width as f32).sqrt()
                            })
                            .collect();
                        let max = scores.iter().fold(f32::NEG_INFINITY, |m, s| m.max(*s));
                        let weights: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
                        let total: f32 = weights.iter().sum();
                        for d in 0..width {
                            let expected: f32 = (0..tokens)
                                .map(|value| weights[value] / total * at(value, 2, head, d))
                                .sum();
                            let got = context[query * hidden + head * width + d];
                            assert!(
                                (got - expected).abs() < 1e-4 * (1.0 + expected.abs()),
                                "{heads} heads of {width}, {tokens} tokens, query {query}, head {head}, {d}: {got} against {expected}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn layer_norm_matches_the_plain_loop() {
        for width in [1, 37, 384] {
            let weight: Vec<f32> = (0..width).map(|i| 0.5 + (i % 7) as f32 / 10.0).collect();
            let bias: Vec<f32> = (0..width).map(|i| (i % 5) as f32 / 20.0 - 0.1).collect();
            let mut x: Vec<f32> = (0..3 * width)
                .map(|i| ((i * 31 % 41) as f32 - 20.0) / 3.0)
                .collect();
            let mut expected = x.clone();
            for row in expected.chunks_exact_mut(width) {
                let mean = row.iter().sum::<f32>() / width as f32;
                let variance =
                    row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
                let scale = 1.0 / (variance + 1e-12).sqrt();
                for ((v, w), b) in row.iter_mut().zip(&weight).zip(&bias) {
                    *v = (*v - mean) * scale * w + b;
                }
            }
            layer_norm(&mut x, &weight, &bias, 1e-12);
            for (at, (got, want)) in x.iter().zip(&expected).enumerate() {
                assert!(
                    (got - want).abs() < 1e-4,
                    "width {width}, value {at}: {got} against {want}"
                );
            }
        }
    }

    #[test]
    fn exp_is_close_to_the_library_one() {
        let mut x = -87.0f32;
        while x <= 88.0 {
            let (ours, library) = (exp(x), x.exp());
            assert!(
                (ours - library).abs() <= 4.0 * f32::EPSILON * library,
                "exp({x}) = {ours}, not {library}"
            );
            x += 0.0137;
        }
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-1000.0) >= 0.0 && exp(-1000.0) < 1e-37);
    }

    #[test]
    fn gelu_matches_the_plain_loop() {
        let mut values: Vec<f32> = (-40..40).map(|i| i as f32 / 8.0).collect();
        let expected: Vec<f32> = values
            .iter()
            .map(|v| 0.5 * v * (1.0 + erf(v * std::f32::consts::FRAC_1_SQRT_2)))
            .collect();
        gelu(&mut values);
        assert_eq!(values, expected);
        assert!((values[40 + 8] - 0.841_344_7).abs() < 1e-6, "gelu(1)");
    }

    #[test]
    fn erf_is_close_to_known_values() {
        for (x, expected) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-1.0, -0.842_700_8),
            (2.0, 0.995_322_3),
            (-3.5, -0.999_999_3),
        ] {
            assert!((erf(x) - expected).abs() < 3e-7, "erf({x}) = {}", erf(x));
        }
    }
}
