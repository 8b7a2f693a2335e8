//! Reading the model's tensors, from its own file or from an overlay that
//! replaces some of them.

use std::{cell::RefCell, collections::HashSet};

use safetensors::{Dtype, SafeTensors};

/// The tensors of a safetensors file, found under a prefix, and those of
/// an optional overlay (named without the prefix) that take their place.
pub(crate) struct Weights<'a> {
    file: SafeTensors<'a>,
    prefix: &'static str,
    overlay: Option<SafeTensors<'a>>,
    /// The overlay's tensors the model has read.
    overlay_read: RefCell<HashSet<String>>,
}

impl<'a> Weights<'a> {
    pub(crate) fn new(
        file: SafeTensors<'a>,
        prefix: &'static str,
        overlay: Option<SafeTensors<'a>>,
    ) -> Self {
        Weights {
            file,
            prefix,
            overlay,
            overlay_read: RefCell::default(),
        }
    }

    /// The tensor `name` as f32 values, if it has this shape: the
    /// overlay's where it holds one of that name.
    pub(crate) fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        if let Some(view) = self.overlay.as_ref().and_then(|o| o.tensor(name).ok()) {
            self.overlay_read.borrow_mut().insert(name.to_owned());
            return values(&format!("the overlay's {name}"), &view, shape);
        }
        let full = format!("{}{name}", self.prefix);
        let view = self
            .file
            .tensor(&full)
            .map_err(|_| format!("the weights have no tensor {full}"))?;
        values(&format!("tensor {full}"), &view, shape)
    }

    /// An error when the overlay holds a tensor the model never read: a
    /// file made for another model (or misnamed) must not pass for applied.
    pub(crate) fn overlay_fully_read(&self) -> Result<(), String> {
        let Some(overlay) = &self.overlay else {
            return Ok(());
        };
        let read = self.overlay_read.borrow();
        let mut unread: Vec<&str> = overlay
            .names()
            .into_iter()
            .filter(|name| !read.contains(*name))
            .collect();
        if unread.is_empty() {
            return Ok(());
        }
        unread.sort_unstable();
        Err(format!(
            "the overlay holds tensors this model does not read: {}",
            unread.join(", ")
        ))
    }
}

/// `view`'s values as f32 (from f32 or f16), if it has `shape`.
fn values(
    what: &str,
    view: &safetensors::tensor::TensorView<'_>,
    shape: &[usize],
) -> Result<Vec<f32>, String> {
    if view.shape() != shape {
        return Err(format!(
            "{what} has shape {:?}, this configuration needs {shape:?}",
            view.shape()
        ));
    }
    match view.dtype() {
        Dtype::F32 => Ok(view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()),
        Dtype::F16 => Ok(view
            .data()
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect()),
        other => Err(format!(
            "{what} holds {other:?} values; only F32 and F16 weights are read"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file of 1-D tensors: (name, dtype, values' bytes).
    fn file(tensors: &[(&str, &str, Vec<u8>)]) -> Vec<u8> {
        let mut header = String::from("{");
        let mut data: Vec<u8> = Vec::new();
        for (at, (name, dtype, bytes)) in tensors.iter().enumerate() {
            let width = if *dtype == "F16" { 2 } else { 4 };
            if at > 0 {
                header.push(',');
            }
            header.push_str(&format!(
                r#""{name}":{{"dtype":"{dtype}","shape":[{}],"data_offsets":[{},{}]}}"#,
                bytes.len() / width,
                data.len(),
                data.len() + bytes.len()
            ));
            data.extend(bytes);
        }
        header.push('}');
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    fn f32s(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn f16s(values: &[f32]) -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
            .collect()
    }

    #[test]
    fn an_overlay_tensor_takes_the_place_of_the_models_and_may_be_half_floats() {
        let base = file(&[("a", "F32", f32s(&[1.0, 2.0])), ("b", "F32", f32s(&[3.0]))]);
        let overlay = file(&[("a", "F16", f16s(&[0.5, -4.0]))]);
        let weights = Weights::new(
            SafeTensors::deserialize(&base).unwrap(),
            "",
            Some(SafeTensors::deserialize(&overlay).unwrap()),
        );
        assert_eq!(weights.get("a", &[2]).unwrap(), vec![0.5, -4.0]);
        assert_eq!(weights.get("b", &[1]).unwrap(), vec![3.0]);
        assert!(weights.get("a", &[3]).is_err(), "a shape that does not fit");
        weights.overlay_fully_read().unwrap();
    }

    #[test]
    fn an_overlay_with_tensors_the_model_never_reads_is_refused() {
        let base = file(&[("a", "F32", f32s(&[1.0]))]);
        let overlay = file(&[("a", "F32", f32s(&[2.0])), ("stray", "F32", f32s(&[0.0]))]);
        let weights = Weights::new(
            SafeTensors::deserialize(&base).unwrap(),
            "",
            Some(SafeTensors::deserialize(&overlay).unwrap()),
        );
        weights.get("a", &[1]).unwrap();
        let refused = weights.overlay_fully_read().unwrap_err();
        assert!(refused.contains("stray"), "{refused}");
    }
}
