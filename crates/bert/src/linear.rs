//! The encoder's linear layers: weights packed once at load, products
//! over a few token rows at a time.

use crate::{Weights, amx};

/// Outputs per packed panel: four AVX-512 registers of sums per token.
const PANEL: usize = 64;

/// Tokens multiplied by a panel at once: six tokens' sums take 24 of
/// AVX-512's 32 registers, and each weight read from memory serves six.
const ROWS: usize = 6;

/// How a layer's products are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arithmetic {
    /// Half-float weights widened to f32, f32 products (any CPU).
    F32,
    /// bfloat16 weights and inputs on AMX tiles, f32 sums ([`crate::amx`]).
    Tiles,
}

/// A layer's weights, packed for its arithmetic.
enum Packed {
    /// [`Arithmetic::F32`]: panel `p` holds outputs `p * PANEL ..`, input
    /// by input: element `(i, l)` of the panel is `W[p * PANEL + l][i]` as
    /// an IEEE half float, zero past the last output.
    Panels(Vec<u16>),
    /// [`Arithmetic::Tiles`]: `amx::pack`'s layout.
    Tiles(amx::Aligned),
}

/// A linear layer `y = x Wᵀ + b`, its weights packed into panels (or
/// tiles).
pub(crate) struct Linear {
    packed: Packed,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Linear {
    /// Several layers that read the same input, stacked into one (query,
    /// key and value): one pass over the input for the three.
    pub(crate) fn load(
        weights: &Weights<'_>,
        prefixes: &[String],
        inputs: usize,
        outputs: usize,
        arithmetic: Arithmetic,
    ) -> Result<Self, String> {
        let mut rows = Vec::with_capacity(prefixes.len() * outputs * inputs);
        let mut bias = Vec::with_capacity(prefixes.len() * outputs);
        for prefix in prefixes {
            rows.extend(weights.get(&format!("{prefix}.weight"), &[outputs, inputs])?);
            bias.extend(weights.get(&format!("{prefix}.bias"), &[outputs])?);
        }
        Ok(Self::from_rows(
            &rows,
            bias,
            inputs,
            prefixes.len() * outputs,
            arithmetic,
        ))
    }

    /// The layer of weights `rows` (`outputs` rows of `inputs` values) and
    /// `bias`, packed for `arithmetic` where the machine and the shape
    /// allow it, else for f32.
    pub(crate) fn from_rows(
        rows: &[f32],
        bias: Vec<f32>,
        inputs: usize,
        outputs: usize,
        arithmetic: Arithmetic,
    ) -> Self {
        debug_assert!(rows.len() == inputs * outputs && bias.len() == outputs);
        if arithmetic == Arithmetic::Tiles && amx::available() && amx::fits(inputs, outputs) {
            return Linear {
                packed: Packed::Tiles(amx::pack(rows, inputs, outputs)),
                bias,
                inputs,
                outputs,
            };
        }
        let panels = outputs.div_ceil(PANEL);
        let mut packed = vec![0u16; panels * PANEL * inputs];
        for (output, row) in rows.chunks_exact(inputs).enumerate() {
            let panel = &mut packed[(output / PANEL) * PANEL * inputs..][..PANEL * inputs];
            let lane = output % PANEL;
            for (input, value) in row.iter().enumerate() {
                panel[input * PANEL + lane] = half::f16::from_f32(*value).to_bits();
            }
        }
        Linear {
            packed: Packed::Panels(packed),
            bias,
            inputs,
            outputs,
        }
    }

    /// The products on tiles, on one thread: split over two (as the f32
    /// panels are), a 48-token request took 5.6 ms instead of 3.8 (waking
    /// the second thread and its tiles costs more than it saves), and the
    /// other core stays free for another request.
    fn forward_on_tiles(
        &self,
        weights: &amx::Aligned,
        x: &[f32],
        tokens: usize,
        out: &mut Vec<f32>,
    ) {
        // Kept by each thread between layers and sequences, as the
        // encoder's other scratch space is.
        thread_local! {
            static INPUTS: std::cell::RefCell<amx::Aligned> =
                std::cell::RefCell::new(amx::Aligned::zeroed(0));
        }
        INPUTS.with_borrow_mut(|x_tiles| {
            amx::inputs_into_tiles(x, tokens, self.inputs, x_tiles);
            self.product_on_tiles(weights, x_tiles.values(), tokens, out);
        });
    }

    fn product_on_tiles(
        &self,
        weights: &amx::Aligned,
        x_tiles: &[u16],
        tokens: usize,
        out: &mut Vec<f32>,
    ) {
        let padded = x_tiles.len() / self.inputs;
        // The tiles write every value of every padded row, so the space
        // kept from an earlier product need not be zeroed first.
        if out.len() < padded * self.outputs {
            out.resize(padded * self.outputs, 0.0);
        } else {
            out.truncate(padded * self.outputs);
        }
        let pairs = self.outputs / (2 * amx::OUTPUTS_PER_TILE);
        amx::product(
            x_tiles,
            self.inputs,
            weights.values(),
            &self.bias,
            0..pairs,
            out,
            self.outputs,
        );
        out.truncate(tokens * self.outputs);
    }

    /// `out` = this layer applied to each of the `tokens` rows of `x`.
    /// The panels are split between two threads (rayon's pool): a
    /// request's product is too small to feed more, and on one core the
    /// second half simply runs after the first.
    pub(crate) fn forward(&self, x: &[f32], tokens: usize, out: &mut Vec<f32>) {
        debug_assert_eq!(x.len(), tokens * self.inputs);
        let packed = match &self.packed {
            Packed::Tiles(weights) => return self.forward_on_tiles(weights, x, tokens, out),
            Packed::Panels(packed) => packed,
        };
        out.clear();
        out.resize(tokens * self.outputs, 0.0);
        let panels = self.outputs.div_ceil(PANEL);
        let half = panels.div_ceil(2);
        if panels < 2 {
            self.panels_into(packed, x, tokens, 0..panels, out, self.outputs);
            return;
        }
        let second_width = self.outputs - half * PANEL;
        let mut second = vec![0.0f32; tokens * second_width];
        rayon::join(
            || self.panels_into(packed, x, tokens, 0..half, out, self.outputs),
            || self.panels_into(packed, x, tokens, half..panels, &mut second, second_width),
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
        packed: &[u16],
        x: &[f32],
        tokens: usize,
        panels: std::ops::Range<usize>,
        out: &mut [f32],
        stride: usize,
    ) {
        let mut sums = [0.0f32; ROWS * PANEL];
        let columns = panels.start * PANEL;
        for panel_index in panels {
            let panel = &packed[panel_index * PANEL * self.inputs..][..PANEL * self.inputs];
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

    /// Each output is its row of weights times the input, plus its bias,
    /// with either arithmetic: for layers whose outputs do not fill the
    /// last panel, shapes the tiles do not fit (they fall back to f32) and
    /// token counts on either side of a tile's sixteen rows. The tiles'
    /// sums are of bfloat16 values (8 bits of mantissa), so they are held
    /// to 1% of the sum of the terms' sizes; f32's weights are half
    /// floats (11 bits), held to 0.1%.
    #[test]
    fn a_linear_layer_is_its_weights_times_the_input() {
        for (inputs, outputs) in [(5, 70), (32, 32), (64, 96), (96, 160), (384, 1152)] {
            let weights: Vec<f32> = (0..outputs * inputs)
                .map(|i| ((i * 29 % 23) as f32 - 11.0) / 7.0)
                .collect();
            let bias: Vec<f32> = (0..outputs).map(|o| o as f32 / 10.0).collect();
            for arithmetic in [Arithmetic::F32, Arithmetic::Tiles] {
                let layer = Linear::from_rows(&weights, bias.clone(), inputs, outputs, arithmetic);
                let tiles = arithmetic == Arithmetic::Tiles
                    && amx::available()
                    && amx::fits(inputs, outputs);
                assert_eq!(
                    matches!(layer.packed, Packed::Tiles(_)),
                    tiles,
                    "{inputs}x{outputs} asked for {arithmetic:?}"
                );
                // One output buffer for every call, as the encoder keeps
                // one: what a longer call left must not show through.
                let mut out = Vec::new();
                for tokens in [48, 1, 6, 15, 16, 17, 33] {
                    let x: Vec<f32> = (0..tokens * inputs)
                        .map(|i| ((i * 13 % 17) as f32 - 8.0) / 5.0)
                        .collect();
                    out.iter_mut().for_each(|v| *v = f32::NAN);
                    layer.forward(&x, tokens, &mut out);
                    assert_eq!(out.len(), tokens * outputs);
                    for t in 0..tokens {
                        for o in 0..outputs {
                            let terms =
                                (0..inputs).map(|i| x[t * inputs + i] * weights[o * inputs + i]);
                            let expected = terms.clone().sum::<f32>() + bias[o];
                            let size: f32 = terms.map(f32::abs).sum::<f32>() + 1.0;
                            let tolerance = if tiles { 1e-2 } else { 1e-3 } * size;
                            let got = out[t * outputs + o];
                            assert!(
                                (got - expected).abs() <= tolerance,
                                "{arithmetic:?} {inputs}x{outputs}, {tokens} tokens, token {t}, output {o}: {got} against {expected}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// bfloat16 keeps f32's top 16 bits, rounded to the nearest even.
    #[test]
    fn bfloat16_rounds_to_the_nearest_even() {
        assert_eq!(amx::bf16(1.0), 0x3f80);
        assert_eq!(amx::bf16(-2.0), 0xc000);
        // Halfway between 1.0 and the next bfloat16: to the even one.
        assert_eq!(amx::bf16(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(amx::bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(amx::bf16(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert_eq!(amx::bf16(f32::INFINITY), 0x7f80);
        assert!(amx::bf16(f32::NAN) & 0x7f80 == 0x7f80 && amx::bf16(f32::NAN) & 0x7f != 0);
        let mut converted = [0u16; 37];
        let values: Vec<f32> = (0..37).map(|i| i as f32 * 0.37 - 5.0).collect();
        // Space that held other values first: the padding is zeroed again.
        let mut reused = amx::Aligned::zeroed(40 * 16);
        reused.values_mut().fill(7);
        amx::inputs_into_tiles(&values, 1, 37, &mut reused);
        let tiles = reused.values();
        for (c, v) in converted.iter_mut().zip(&values) {
            *c = amx::bf16(*v);
        }
        assert_eq!(
            &tiles[..37],
            &converted[..],
            "the wide conversion is the scalar one"
        );
        assert_eq!(tiles.len(), 16 * 37, "padded to a tile's rows");
        assert!(tiles[37..].iter().all(|v| *v == 0));
    }
}
