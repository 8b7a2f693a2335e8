//! Vectors as int8 rows (a fourth of the memory of f32, cosines within
//! about 0.01) and their dot products with a request's vector quantized to
//! int16, for the example requests each tool carries (`embedding.rs`).

/// Appends `vector` quantized to int8 (its largest magnitude at 127) and
/// returns the scale that multiplies a stored value back to the vector's.
pub(super) fn quantize_into(vector: &[f32], rows: &mut Vec<i8>) -> f32 {
    let largest = vector
        .iter()
        .filter(|x| x.is_finite())
        .fold(0.0f32, |m, x| m.max(x.abs()));
    let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
    rows.extend(vector.iter().map(|x| {
        if x.is_finite() {
            (x / scale).round().clamp(-127.0, 127.0) as i8
        } else {
            0
        }
    }));
    scale
}

/// The dot product of each `query.len()`-long int8 row of `rows` with
/// `query`, appended to `out`: the same loop compiled for the baseline's
/// SSE2 and again for AVX2 and AVX-512, picked at run time. (Over many
/// rows the scan waits on memory whatever the instructions; the shortlist
/// of decision 0024 is what made it cheap.)
pub(super) fn row_dots(rows: &[i8], query: &[i16], out: &mut Vec<i32>) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512bw")]
        fn with_avx512(rows: &[i8], query: &[i16], out: &mut Vec<i32>) {
            row_dots_portable(rows, query, out);
        }
        #[target_feature(enable = "avx2")]
        fn with_avx2(rows: &[i8], query: &[i16], out: &mut Vec<i32>) {
            row_dots_portable(rows, query, out);
        }
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has the feature the function was compiled for.
            return unsafe { with_avx512(rows, query, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { with_avx2(rows, query, out) };
        }
    }
    row_dots_portable(rows, query, out);
}

/// Plain indexed loops, no iterator adapters: an adapter's `fold` is a
/// function of its own that the compiler may leave out of line, and then it
/// runs without the features [`row_dots`] enabled.
#[inline(always)]
fn row_dots_portable(rows: &[i8], query: &[i16], out: &mut Vec<i32>) {
    let dims = query.len();
    if dims == 0 {
        return;
    }
    let count = rows.len() / dims;
    out.reserve(count);
    for r in 0..count {
        out.push(dot_i8_i16(&rows[r * dims..(r + 1) * dims], query));
    }
}

/// Dot product of an int8 row with an int16 vector in 32 integer lanes,
/// which the compiler turns into multiply-add instructions (`pmaddwd`, or
/// its AVX2 and AVX-512 forms where [`row_dots`] compiled it for them).
#[inline(always)]
fn dot_i8_i16(row: &[i8], query: &[i16]) -> i32 {
    const LANES: usize = 32;
    let len = row.len().min(query.len());
    let (row, query) = (&row[..len], &query[..len]);
    let blocks = len / LANES;
    let mut sums = [0i32; LANES];
    for b in 0..blocks {
        let r: &[i8; LANES] = row[b * LANES..(b + 1) * LANES]
            .try_into()
            .unwrap_or(&[0; LANES]);
        let q: &[i16; LANES] = query[b * LANES..(b + 1) * LANES]
            .try_into()
            .unwrap_or(&[0; LANES]);
        for lane in 0..LANES {
            sums[lane] += i32::from(r[lane]) * i32::from(q[lane]);
        }
    }
    let mut total = 0i32;
    for sum in sums {
        total += sum;
    }
    for k in blocks * LANES..len {
        total += i32::from(row[k]) * i32::from(query[k]);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_integer_dot_product_is_the_plain_sum() {
        for len in [0, 7, 16, 384, 390] {
            let a: Vec<i8> = (0..len)
                .map(|i| (((i * 7) % 255) as i8).max(-127))
                .collect();
            let b: Vec<i16> = (0..len)
                .map(|i| ((i * 131) % 30000) as i16 - 15000)
                .collect();
            let plain: i64 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| i64::from(x) * i64::from(y))
                .sum();
            assert_eq!(i64::from(dot_i8_i16(&a, &b)), plain, "{len}");
            // Three rows through the scan the CPU picks, the extremes included.
            let rows: Vec<i8> = a
                .iter()
                .copied()
                .chain(a.iter().map(|&x| x.saturating_neg()))
                .chain(std::iter::repeat_n(i8::MIN + 1, len))
                .collect();
            let mut dots = Vec::new();
            row_dots(&rows, &b, &mut dots);
            let extreme: i64 = b.iter().map(|&y| -127 * i64::from(y)).sum();
            let expected: Vec<i64> = if len == 0 {
                Vec::new()
            } else {
                vec![plain, -plain, extreme]
            };
            let got: Vec<i64> = dots.into_iter().map(i64::from).collect();
            assert_eq!(got, expected, "{len}");
        }
    }
}
