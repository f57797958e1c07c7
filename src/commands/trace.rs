//! `codescope trace`: the forward pass of one snippet (subwords, attention, hidden states,
//! surprisal) as JSON or a summary.

use super::*;

pub(super) fn trace_cmd(settings: &Settings, args: &TraceArgs) -> Result<()> {
    let inp = input::read(&args.file)?;
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(settings.random_weights),
    )?;
    let opts = ForwardOptions {
        hidden: args.hidden,
        cancel: None,
        ..Default::default()
    };
    // The input's language: PLBART's encoder input ends with its code.
    let lang = settings.language_for(&args.file, &inp.text);
    let enc = m.encode_code(&inp.text, m.info.window, Some(lang))?;
    let t = m.trace_encoded(&inp.text, enc, &opts, args.surprisal)?;
    if t.truncated > 0 {
        crate::logging::notice(format_args!(
            "notice: input truncated to the window of {} tokens ({} tokens dropped)",
            m.info.window, t.truncated
        ));
    }
    if args.json {
        let stdout = std::io::stdout().lock();
        let mut w = std::io::BufWriter::new(stdout);
        serde_json::to_writer(&mut w, &t.json())
            .map_err(|e| Error::io("<stdout>", std::io::Error::other(e)))?;
        writeln!(w)
            .and_then(|_| w.flush())
            .map_err(|e| Error::io("<stdout>", e))?;
        Ok(())
    } else {
        print_summary(&inp.name, &t)
    }
}

/// A readable summary of a trace: model, input, and per layer the attention's entropy,
/// how much goes to special tokens, and the most attended token.
pub fn print_summary(name: &str, t: &Trace) -> Result<()> {
    // Built first, then written by `print` (made printable for a terminal).
    let mut out: Vec<u8> = Vec::new();
    let w = |e: std::io::Error| Error::io("<stdout>", e);
    let m = &t.model;
    let n = t.tokens.len();
    let specials = t.tokens.iter().filter(|s| s.special).count();
    writeln!(
        out,
        "model    {} ({}, {} layers x {} heads, hidden {}{})",
        m.source,
        m.architecture_note(),
        m.layers,
        m.heads,
        m.hidden_size,
        m.weights_note()
    )
    .map_err(w)?;
    writeln!(
        out,
        "input    {name}: {} bytes, {n} tokens ({specials} special)",
        t.text.len()
    )
    .map_err(w)?;
    if t.truncated > 0 {
        writeln!(
            out,
            "notice   truncated to the window of {} tokens: {} tokens dropped",
            m.window, t.truncated
        )
        .map_err(w)?;
    }
    writeln!(out, "forward  {:.1} ms", t.elapsed.as_secs_f64() * 1e3).map_err(w)?;
    writeln!(
        out,
        "\nlayer  entropy(bits)  to-special  most attended token (mean weight)"
    )
    .map_err(w)?;
    for l in 0..t.attention.num_layers() {
        let mut entropy = 0.0f64;
        let mut special = 0.0f64;
        let mut col = vec![0.0f64; n];
        for h in 0..m.heads {
            for q in 0..n {
                let row = t.attention.row(l, h, q);
                entropy += crate::analysis::entropy::row_entropy(row).unwrap_or(0.0);
                for (k, &a) in row.iter().enumerate() {
                    let a = a as f64;
                    if t.tokens[k].special {
                        special += a;
                    }
                    col[k] += a;
                }
            }
        }
        let rows = (m.heads * n) as f64;
        let (best, wsum) = col
            .iter()
            .enumerate()
            .filter(|(k, _)| !t.tokens[*k].special)
            .fold(
                (0, f64::MIN),
                |acc, (k, &v)| if v > acc.1 { (k, v) } else { acc },
            );
        let label = t
            .tokens
            .get(best)
            .map(|s| format!("{:?} @{}", &t.text[s.start..s.end], s.start))
            .unwrap_or_default();
        writeln!(
            out,
            "{:>5}  {:>13.2}  {:>9.1}%  {label} ({:.3})",
            l + 1,
            entropy / rows,
            100.0 * special / rows,
            wsum / rows
        )
        .map_err(w)?;
    }
    if let Some(s) = &t.surprisal {
        print_surprisal(&mut out, t, s).map_err(w)?;
    }
    print(&String::from_utf8_lossy(&out))
}

/// Perplexity of the snippet and its most surprising tokens with the model's guesses.
fn print_surprisal(out: &mut impl Write, t: &Trace, s: &model::Surprisal) -> std::io::Result<()> {
    match (s.perplexity(&t.tokens), s.mean_bits(&t.tokens)) {
        (Some(ppl), Some(bits)) => writeln!(
            out,
            "\nperplexity {ppl:.2} ({bits:.2} bits/token over the scored tokens)"
        )?,
        _ => writeln!(
            out,
            "\nperplexity n/a (no token has a prefix to predict it)"
        )?,
    }
    let top = s.most_surprising(&t.tokens, 10);
    if !top.is_empty() {
        writeln!(out, "most surprising tokens (bits; model's best guess)")?;
    }
    for i in top {
        let tok = &t.tokens[i];
        let guess = s
            .top_next
            .get(i.wrapping_sub(1))
            .and_then(|g| g.first())
            .map(|g| format!("{:?} p={:.2}", g.token.as_deref().unwrap_or("?"), g.p))
            .unwrap_or_default();
        writeln!(
            out,
            "  {:>7.2}  {:?} @{}  (guess {guess})",
            s.bits[i].unwrap_or(0.0),
            &t.text[tok.start..tok.end],
            tok.start
        )?;
    }
    Ok(())
}
