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
//! layer are packed once, at load, into panels of [`PANEL`] outputs laid
//! out input by input, and a product walks each panel once for a few
//! tokens at a time, keeping their sums in registers (AVX-512 or AVX2 with
//! FMA where the CPU has them, chosen at run time; plain loops otherwise).
//! Everything else, layer norms, attention over a few dozen tokens and
//! GELU, is a loop over preallocated slices.
//!
//! The arithmetic is the model's, in f32 (no quantization): only the order
//! of additions differs, so the vectors agree with the reference
//! implementation's to a cosine above 0.9999 (zenmode's
//! `tests/transformer.rs`).

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

/// Outputs per packed panel: four AVX-512 registers of sums per token.
const PANEL: usize = 64;

/// Tokens multiplied by a panel at once: six tokens' sums take 24 of
/// AVX-512's 32 registers, and each weight read from memory serves six.
const ROWS: usize = 6;

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

/// A linear layer `y = x Wᵀ + b`, its weights packed into panels.
struct Linear {
    /// Panel `p` holds outputs `p * PANEL ..`, input by input: element
    /// `(i, l)` of the panel is `W[p * PANEL + l][i]` as an IEEE half
    /// float, zero past the last output.
    packed: Vec<u16>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Linear {
    /// Several layers that read the same input, stacked into one (query,
    /// key and value): one pass over the input for the three.
    fn load(
        weights: &Weights<'_>,
        prefixes: &[String],
        inputs: usize,
        outputs: usize,
    ) -> Result<Self, String> {
        let mut rows = Vec::with_capacity(prefixes.len() * outputs * inputs);
        let mut bias = Vec::with_capacity(prefixes.len() * outputs);
        for prefix in prefixes {
            rows.extend(weights.get(&format!("{prefix}.weight"), &[outputs, inputs])?);
            bias.extend(weights.get(&format!("{prefix}.bias"), &[outputs])?);
        }
        let outputs = prefixes.len() * outputs;
        let panels = outputs.div_ceil(PANEL);
        let mut packed = vec![0u16; panels * PANEL * inputs];
        for (output, row) in rows.chunks_exact(inputs).enumerate() {
            let panel = &mut packed[(output / PANEL) * PANEL * inputs..][..PANEL * inputs];
            let lane = output % PANEL;
            for (input, value) in row.iter().enumerate() {
                panel[input * PANEL + lane] = half::f16::from_f32(*value).to_bits();
            }
        }
        Ok(Linear {
            packed,
            bias,
            inputs,
            outputs,
        })
    }

    /// `out` = this layer applied to each of the `tokens` rows of `x`.
    /// The panels are split between two threads (rayon's pool): a
    /// request's product is too small to feed more, and on one core the
    /// second half simply runs after the first.
    fn forward(&self, x: &[f32], tokens: usize, out: &mut Vec<f32>) {
        debug_assert_eq!(x.len(), tokens * self.inputs);
        out.clear();
        out.resize(tokens * self.outputs, 0.0);
        let panels = self.outputs.div_ceil(PANEL);
        let half = panels.div_ceil(2);
        if panels < 2 {
            self.panels_into(x, tokens, 0..panels, out, self.outputs);
            return;
        }
        let second_width = self.outputs - half * PANEL;
        let mut second = vec![0.0f32; tokens * second_width];
        rayon::join(
            || self.panels_into(x, tokens, 0..half, out, self.outputs),
            || self.panels_into(x, tokens, half..panels, &mut second, second_width),
        );
        let first_width = half * PANEL;
        for (row, part) in out
            .chunks_exact_mut(self.outputs)
            .zip(second.chunks_exact(second_width))
        {
            row[first_width..].copy_from_slice(part);
        }
    }

    /// The outputs of `panels` for every token, into `out`: rows of
    /// `stride` values, the range's first output in column 0.
    fn panels_into(
        &self,
        x: &[f32],
        tokens: usize,
        panels: std::ops::Range<usize>,
        out: &mut [f32],
        stride: usize,
    ) {
        let mut sums = [0.0f32; ROWS * PANEL];
        let columns = panels.start * PANEL;
        for panel_index in panels {
            let panel = &self.packed[panel_index * PANEL * self.inputs..][..PANEL * self.inputs];
            let first = panel_index * PANEL;
            let width = PANEL.min(self.outputs - first);
            let mut token = 0;
            while token < tokens {
                let rows = (tokens - token).min(ROWS);
                let x_rows = &x[token * self.inputs..(token + rows) * self.inputs];
                kernel::panel_product(x_rows, rows, self.inputs, panel, &mut sums);
                for row in 0..rows {
                    let out_row = &mut out[(token + row) * stride + first - columns..][..width];
                    let sum_row = &sums[row * PANEL..][..width];
                    for ((y, s), b) in out_row.iter_mut().zip(sum_row).zip(&self.bias[first..]) {
                        *y = s + b;
                    }
                }
                token += rows;
            }
        }
    }
}

/// The matrix product of a few token rows with one packed panel, by the
/// widest instructions the CPU has.
mod kernel {
    use super::{PANEL, ROWS};

