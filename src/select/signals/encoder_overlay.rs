//! Which overlay of fine-tuned weights the model runs with, if any
//! (`scripts/embedding/finetune.py`; docs/decisions/0023-encoder-fine-tune.md).
//!
//! An overlay is a safetensors file holding some of the model's tensors
//! (its last layer, trained on the example requests) and, in its header's
//! metadata, `base_sha256`: the digest of the `model.safetensors` it was
//! trained from. It is applied only over that file: a tuned layer over
//! other weights would give vectors that mean nothing.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use crate::platform::settings;

/// An overlay chosen for the model, and what names it in the vector
/// cache's file name (vectors computed with and without it differ).
pub struct Overlay {
    pub bytes: Cow<'static, [u8]>,
    pub id: [u8; 8],
}

/// The overlay for the model whose `model.safetensors` holds `weights`:
/// the file `ZEN_ENCODER_OVERLAY` names, none when it says `none` or when
/// the overlay was trained from other weights (logged), else `shipped`.
pub fn for_model(weights: &[u8], shipped: &'static [u8]) -> Option<Overlay> {
    let (bytes, named) = match settings::get_os(settings::ENCODER_OVERLAY) {
        Some(value) if value == "none" => return None,
        Some(path) => match std::fs::read(&path) {
            Ok(bytes) => (Cow::Owned(bytes), true),
            Err(error) => {
                tracing::warn!(path = %std::path::Path::new(&path).display(), %error, "cannot read the encoder overlay; the model runs as published");
                return None;
            }
        },
        None if shipped.is_empty() => return None,
        None => (Cow::Borrowed(shipped), false),
    };
    fitting(bytes, named, weights)
}

/// `bytes` as the overlay of `weights` if it was trained from them;
/// `named`: the user named the file (a mismatch is then worth a warning).
fn fitting(bytes: Cow<'static, [u8]>, named: bool, weights: &[u8]) -> Option<Overlay> {
    let base = match base_digest(&bytes) {
        Ok(base) => base,
        Err(problem) => {
            tracing::warn!(%problem, "the encoder overlay is unusable; the model runs as published");
            return None;
        }
    };
    let actual = hex::encode(Sha256::digest(weights));
    if base != actual {
        // The shipped overlay fits the default model only: another model
        // the user chose runs as published, which is no fault.
        if named {
            tracing::warn!(overlay_base = %base, model = %actual, "the encoder overlay was trained from other weights; the model runs as published");
        } else {
            tracing::debug!(
                "the shipped encoder overlay is for all-MiniLM-L6-v2 as published; this model runs without it"
            );
        }
        return None;
    }
    let digest = Sha256::digest(&bytes);
    let mut id = [0; 8];
    id.copy_from_slice(&digest[..8]);
    Some(Overlay { bytes, id })
}

/// The `base_sha256` a safetensors file's header metadata names.
fn base_digest(bytes: &[u8]) -> Result<String, String> {
    let size: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or("shorter than a safetensors header")?;
    let end = usize::try_from(u64::from_le_bytes(size))
        .ok()
        .and_then(|n| n.checked_add(8))
        .filter(|&end| end <= bytes.len())
        .ok_or("its header runs past the file's end")?;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..end])
        .map_err(|error| format!("its header is not JSON: {error}"))?;
    header
        .pointer("/__metadata__/base_sha256")
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .ok_or_else(|| "its header names no base_sha256".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with_metadata(metadata: &str) -> Vec<u8> {
        let header = format!(r#"{{"__metadata__":{metadata}}}"#);
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        bytes
    }

    #[test]
    fn an_overlay_applies_only_over_the_weights_it_was_trained_from() {
        let base = hex::encode(Sha256::digest(b"the weights"));
        let file = file_with_metadata(&format!(r#"{{"base_sha256":"{base}"}}"#));
        let applied = fitting(Cow::Owned(file.clone()), true, b"the weights").unwrap();
        assert_eq!(&*applied.bytes, &file[..]);
        assert!(fitting(Cow::Owned(file), true, b"other weights").is_none());
    }

    #[test]
    fn an_overlay_names_the_weights_it_was_trained_from() {
        let file = file_with_metadata(r#"{"base_sha256":"abc123"}"#);
        assert_eq!(base_digest(&file).unwrap(), "abc123");
    }

    #[test]
    fn an_overlay_without_its_base_or_with_a_broken_header_is_refused() {
        assert!(base_digest(&file_with_metadata("{}")).is_err());
        assert!(base_digest(b"1234").is_err());
        let mut overlong = file_with_metadata(r#"{"base_sha256":"abc"}"#);
        overlong[0] = 0xff;
        assert!(base_digest(&overlong).is_err());
    }
}
