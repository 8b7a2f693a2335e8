//! The linear layers' products on Intel AMX tiles, where the CPU and the
//! operating system offer them.
//!
//! On two cores the f32 panels (`linear.rs`) spent about 10 ms on a
//! 48-token request, most of it in products that ran at a fifth of what
//! AVX-512's multiply-add units can do, while an AMX tile multiply does a
//! 16 × 32 by 32 × 16 product of bfloat16 values into f32 sums in a few
//! cycles: measured here, 1.6 × 10¹² multiply-adds a second on one core
//! against about 0.12 × 10¹² for AVX-512 in f32. With the products nearly
//! free, what is left is loading the tiles and reading the weights once
//! per request.
//!
//! The price is bfloat16's 8-bit mantissa on the weights and on the
//! layer's inputs (the sums stay f32). `tests/transformer.rs` holds the
//! vectors within a cosine of 0.9999 of the f32 encoder's and of the
//! reference implementation's; on the routing sets one request in a
//! hundred or fewer changes (docs/decisions/0016-amx-tiles-for-the-encoder.md).
//!
//! Rust has no stable AMX intrinsics, so the few instructions used are
//! written as inline assembly; the compiler never allocates tile
//! registers itself, so nothing it holds can be clobbered. Linux hands a
//! process the tiles' state only when asked (`arch_prctl`), which
//! [`available`] does once.

/// Inputs in one tile's row: 32 bfloat16 values, 64 bytes.
pub(crate) const INPUTS_PER_STEP: usize = 32;
/// Outputs in one tile's columns: 16 f32 sums, 64 bytes.
pub(crate) const OUTPUTS_PER_TILE: usize = 16;
/// Tokens in one tile's rows.
pub(crate) const TOKENS_PER_TILE: usize = 16;

/// Whether the products can run on tiles here: the CPU has AMX with
/// bfloat16, the operating system saves the tiles' state, and it granted
/// this process their use. Checked once.
pub(crate) fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(tiles::granted)
}

/// Whether a layer of this shape can use the tiles: whole steps of inputs
/// and whole pairs of output tiles.
pub(crate) fn fits(inputs: usize, outputs: usize) -> bool {
    inputs > 0
        && inputs.is_multiple_of(INPUTS_PER_STEP)
        && outputs > 0
        && outputs.is_multiple_of(2 * OUTPUTS_PER_TILE)
}