    /// `sums[r * PANEL + l]` = the dot product of row `r` of `x` (of
    /// `inputs` values; `rows` of them, at most [`ROWS`]) with column `l`
    /// of the panel.
    pub fn panel_product(x: &[f32], rows: usize, inputs: usize, panel: &[u16], sums: &mut [f32]) {
        assert!(rows <= ROWS && x.len() == rows * inputs && panel.len() == inputs * PANEL);
        assert!(sums.len() >= rows * PANEL);
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // Safety: the CPU has AVX-512F (checked above), and the
                // asserts above bound every pointer the kernel reads or
                // writes.
                unsafe { avx512::product(x, rows, inputs, panel, sums) };
                return;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("f16c")
            {
                // Safety: as above, for AVX2, FMA and F16C.
                unsafe { avx2::product(x, rows, inputs, panel, sums) };
                return;
            }
        }
        portable(x, rows, inputs, panel, sums);
    }

    /// The same product in plain loops, for CPUs without the instructions
    /// above (and as the reference the fast kernels are tested against).
    pub fn portable(x: &[f32], rows: usize, inputs: usize, panel: &[u16], sums: &mut [f32]) {
        let mut column_f32 = [0.0f32; PANEL];
        for row in 0..rows {
            sums[row * PANEL..][..PANEL].fill(0.0);
        }
        for (input, column) in panel.chunks_exact(PANEL).enumerate() {
            for (wide, half) in column_f32.iter_mut().zip(column) {
                *wide = half::f16::from_bits(*half).to_f32();
            }
            for row in 0..rows {
                let value = x[row * inputs + input];
                let out = &mut sums[row * PANEL..][..PANEL];
                for (sum, weight) in out.iter_mut().zip(&column_f32) {
                    *sum += value * weight;
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod avx512 {
        use std::arch::x86_64::*;

        use super::PANEL;

        /// Four 16-lane registers of sums per row: a row's 64 outputs.
        #[target_feature(enable = "avx512f")]
        pub unsafe fn product(
            x: &[f32],
            rows: usize,
            inputs: usize,
            panel: &[u16],
            sums: &mut [f32],
        ) {
            // Safety (all blocks below): the caller checked that `x` holds
            // `rows * inputs` values, `panel` `inputs * PANEL` and `sums`
            // `rows * PANEL`.
            unsafe {
                match rows {
                    6 => rows_of::<6>(x, inputs, panel, sums),
                    5 => rows_of::<5>(x, inputs, panel, sums),
                    4 => rows_of::<4>(x, inputs, panel, sums),
                    3 => rows_of::<3>(x, inputs, panel, sums),
                    2 => rows_of::<2>(x, inputs, panel, sums),
                    _ => rows_of::<1>(x, inputs, panel, sums),
                }
            }
        }

        #[target_feature(enable = "avx512f")]
        unsafe fn rows_of<const R: usize>(
            x: &[f32],
            inputs: usize,
            panel: &[u16],
            sums: &mut [f32],
        ) {
            let mut acc = [[_mm512_setzero_ps(); 4]; R];
            let w = panel.as_ptr();
            let xp = x.as_ptr();
            for input in 0..inputs {
                // Safety: `input < inputs`, so the panel's column and each
                // row's value are in bounds.
                unsafe {
                    let column = w.add(input * PANEL);
                    let c0 = _mm512_cvtph_ps(_mm256_loadu_si256(column.cast()));
                    let c1 = _mm512_cvtph_ps(_mm256_loadu_si256(column.add(16).cast()));
                    let c2 = _mm512_cvtph_ps(_mm256_loadu_si256(column.add(32).cast()));
                    let c3 = _mm512_cvtph_ps(_mm256_loadu_si256(column.add(48).cast()));
                    for (row, a) in acc.iter_mut().enumerate() {
                        let v = _mm512_set1_ps(*xp.add(row * inputs + input));
                        a[0] = _mm512_fmadd_ps(v, c0, a[0]);
                        a[1] = _mm512_fmadd_ps(v, c1, a[1]);
                        a[2] = _mm512_fmadd_ps(v, c2, a[2]);
                        a[3] = _mm512_fmadd_ps(v, c3, a[3]);
                    }
                }
            }
            for (row, a) in acc.iter().enumerate() {
                for (part, register) in a.iter().enumerate() {
                    // Safety: `row < R <= rows`, so 16 values fit at this
                    // offset of `sums`.
                    unsafe {
                        _mm512_storeu_ps(sums.as_mut_ptr().add(row * PANEL + part * 16), *register)
                    };
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod avx2 {
        use std::arch::x86_64::*;

        use super::PANEL;

        /// Eight-lane registers: a row's 64 outputs take eight, so the
        /// panel is walked in two halves of 32, two rows at a time (16
        /// registers of sums would not leave room for the panel's).
        #[target_feature(enable = "avx2,fma,f16c")]
        pub unsafe fn product(
            x: &[f32],
            rows: usize,
            inputs: usize,
            panel: &[u16],
            sums: &mut [f32],
        ) {
            let mut row = 0;
            while row < rows {
                let take = (rows - row).min(2);
                for half in [0, 32] {
                    // Safety: the caller checked the slices' sizes; `row +
                    // take <= rows`.
                    unsafe {
                        if take == 2 {
                            half_rows::<2>(x, row, inputs, panel, half, sums)
                        } else {
                            half_rows::<1>(x, row, inputs, panel, half, sums)
                        }
                    }
                }
                row += take;
            }
        }

        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn half_rows<const R: usize>(
            x: &[f32],
            first_row: usize,
            inputs: usize,
            panel: &[u16],
            half: usize,
            sums: &mut [f32],
        ) {
            let mut acc = [[_mm256_setzero_ps(); 4]; R];
            let w = panel.as_ptr();
            let xp = x.as_ptr();
            for input in 0..inputs {
                // Safety: `input < inputs` and `half + 32 <= PANEL`.
                unsafe {
                    let column = w.add(input * PANEL + half);
                    let c0 = _mm256_cvtph_ps(_mm_loadu_si128(column.cast()));
                    let c1 = _mm256_cvtph_ps(_mm_loadu_si128(column.add(8).cast()));
                    let c2 = _mm256_cvtph_ps(_mm_loadu_si128(column.add(16).cast()));
                    let c3 = _mm256_cvtph_ps(_mm_loadu_si128(column.add(24).cast()));
                    for (row, a) in acc.iter_mut().enumerate() {
                        let v = _mm256_set1_ps(*xp.add((first_row + row) * inputs + input));
                        a[0] = _mm256_fmadd_ps(v, c0, a[0]);
                        a[1] = _mm256_fmadd_ps(v, c1, a[1]);
                        a[2] = _mm256_fmadd_ps(v, c2, a[2]);
                        a[3] = _mm256_fmadd_ps(v, c3, a[3]);
                    }
                }
            }
            for (row, a) in acc.iter().enumerate() {
                for (part, register) in a.iter().enumerate() {
                    // Safety: `first_row + row < rows`, within `sums`.
                    unsafe {
                        _mm256_storeu_ps(
                            sums.as_mut_ptr()
                                .add((first_row + row) * PANEL + half + part * 8),
                            *register,
                        )
                    };
                }
            }
        }
    }
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
        let width = self.weight.len();
        for row in x.chunks_exact_mut(width) {
            let mean = row.iter().sum::<f32>() / width as f32;
            let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
            let scale = 1.0 / (variance + self.eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *v = (*v - mean) * scale * w + b;
            }
        }
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

/// The tensors of a safetensors file, found under a prefix.
struct Weights<'a> {
    file: SafeTensors<'a>,
    prefix: &'static str,
}

impl Weights<'_> {
    /// The tensor `name` as f32 values, if it has this shape.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let full = format!("{}{name}", self.prefix);
        let view = self
            .file
            .tensor(&full)
            .map_err(|_| format!("the weights have no tensor {full}"))?;
        if view.shape() != shape {
            return Err(format!(
                "tensor {full} has shape {:?}, this configuration needs {shape:?}",
                view.shape()
            ));
        }
        if view.dtype() != Dtype::F32 {
            return Err(format!(
                "tensor {full} holds {:?} values; only F32 weights are read",
                view.dtype()
            ));
        }
        Ok(view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
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
    /// Reads the model from the bytes of its `model.safetensors`; the
    /// caller has checked that `config` is a usable shape.
    pub fn load(bytes: &[u8], config: &Config) -> Result<Self, String> {
        let file = SafeTensors::deserialize(bytes)
            .map_err(|error| format!("not a safetensors file: {error}"))?;
        // Checkpoints saved from a `BertModel` name their tensors
        // `embeddings...`; those saved from a task model put `bert.` first.
        let prefix = if file.tensor("embeddings.word_embeddings.weight").is_ok() {
            ""
        } else {
            "bert."
        };
        let weights = Weights { file, prefix };
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
                    )?,
                    attention_out: Linear::load(
                        &weights,
                        &[at("attention.output.dense")],
                        hidden,
                        hidden,
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
                    )?,
                    output: Linear::load(
                        &weights,
                        &[at("output.dense")],
                        config.intermediate_size,
                        hidden,
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
        Ok(Bert {
            words,
            positions,
            embedding_norm,
            layers,
            hidden,
            heads: config.num_attention_heads,
            activation: config.hidden_act,
        })
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
        let mut buffers = Buffers::default();
        for layer in &self.layers {
            self.layer(layer, &mut x, tokens, &mut buffers);
        }
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
        b.scores.resize(tokens, 0.0);
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
    scores: &mut [f32],
    tokens: usize,
    hidden: usize,
    heads: usize,
) {
    let width = hidden / heads;
    let scale = 1.0 / (width as f32).sqrt();
    let stride = 3 * hidden;
    let scores = &mut scores[..tokens];
    for head in 0..heads {
        let offset = head * width;
        for query in 0..tokens {
            let q = &qkv[query * stride + offset..][..width];
            let mut max = f32::NEG_INFINITY;
            for (key, score) in scores.iter_mut().enumerate() {
                let k = &qkv[key * stride + hidden + offset..][..width];
                *score = dot(q, k) * scale;
                max = max.max(*score);
            }
            let mut total = 0.0;
            for score in scores.iter_mut() {
                *score = exp(*score - max);
                total += *score;
            }
            let out = &mut context[query * hidden + offset..][..width];
            for (value, score) in scores.iter().enumerate() {
                let weight = score / total;
                let v = &qkv[value * stride + 2 * hidden + offset..][..width];
                for (o, x) in out.iter_mut().zip(v) {
                    *o += weight * x;
                }
            }
        }
    }
}

/// A dot product in sixteen running sums, which the compiler keeps in
/// vector registers (one sum would serialize every addition).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 16];
    let (a_blocks, b_blocks) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: f32 = a_blocks
        .remainder()
        .iter()
        .zip(b_blocks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_blocks.zip(b_blocks) {
        for lane in 0..16 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + tail
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

    /// The fast kernels give the portable loop's sums (to rounding), for
    /// every row count and for inputs not a multiple of a register.
    #[test]
    fn the_kernels_agree_with_the_plain_loop() {
        for inputs in [1, 7, 16, 384] {
            for rows in 1..=ROWS {
                let x: Vec<f32> = (0..rows * inputs)
                    .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
                    .collect();
                let panel: Vec<u16> = (0..inputs * PANEL)
                    .map(|i| half::f16::from_f32(((i * 53 % 97) as f32 - 48.0) / 31.0).to_bits())
                    .collect();
                let mut fast = vec![f32::NAN; ROWS * PANEL];
                let mut plain = vec![f32::NAN; ROWS * PANEL];
                kernel::panel_product(&x, rows, inputs, &panel, &mut fast);
                kernel::portable(&x, rows, inputs, &panel, &mut plain);
                for (at, (f, p)) in fast[..rows * PANEL]
                    .iter()
                    .zip(&plain[..rows * PANEL])
                    .enumerate()
                {
                    assert!(
                        (f - p).abs() <= 1e-4 * (1.0 + p.abs()),
                        "inputs {inputs}, rows {rows}, sum {at}: {f} against {p}"
                    );
                }
            }
        }
    }

    /// A layer whose outputs do not fill the last panel: each output is
    /// its row of weights times the input, plus its bias.
    #[test]
    fn a_linear_layer_is_its_weights_times_the_input() {
        let (inputs, outputs, tokens) = (5, 70, 6);
        let weights: Vec<f32> = (0..outputs * inputs)
            .map(|i| (i % 11) as f32 - 5.0)
            .collect();
        let bias: Vec<f32> = (0..outputs).map(|o| o as f32 / 10.0).collect();
        let mut packed = vec![0; 2 * PANEL * inputs];
        for (o, row) in weights.chunks_exact(inputs).enumerate() {
            for (i, w) in row.iter().enumerate() {
                packed[(o / PANEL) * PANEL * inputs + i * PANEL + o % PANEL] =
                    half::f16::from_f32(*w).to_bits();
            }
        }
        let layer = Linear {
            packed,
            bias: bias.clone(),
            inputs,
            outputs,
        };
        let x: Vec<f32> = (0..tokens * inputs).map(|i| (i % 7) as f32 - 3.0).collect();
        let mut out = Vec::new();
        layer.forward(&x, tokens, &mut out);
        assert_eq!(out.len(), tokens * outputs);
        for t in 0..tokens {
            for o in 0..outputs {
                let expected: f32 = (0..inputs)
                    .map(|i| x[t * inputs + i] * weights[o * inputs + i])
                    .sum::<f32>()
                    + bias[o];
                assert!(
                    (out[t * outputs + o] - expected).abs() < 1e-3,
                    "token {t}, output {o}"
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
    fn dot_products_and_gelu_match_plain_loops() {
        for width in [0, 3, 16, 32, 45] {
            let a: Vec<f32> = (0..width).map(|i| i as f32 * 0.25 - 3.0).collect();
            let b: Vec<f32> = (0..width).map(|i| 1.5 - i as f32 * 0.125).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-3, "width {width}");
        }
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
