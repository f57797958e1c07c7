//! The tokenizer stored in a GGUF file's `tokenizer.ggml.*` metadata. Not rebuilt yet in
//! this commit: a `tokenizer.json` beside the `.gguf` file is required until it is.
use crate::error::{Error, Result};

/// Rebuild the tokenizer of a GGUF file.
pub fn from_gguf(
    _content: &candle_core::quantized::gguf_file::Content,
) -> Result<tokenizers::Tokenizer> {
    Err(Error::Compute(
        "rebuilding the tokenizer from GGUF metadata is not implemented yet; put the model's tokenizer.json beside the .gguf file".into(),
    ))
}