/// f32 to bfloat16, rounding to nearest even (NaN stays NaN).
pub(crate) fn bf16(value: f32) -> u16 {
    let bits = value.to_bits();
    if value.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// `x` as bfloat16 into `out`, a value at a time.
fn convert_plain(x: &[f32], out: &mut [u16]) {
    for (o, v) in out.iter_mut().zip(x) {
        *o = bf16(*v);
    }
}

/// The weights `rows` (`outputs` rows of `inputs` values) in the tiles'
/// layout: for each group of 16 outputs, the inputs two by two, each pair
/// of inputs holding the 16 outputs' two weights side by side.
pub(crate) fn pack(rows: &[f32], inputs: usize, outputs: usize) -> Aligned {
    debug_assert!(fits(inputs, outputs) && rows.len() == inputs * outputs);
    let mut packed = Aligned::zeroed(inputs * outputs);
    let values = packed.values_mut();
    for (output, row) in rows.chunks_exact(inputs).enumerate() {
        let block = output / OUTPUTS_PER_TILE;
        let lane = output % OUTPUTS_PER_TILE;
        let base = block * inputs * OUTPUTS_PER_TILE;
        for (input, value) in row.iter().enumerate() {
            let pair = input / 2;
            values[base + (pair * OUTPUTS_PER_TILE + lane) * 2 + input % 2] = bf16(*value);
        }
    }
    packed
}

/// `x` (`tokens` rows of `inputs` f32 values) as bfloat16 rows, zero rows
/// appended up to a whole number of tiles.
/// Into `tiles`, reusing its space when it is large enough.
pub(crate) fn inputs_into_tiles(x: &[f32], tokens: usize, inputs: usize, tiles: &mut Aligned) {
    let padded = tokens.div_ceil(TOKENS_PER_TILE) * TOKENS_PER_TILE;
    tiles.reuse(padded * inputs);
    let values = tiles.values_mut();
    tiles::convert(&x[..tokens * inputs], &mut values[..tokens * inputs]);
    values[tokens * inputs..].fill(0);
}

/// bfloat16 values whose first sits on a 64-byte boundary, so that every
/// row a tile loads is one cache line: rows that straddle two made four
/// tile loads take 61 ns instead of 9.4 (measured on this machine), and
/// the products a third as fast.
pub(crate) struct Aligned {
    buffer: Vec<u16>,
    start: usize,
    len: usize,
}

impl Aligned {
    /// 32 more values than asked for, and the first used one where the
    /// next 64-byte boundary falls (the buffer never moves: it is never
    /// grown).
    pub(crate) fn zeroed(len: usize) -> Self {
        let buffer = vec![0u16; len + 32];
        let start = (buffer.as_ptr() as usize).wrapping_neg() % 64 / 2;
        Aligned { buffer, start, len }
    }

    /// `len` values from now on, in the same space if it holds them (their
    /// contents left as they were), else in new zeroed space.
    pub(crate) fn reuse(&mut self, len: usize) {
        if self.start + len <= self.buffer.len() {
            self.len = len;
        } else {
            *self = Aligned::zeroed(len);
        }
    }

    pub(crate) fn values(&self) -> &[u16] {
        &self.buffer[self.start..][..self.len]
    }

    pub(crate) fn values_mut(&mut self) -> &mut [u16] {
        &mut self.buffer[self.start..][..self.len]
    }
}

/// The sums of `x_tiles` (from [`inputs_into_tiles`]) times the output
/// pairs `pairs` (pairs of 16-output tiles) of `packed`, plus their
/// `bias` (of every output of the layer), into `out`: one
/// row of `stride` f32 per padded token, the range's first output in
/// column 0. `out` must hold a row per padded token.
///
/// # Panics
/// If the sizes disagree or the tiles are not [`available`]: a caller
/// bug, checked before any tile instruction runs.
pub(crate) fn product(
    x_tiles: &[u16],
    inputs: usize,
    packed: &[u16],
    bias: &[f32],
    pairs: std::ops::Range<usize>,
    out: &mut [f32],
    stride: usize,
) {
    let padded = x_tiles.len() / inputs;
    assert!(available() && fits(inputs, packed.len() / inputs));
    assert!(x_tiles.len() == padded * inputs && padded.is_multiple_of(TOKENS_PER_TILE));
    assert!(pairs.end * 2 * OUTPUTS_PER_TILE * inputs <= packed.len());
    assert!(pairs.end * 2 * OUTPUTS_PER_TILE <= bias.len());
    assert!((pairs.end - pairs.start) * 2 * OUTPUTS_PER_TILE <= stride);
    assert!(out.len() >= padded * stride);
    // Safety: `available` said the CPU has the instructions and the
    // process may use the tiles; the asserts bound every tile load and
    // store below.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    unsafe {
        tiles::product(x_tiles, padded, inputs, packed, bias, pairs, out, stride)
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod tiles {
    use std::arch::asm;

    use super::{INPUTS_PER_STEP, OUTPUTS_PER_TILE, TOKENS_PER_TILE};

    /// Linux's `arch_prctl` request for an extended state component, and
    /// the tiles' data component.
    const ARCH_REQ_XCOMP_PERM: u64 = 0x1023;
    const XFEATURE_XTILEDATA: u64 = 18;
    const SYS_ARCH_PRCTL: u64 = 158;

    pub(super) fn granted() -> bool {
        use std::arch::x86_64::{__cpuid, __cpuid_count};
        #[allow(unused_unsafe)]
        // Safety: CPUID exists on every x86-64 CPU.
        let (highest, features, extended) =
            unsafe { (__cpuid(0).eax, __cpuid(1).ecx, __cpuid_count(7, 0).edx) };
        let amx_bf16 = extended & (1 << 22) != 0;
        let amx_tile = extended & (1 << 24) != 0;
        let os_saves_state = features & (1 << 27) != 0;
        if highest < 0xd || !amx_bf16 || !amx_tile || !os_saves_state {
            return false;
        }
        // Safety: OSXSAVE (checked above) makes XGETBV available.
        let enabled = unsafe { xcr0() };
        let tile_state = (1 << 17) | (1 << 18);
        if enabled & tile_state != tile_state {
            return false;
        }
        let result: i64;
        // Safety: a system call that only changes this process's
        // permissions; it reads and writes no memory of ours.
        unsafe {
            asm!(
                "syscall",
                inlateout("rax") SYS_ARCH_PRCTL as i64 => result,
                in("rdi") ARCH_REQ_XCOMP_PERM,
                in("rsi") XFEATURE_XTILEDATA,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        result == 0
    }

    /// `x` as bfloat16 into `out` (of the same length), sixteen values an
    /// instruction where the CPU has AVX-512's bfloat16 conversions (every
    /// CPU with AMX's bfloat16 products does).
    pub(super) fn convert(x: &[f32], out: &mut [u16]) {
        if std::arch::is_x86_feature_detected!("avx512bf16") {
            // Safety: the CPU has the instructions (checked above).
            unsafe { convert_wide(x, out) }
        } else {
            super::convert_plain(x, out);
        }
    }

    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn convert_wide(x: &[f32], out: &mut [u16]) {
        use std::arch::x86_64::{
            __m256i, _mm256_storeu_si256, _mm512_cvtneps_pbh, _mm512_loadu_ps,
        };
        let (whole, rest) = x.split_at(x.len() / 16 * 16);
        for (at, chunk) in whole.chunks_exact(16).enumerate() {
            // Safety: `chunk` is 16 values, and `out` (as long as `x`)
            // has 16 from `at * 16`.
            unsafe {
                let halves: __m256i =
                    std::mem::transmute(_mm512_cvtneps_pbh(_mm512_loadu_ps(chunk.as_ptr())));
                _mm256_storeu_si256(out.as_mut_ptr().add(at * 16).cast(), halves);
            }
        }
        super::convert_plain(rest, &mut out[whole.len()..]);
    }

    #[target_feature(enable = "xsave")]
    unsafe fn xcr0() -> u64 {
        // Safety: the caller checked OSXSAVE.
        unsafe { std::arch::x86_64::_xgetbv(0) }
    }

    /// The tiles' palette 1 setup: every tile 16 rows of 64 bytes.
    #[repr(C, align(64))]
    struct TileConfig {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        bytes_per_row: [u16; 16],
        rows: [u8; 16],
    }

    /// Tiles 0-3 hold sums (two token tiles by two output tiles), 4 and 5
    /// a step of two token tiles' inputs, 6 and 7 a step of two output
    /// tiles' weights.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn product(
        x: &[u16],
        padded: usize,
        inputs: usize,
        packed: &[u16],
        bias: &[f32],
        pairs: std::ops::Range<usize>,
        out: &mut [f32],
        stride: usize,
    ) {
        let mut config = TileConfig {
            palette: 1,
            start_row: 0,
            reserved: [0; 14],
            bytes_per_row: [0; 16],
            rows: [0; 16],
        };
        for tile in 0..8 {
            config.bytes_per_row[tile] = 64;
            config.rows[tile] = TOKENS_PER_TILE as u8;
        }
        let steps = inputs / INPUTS_PER_STEP;
        let x_row_bytes = inputs * 2;
        let out_row_bytes = stride * 4;
        // One output tile's weights: `inputs / 2` rows of 64 bytes.
        let tile_weights = inputs * OUTPUTS_PER_TILE;
        // Safety (every block below): the caller checked that `x` holds
        // `padded` rows of `inputs`, `packed` the pairs' weights and `out`
        // `padded` rows of `stride`; each load and store stays inside.
        unsafe {
            asm!("ldtilecfg [{}]", in(reg) &config, options(nostack, readonly));
            for (column, pair) in pairs.enumerate() {
                let weights = packed.as_ptr().add(pair * 2 * tile_weights);
                let first_bias = bias.as_ptr().add(pair * 2 * OUTPUTS_PER_TILE);
                let mut token = 0;
                while token < padded {
                    let two = token + TOKENS_PER_TILE < padded;
                    // The sums start at the bias: each of the 16 rows of
                    // a sum tile loads the same 16 values (a stride of 0).
                    asm!(
                        "tileloadd tmm0, [{b0} + {zero}*1]",
                        "tileloadd tmm1, [{b1} + {zero}*1]",
                        "tileloadd tmm2, [{b0} + {zero}*1]",
                        "tileloadd tmm3, [{b1} + {zero}*1]",
                        b0 = in(reg) first_bias,
                        b1 = in(reg) first_bias.add(OUTPUTS_PER_TILE),
                        zero = in(reg) 0usize,
                        options(nostack, readonly)
                    );
                    let first_row = x.as_ptr().add(token * inputs);
                    for step in 0..steps {
                        let a = first_row.add(step * INPUTS_PER_STEP);
                        let b = weights.add(step * INPUTS_PER_STEP * OUTPUTS_PER_TILE);
                        asm!(
                            "tileloadd tmm6, [{b0} + {b_stride}*1]",
                            "tileloadd tmm7, [{b1} + {b_stride}*1]",
                            "tileloadd tmm4, [{a0} + {a_stride}*1]",
                            "tdpbf16ps tmm0, tmm4, tmm6",
                            "tdpbf16ps tmm1, tmm4, tmm7",
                            b0 = in(reg) b,
                            b1 = in(reg) b.add(tile_weights),
                            b_stride = in(reg) 64usize,
                            a0 = in(reg) a,
                            a_stride = in(reg) x_row_bytes,
                            options(nostack, readonly)
                        );
                        if two {
                            asm!(
                                "tileloadd tmm5, [{a1} + {a_stride}*1]",
                                "tdpbf16ps tmm2, tmm5, tmm6",
                                "tdpbf16ps tmm3, tmm5, tmm7",
                                a1 = in(reg) a.add(TOKENS_PER_TILE * inputs),
                                a_stride = in(reg) x_row_bytes,
                                options(nostack, readonly)
                            );
                        }
                    }
                    let c = out
                        .as_mut_ptr()
                        .add(token * stride + column * 2 * OUTPUTS_PER_TILE);
                    asm!(
                        "tilestored [{c0} + {c_stride}*1], tmm0",
                        "tilestored [{c1} + {c_stride}*1], tmm1",
                        c0 = in(reg) c,
                        c1 = in(reg) c.add(OUTPUTS_PER_TILE),
                        c_stride = in(reg) out_row_bytes,
                        options(nostack)
                    );
                    if two {
                        let c = c.add(TOKENS_PER_TILE * stride);
                        asm!(
                            "tilestored [{c0} + {c_stride}*1], tmm2",
                            "tilestored [{c1} + {c_stride}*1], tmm3",
                            c0 = in(reg) c,
                            c1 = in(reg) c.add(OUTPUTS_PER_TILE),
                            c_stride = in(reg) out_row_bytes,
                            options(nostack)
                        );
                    }
                    token += if two { 2 } else { 1 } * TOKENS_PER_TILE;
                }
            }
            asm!("tilerelease", options(nostack, nomem));
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod tiles {
    pub(super) fn granted() -> bool {
        false
    }

    pub(super) use super::convert_plain as convert;
}
