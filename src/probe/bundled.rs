//! The bundled probe corpus: `assets/probe/{python,java}`, functions written for
//! codescope (loops, classes, comprehensions, exceptions, generics, lambdas, string
//! handling, arithmetic), compiled into the binary so `codescope probe` works anywhere.
//! One snippet per outermost function / method, as [`crate::corpus::functions`] cuts them.

use crate::corpus::{functions, Snippet};
use crate::syntax::Language;

/// `(path, language, text)` of every bundled file.
pub const FILES: &[(&str, Language, &str)] = &[
    (
        "assets/probe/python/arithmetic.py",
        Language::Python,
        include_str!("../../assets/probe/python/arithmetic.py"),
    ),
    (
        "assets/probe/python/classes.py",
        Language::Python,
        include_str!("../../assets/probe/python/classes.py"),
    ),
    (
        "assets/probe/python/collections_ops.py",
        Language::Python,
        include_str!("../../assets/probe/python/collections_ops.py"),
    ),
    (
        "assets/probe/python/control.py",
        Language::Python,
        include_str!("../../assets/probe/python/control.py"),
    ),
    (
        "assets/probe/python/text.py",
        Language::Python,
        include_str!("../../assets/probe/python/text.py"),
    ),
    (
        "assets/probe/java/Arithmetic.java",
        Language::Java,
        include_str!("../../assets/probe/java/Arithmetic.java"),
    ),
    (
        "assets/probe/java/Collections.java",
        Language::Java,
        include_str!("../../assets/probe/java/Collections.java"),
    ),
    (
        "assets/probe/java/Control.java",
        Language::Java,
        include_str!("../../assets/probe/java/Control.java"),
    ),
    (
        "assets/probe/java/Objects.java",
        Language::Java,
        include_str!("../../assets/probe/java/Objects.java"),
    ),
    (
        "assets/probe/java/Text.java",
        Language::Java,
        include_str!("../../assets/probe/java/Text.java"),
    ),
];

/// The bundled snippets, optionally of one language only, in file order.
pub fn snippets(lang: Option<Language>) -> Vec<Snippet> {
    let mut out = Vec::new();
    for &(path, l, text) in FILES {
        if lang.is_some_and(|x| x != l) {
            continue;
        }
        for (line, code) in functions(text, l) {
            out.push(Snippet {
                origin: format!("{path}:{line}"),
                language: l,
                code,
                code_tokens: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_corpus_has_150_functions_per_language_that_parse_cleanly() {
        for lang in [Language::Python, Language::Java] {
            let s = snippets(Some(lang));
            assert!(s.len() >= 150, "{lang}: {} functions", s.len());
            for x in &s {
                let syn = crate::syntax::parse(&x.code, lang).unwrap();
                assert!(syn.errors.is_empty(), "{}: {:?}", x.origin, syn.errors);
            }
        }
    }
}
