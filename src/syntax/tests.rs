//! The table of tricky cases: docs/METHODS.md's worked example edge for edge, ~60 constructs
//! of both languages with hand-written expectations, wrapping, broken code, invariants
//! over the bundled samples, and property tests (random bytes, random subword splits).
//!
//! Token references are written `"text#n"`: the n-th (0-based) token whose text is
//! `text` (`"x"` means `"x#0"`).

use proptest::prelude::*;

use super::*;

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

fn py(src: &str) -> Syntax {
    let s = parse(src, Language::Python).expect("python parses");
    check_invariants(&s);
    s
}

fn java(src: &str) -> Syntax {
    let s = parse(src, Language::Java).expect("java parses");
    check_invariants(&s);
    s
}

/// Index of `"text#n"`.
fn t(s: &Syntax, spec: &str) -> usize {
    let (text, n) = match spec.rsplit_once('#') {
        Some((a, b)) if !a.is_empty() && b.chars().all(|c| c.is_ascii_digit()) => {
            (a, b.parse().unwrap())
        }
        _ => (spec, 0),
    };
    s.tokens
        .iter()
        .enumerate()
        .filter(|(_, tok)| tok.text == text)
        .nth(n)
        .unwrap_or_else(|| panic!("no token {spec:?} in {:?}", texts(s)))
        .0
}

fn texts(s: &Syntax) -> Vec<&str> {
    s.tokens.iter().map(|t| t.text.as_str()).collect()
}

fn role<'a>(s: &'a Syntax, spec: &str) -> Option<&'a str> {
    s.tokens[t(s, spec)].role.as_deref()
}

fn cat(s: &Syntax, spec: &str) -> Category {
    s.tokens[t(s, spec)].category
}

fn kind<'a>(s: &'a Syntax, spec: &str) -> &'a str {
    &s.tokens[t(s, spec)].kind
}

fn has_dfg(s: &Syntax, from: &str, to: &str, k: DfgKind) -> bool {
    s.graphs.dfg_refined.contains(&(t(s, from), t(s, to), k))
}

/// All DFG edges leaving `from`, as ("text#n", kind) using token indices for clarity.
fn dfg_from(s: &Syntax, from: &str) -> Vec<(usize, DfgKind)> {
    let i = t(s, from);
    s.graphs
        .dfg_refined
        .iter()
        .filter(|e| e.0 == i)
        .map(|e| (e.1, e.2))
        .collect()
}

const CF: DfgKind = DfgKind::ComesFrom;
const CP: DfgKind = DfgKind::ComputedFrom;

/// The module invariants (mod.rs docs), checked on every parse in this file.
fn check_invariants(s: &Syntax) {
    let n = s.tokens.len();
    for (i, tok) in s.tokens.iter().enumerate() {
        assert!(tok.start < tok.end, "empty token {i}");
        assert_eq!(&s.source[tok.start..tok.end], tok.text, "span of token {i}");
        assert_eq!(tok.coarse, tok.category.coarse());
        assert_eq!(
            tok.role.is_some(),
            tok.category == Category::Identifier,
            "{tok:?}"
        );
        if let Some(r) = &tok.role {
            assert!(r.parse::<IdentRole>().is_ok(), "{r}");
        }
        if i > 0 {
            assert!(s.tokens[i - 1].end <= tok.start, "tokens overlap at {i}");
        }
        for &(cs, ce) in &s.comments {
            assert!(
                ce <= tok.start || cs >= tok.end,
                "token {i} inside a comment"
            );
        }
    }
    let sorted_unique = |v: &[(usize, usize)]| v.windows(2).all(|w| w[0] < w[1]);
    for g in [
        &s.graphs.ast_motif(),
        &s.graphs.syntactic(),
        &s.graphs.syntactic_identifier(),
    ] {
        assert!(sorted_unique(g));
        assert!(g.iter().all(|&(i, j)| i != j && i < n && j < n));
    }
    assert!(s.graphs.dfg_refined.windows(2).all(|w| w[0] < w[1]));
    for g in Graph::ALL {
        assert_eq!(s.graphs.edge_count(g), s.graphs.edges(g).len(), "{g}");
    }
    // The study's graph: any tokens, self edges allowed (loop bodies walked twice).
    assert!(s.graphs.dfg.windows(2).all(|w| w[0] < w[1]));
    assert!(s.graphs.dfg.iter().all(|&(i, j, _)| i < n && j < n));
    for &(i, j, _) in &s.graphs.dfg_refined {
        assert!(i != j && i < n && j < n);
        assert_eq!(s.tokens[i].category, Category::Identifier);
        assert_eq!(s.tokens[j].category, Category::Identifier);
    }
    let is_id = |i: usize| s.tokens[i].coarse == Coarse::Identifier;
    for &(i, j) in &s.graphs.syntactic() {
        assert!(!is_id(i) && !is_id(j) && s.graphs.ast_motif().binary_search(&(i, j)).is_ok());
    }
    for &(i, j) in &s.graphs.syntactic_identifier() {
        assert!(is_id(i) != is_id(j) && s.graphs.ast_motif().binary_search(&(i, j)).is_ok());
    }
    let expected_syn = s
        .graphs
        .ast_motif()
        .iter()
        .filter(|&&(i, j)| !is_id(i) && !is_id(j))
        .count();
    assert_eq!(expected_syn, s.graphs.syntactic().len());
    for e in &s.errors {
        assert!(e.start <= e.end && e.end <= s.source.len());
    }
    let p = paper_text(s);
    for (i, &(a, b)) in p.spans.iter().enumerate() {
        assert_eq!(&p.text[a..b], s.tokens[i].text);
    }
}

// ---------------------------------------------------------------------------------------
// docs/METHODS.md section 2, worked example
// ---------------------------------------------------------------------------------------

const WORKED: &str = "def add(a, b=1):\n  x = a + b\n  return x";

#[test]
fn worked_example_tokens() {
    let s = py(WORKED);
    assert_eq!(
        texts(&s),
        [
            "def", "add", "(", "a", ",", "b", "=", "1", ")", ":", "x", "=", "a", "+", "b",
            "return", "x"
        ]
    );
    use Category::*;
    let cats: Vec<Category> = s.tokens.iter().map(|t| t.category).collect();
    assert_eq!(
        cats,
        [
            Keyword, Identifier, Delimiter, Identifier, Delimiter, Identifier, Operator, Literal,
            Delimiter, Delimiter, Identifier, Operator, Identifier, Operator, Identifier, Keyword,
            Identifier
        ]
    );
    let depths: Vec<usize> = s.tokens.iter().map(|t| t.depth).collect();
    // module(0) > function_definition(1) > parameters(2) > default_parameter(3) ...
    assert_eq!(depths, [2, 2, 3, 3, 3, 4, 4, 4, 3, 2, 5, 5, 6, 6, 6, 4, 4]);
    assert_eq!(role(&s, "add"), Some("definition:function"));
    assert_eq!(role(&s, "a#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "b#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "x#0"), Some("definition:variable"));
    assert_eq!(role(&s, "a#1"), Some("use:variable"));
    assert_eq!(role(&s, "x#1"), Some("use:variable"));
}

#[test]
fn worked_example_motif_graph_edge_for_edge() {
    let s = py(WORKED);
    // 0 def 1 add 2 ( 3 a 4 , 5 b 6 = 7 1 8 ) 9 : 10 x 11 = 12 a 13 + 14 b 15 return 16 x
    #[rustfmt::skip]
    let rows: [(usize, &[usize]); 17] = [
        (0, &[1, 2, 3, 4, 8, 9]), // def -> add ( a , ) :
        (1, &[0, 2, 3, 4, 8, 9]),
        (2, &[3, 4, 5, 6, 7, 8]), // ( -> a , and b = 1 (default_parameter) )
        (3, &[2, 4, 5, 6, 7, 8]),
        (4, &[2, 3, 5, 6, 7, 8]),
        (5, &[6, 7]), // b -> = 1
        (6, &[5, 7]),
        (7, &[5, 6]),
        (8, &[2, 3, 4, 5, 6, 7]),
        (9, &[0, 1, 2, 3, 4, 8]), // : -> def add ( a , )
        (10, &[11, 12, 13, 14]),  // x -> = a + b
        (11, &[10, 12, 13, 14]),
        (12, &[13, 14]), // a -> + b
        (13, &[12, 14]),
        (14, &[12, 13]),
        (15, &[16]), // return -> x
        (16, &[15]),
    ];
    let expected: Vec<(usize, usize)> = rows
        .iter()
        .flat_map(|&(i, js)| js.iter().map(move |&j| (i, j)))
        .collect();
    assert_eq!(expected.len(), 64);
    assert_eq!(s.graphs.ast_motif(), expected);
}

#[test]
fn worked_example_derived_graphs() {
    let s = py(WORKED);
    #[rustfmt::skip]
    let syntactic = vec![
        (0, 2), (0, 4), (0, 8), (0, 9),
        (2, 4), (2, 6), (2, 7), (2, 8),
        (4, 2), (4, 6), (4, 7), (4, 8),
        (6, 7), (7, 6),
        (8, 2), (8, 4), (8, 6), (8, 7),
        (9, 0), (9, 2), (9, 4), (9, 8),
        (11, 13),
    ];
    assert_eq!(s.graphs.syntactic(), syntactic);
    #[rustfmt::skip]
    let syn_id = vec![
        (0, 1), (0, 3),
        (1, 0), (1, 2), (1, 4), (1, 8), (1, 9),
        (2, 3), (2, 5),
        (3, 2), (3, 4), (3, 6), (3, 7), (3, 8),
        (4, 3), (4, 5),
        (5, 6), (5, 7),
        (6, 5), (7, 5),
        (8, 3), (8, 5),
        (9, 1), (9, 3),
        (10, 11), (10, 13),
        (11, 10), (11, 12), (11, 14),
        (12, 13),
        (13, 12), (13, 14),
        (14, 13),
        (15, 16), (16, 15),
    ];
    assert_eq!(s.graphs.syntactic_identifier(), syn_id);
    // Identifier-identifier motif edges are in neither: add->a, a->b, x->a, x->b, a->b, b->a.
    assert_eq!(s.graphs.ast_motif().len() - 23 - 35, 6);
    assert_eq!(
        s.graphs.dfg_refined,
        vec![
            (10, 12, CP), // x computedFrom a
            (10, 14, CP), // x computedFrom b
            (12, 3, CF),  // a from the parameter a
            (14, 5, CF),  // b from the parameter b
            (16, 10, CF), // returned x from x
        ]
    );
    // The study's graph also has the literal source of the default (`b <- 1`).
    assert_eq!(
        s.graphs.dfg,
        vec![
            (5, 7, CF),
            (10, 12, CP),
            (10, 14, CP),
            (12, 3, CF),
            (14, 5, CF),
            (16, 10, CF),
        ]
    );
}

#[test]
fn worked_example_tree_distance_and_json() {
    let s = py(WORKED);
    assert_eq!(s.tree_distance(0, 12), 6); // def (2) .. a (6), LCA function_definition (1)
    assert_eq!(s.tree_distance(10, 12), 3); // LCA assignment at depth 4
    assert_eq!(s.tree_distance(15, 16), 2);
    assert_eq!(s.tree_distance(12, 12), 0);
    assert_eq!(s.tree_distance(3, 12), s.tree_distance(12, 3));
    assert_eq!(s.lca(12, 14).kind, "binary_operator");
    let j = s.to_json().unwrap();
    assert_eq!(j["language"], "python");
    assert_eq!(
        j["tokens"][1],
        serde_json::json!({"text": "add", "start": 4, "end": 7, "kind": "identifier",
            "category": "identifier", "coarse": "identifier",
            "role": "definition:function", "depth": 2})
    );
    assert_eq!(j["tokens"][0]["role"], serde_json::Value::Null);
    assert_eq!(j["tokens"][0]["coarse"], "syntactic");
    assert_eq!(j["graphs"]["ast_motif"][0], serde_json::json!([0, 1]));
    assert_eq!(
        j["graphs"]["dfg_refined"][0],
        serde_json::json!([10, 12, "computedFrom"])
    );
    assert_eq!(
        j["graphs"]["dfg_refined"][2],
        serde_json::json!([12, 3, "comesFrom"])
    );
    assert_eq!(
        j["graphs"]["dfg"][0],
        serde_json::json!([5, 7, "comesFrom"])
    );
    assert_eq!(j["errors"], serde_json::json!([]));
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys.len(), 4);
    for k in ["language", "tokens", "graphs", "errors"] {
        assert!(keys.contains(&k));
    }
    let gk: Vec<&String> = j["graphs"].as_object().unwrap().keys().collect();
    assert_eq!(
        gk,
        [
            "ast_motif",
            "dfg",
            "dfg_refined",
            "syntactic",
            "syntactic_identifier"
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Python constructs
// ---------------------------------------------------------------------------------------

#[test]
fn py_decorators() {
    let s =
        py("@app.route(\"/x\", methods=[\"GET\"])\n@cached\ndef index():\n    return render()\n");
    assert_eq!(cat(&s, "@"), Category::Operator);
    assert_eq!(role(&s, "app"), Some("use:decorator"));
    assert_eq!(role(&s, "route"), Some("use:decorator"));
    assert_eq!(role(&s, "methods"), Some("use:keyword_argument"));
    assert_eq!(role(&s, "cached"), Some("use:decorator"));
    assert_eq!(role(&s, "index"), Some("definition:function"));
    assert_eq!(role(&s, "render"), Some("use:function"));
    assert_eq!(kind(&s, "\"/x\""), "string");
    // The first `@`'s only sibling is the `call` node, which has no leaf children: no
    // motif edges. The second decorator is `@` + identifier: `@ -> cached`.
    assert!(s.graphs.ast_motif().iter().all(|e| e.0 != 0));
    let at1 = t(&s, "@#1");
    assert!(s.graphs.ast_motif().contains(&(at1, t(&s, "cached"))));
}

#[test]
fn py_fstring_with_nested_expressions_is_one_token() {
    let src = "s = f\"{a + b!r:>{width}} and {c['k']}\" \"tail\"\n";
    let s = py(src);
    assert_eq!(
        texts(&s),
        ["s", "=", "f\"{a + b!r:>{width}} and {c['k']}\"", "\"tail\""]
    );
    assert_eq!(kind(&s, "\"tail\""), "string");
    assert_eq!(s.tokens[2].kind, "string");
    assert_eq!(s.tokens[2].category, Category::Literal);
    // module > expression_statement > assignment > concatenated_string > string
    assert_eq!(s.tokens[2].depth, 4);
    // No identifier inside the f-string is a token, so s is computed from nothing.
    assert!(s.graphs.dfg_refined.is_empty());
    // The study's grammar gave each string quote children, so the strings are not leaves
    // of concatenated_string: s sees only `=` (its leaf sibling), and a string has no
    // outgoing edges (its pieces merge into the one token). Before the study-exact motif
    // graph, s also saw both strings and the strings saw each other.
    assert_eq!(s.graphs.ast_motif(), vec![(0, 1), (1, 0)]);
    // The study's data flow: s computedFrom both string tokens (every leaf whose type is
    // not its text is a value).
    assert_eq!(s.graphs.dfg, vec![(0, 2, CP), (0, 3, CP)]);
}

#[test]
fn py_strings_get_incoming_motif_edges_only() {
    // The study's traverse_node on its grammar: `f` and `,` are leaf siblings of the
    // argument list's children; a string is reached one level down (through its opening
    // quote) from its siblings, never at level 0, and has no targets of its own.
    let s = py("f(\"a\", b)\nx = 'c'\n");
    let (lp, a, comma, b, rp) = (
        t(&s, "("),
        t(&s, "\"a\""),
        t(&s, ","),
        t(&s, "b#0"),
        t(&s, ")"),
    );
    let g = s.graphs.ast_motif();
    for from in [lp, comma, b, rp] {
        assert!(g.contains(&(from, a)), "{from} -> string");
    }
    assert!(
        g.iter().all(|&(i, _)| i != a),
        "a string has no outgoing edge"
    );
    // `f` is a sibling of the argument_list: it sees its leaves, not the string inside.
    assert!(g.contains(&(t(&s, "f"), lp)));
    assert!(!g.contains(&(t(&s, "f"), a)));
    // x = 'c': x and = see the string one level down (it is a non-leaf sibling).
    let c = t(&s, "'c'");
    assert!(g.contains(&(t(&s, "x"), c)) && g.contains(&(t(&s, "="), c)));
    // `is not` / `not in` are two keyword leaves of the comparison, as in the study.
    let s = py("def f(a, b):\n    return a is not b\n");
    let g = s.graphs.ast_motif();
    for (i, j) in [
        ("is", "a#1"),
        ("is", "b#1"),
        ("not", "a#1"),
        ("not", "b#1"),
        ("is", "not"),
        ("return", "is"),
        ("return", "not"),
    ] {
        assert!(g.contains(&(t(&s, i), t(&s, j))), "{i} -> {j}");
    }
    // `list[int]` is a subscript of the study's grammar: `[` sees `list`, `int`, `]`.
    let s = py("def f(x: list[int]):\n    pass\n");
    let g = s.graphs.ast_motif();
    assert!(g.contains(&(t(&s, "["), t(&s, "list"))));
    assert!(g.contains(&(t(&s, "["), t(&s, "int"))));
}

#[test]
fn py_lambda() {
    let s = py("step = 2\nf = lambda x, y=step: x * y + z\n");
    assert_eq!(cat(&s, "lambda"), Category::Keyword);
    assert_eq!(role(&s, "x#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "y#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "x#1"), Some("use:variable"));
    assert!(has_dfg(&s, "x#1", "x#0", CF));
    assert!(has_dfg(&s, "y#1", "y#0", CF));
    // default value: the parameter comesFrom it (GraphCodeBERT's default_parameter rule)
    assert!(has_dfg(&s, "y#0", "step#1", CF));
    assert!(has_dfg(&s, "step#1", "step#0", CF));
    assert!(has_dfg(&s, "f", "z", CP));
    // the lambda's parameter does not leak: a later x is unbound
    let s2 = py("f = lambda x: x\nprint(x)\n");
    assert!(dfg_from(&s2, "x#2").is_empty());
}

#[test]
fn py_list_comprehension() {
    let s = py("evens = [n * 2 for n in nums if n % 2 == 0]\n");
    assert_eq!(role(&s, "n#1"), Some("definition:variable"));
    assert!(has_dfg(&s, "n#1", "nums", CP));
    assert!(has_dfg(&s, "n#0", "n#1", CF));
    assert!(has_dfg(&s, "n#2", "n#1", CF));
    assert!(has_dfg(&s, "evens", "nums", CP));
    assert!(has_dfg(&s, "evens", "n#0", CP));
    assert_eq!(cat(&s, "for"), Category::Keyword);
    assert_eq!(cat(&s, "%"), Category::Operator);
}

#[test]
fn py_dict_comprehension_binds_both_targets_from_the_iterable() {
    let s = py("inv = {v: k for k, v in pairs.items()}\n");
    assert_eq!(role(&s, "items"), Some("use:method"));
    assert!(has_dfg(&s, "k#1", "pairs", CP));
    assert!(has_dfg(&s, "v#1", "pairs", CP));
    assert!(has_dfg(&s, "v#0", "v#1", CF));
    assert!(has_dfg(&s, "k#0", "k#1", CF));
    // `items` on an arbitrary object is not a variable
    assert!(s.graphs.dfg_refined.iter().all(|e| e.1 != t(&s, "items")));
}

#[test]
fn py_walrus() {
    let s = py("if (n := len(xs)) > 10:\n    print(n)\n");
    assert_eq!(cat(&s, ":="), Category::Operator);
    assert_eq!(role(&s, "n#0"), Some("definition:variable"));
    assert!(has_dfg(&s, "n#0", "xs", CP));
    assert!(has_dfg(&s, "n#0", "len", CP));
    assert!(has_dfg(&s, "n#1", "n#0", CF));
}

#[test]
fn py_star_args() {
    let s = py("def f(*args, **kwargs):\n    return g(*args, **kwargs)\n");
    assert_eq!(cat(&s, "*#0"), Category::Operator);
    assert_eq!(cat(&s, "**#0"), Category::Operator);
    assert_eq!(role(&s, "args#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "kwargs#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "args#1"), Some("use:variable"));
    assert!(has_dfg(&s, "args#1", "args#0", CF));
    assert!(has_dfg(&s, "kwargs#1", "kwargs#0", CF));
    // `*` and `args` are siblings in list_splat_pattern
    assert!(s
        .graphs
        .ast_motif()
        .contains(&(t(&s, "*#0"), t(&s, "args#0"))));
}

#[test]
fn py_type_hints() {
    let s = py(
        "def f(x: int, y: List[str] = None) -> Dict[str, int]:\n    z: float = x\n    return z\n",
    );
    assert_eq!(role(&s, "int#0"), Some("use:type"));
    assert_eq!(role(&s, "List"), Some("use:type"));
    assert_eq!(role(&s, "Dict"), Some("use:type"));
    assert_eq!(role(&s, "float"), Some("use:type"));
    assert_eq!(role(&s, "x#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "y"), Some("definition:parameter"));
    assert_eq!(cat(&s, "->"), Category::Operator);
    assert_eq!(cat(&s, "None"), Category::Literal);
    assert!(has_dfg(&s, "z#0", "x#1", CP));
    assert!(has_dfg(&s, "z#1", "z#0", CF));
    // types never take part in data flow
    for i in [t(&s, "int#0"), t(&s, "float"), t(&s, "List")] {
        assert!(s.graphs.dfg_refined.iter().all(|e| e.0 != i && e.1 != i));
    }
}

#[test]
fn py_async_await() {
    let src = "async def main(url):\n    async with lock:\n        r = await get(url)\n    async for item in stream():\n        use(item)\n    return r\n";
    let s = py(src);
    assert_eq!(cat(&s, "async#0"), Category::Keyword);
    assert_eq!(cat(&s, "await"), Category::Keyword);
    assert_eq!(role(&s, "main"), Some("definition:function"));
    assert!(has_dfg(&s, "r#0", "get", CP));
    assert!(has_dfg(&s, "r#0", "url#1", CP));
    assert!(has_dfg(&s, "url#1", "url#0", CF));
    assert!(has_dfg(&s, "item#0", "stream", CP));
    assert!(has_dfg(&s, "item#1", "item#0", CF));
    assert!(has_dfg(&s, "r#1", "r#0", CF));
}

#[test]
fn py_match_statement() {
    let src = "match cmd:\n    case Point(x=0, y=yy):\n        print(yy)\n    case [first, *rest]:\n        print(first, rest)\n    case Color.RED as c:\n        pass\n    case _:\n        pass\n";
    let s = py(src);
    assert_eq!(cat(&s, "match"), Category::Keyword);
    assert_eq!(cat(&s, "_"), Category::Keyword);
    assert_eq!(role(&s, "Point"), Some("use:type"));
    assert_eq!(role(&s, "x"), Some("use:keyword_argument"));
    assert_eq!(role(&s, "yy#0"), Some("definition:variable"));
    assert_eq!(role(&s, "first#0"), Some("definition:variable"));
    assert_eq!(role(&s, "rest#0"), Some("definition:variable"));
    assert_eq!(role(&s, "Color"), Some("use:variable"));
    assert_eq!(role(&s, "RED"), Some("use:attribute"));
    assert_eq!(role(&s, "c"), Some("definition:variable"));
    assert!(has_dfg(&s, "yy#0", "cmd", CP));
    assert!(has_dfg(&s, "yy#1", "yy#0", CF));
    assert!(has_dfg(&s, "rest#0", "cmd", CP));
    assert!(has_dfg(&s, "first#1", "first#0", CF));
    assert!(has_dfg(&s, "c", "cmd", CP));
    assert!(has_dfg(&s, "c", "Color", CP));
}

#[test]
fn py_self_fields_flow_across_methods() {
    let src = "class Acc:\n    def __init__(self, start):\n        self.total = start\n    def add(self, n):\n        self.total += n\n        return self.total\n    @staticmethod\n    def make(self):\n        return self.total\n";
    let s = py(src);
    assert_eq!(role(&s, "Acc"), Some("definition:class"));
    assert_eq!(role(&s, "__init__"), Some("definition:method"));
    assert_eq!(role(&s, "self#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "total#0"), Some("definition:attribute"));
    assert_eq!(role(&s, "total#1"), Some("definition:attribute"));
    assert_eq!(role(&s, "total#2"), Some("use:attribute"));
    assert!(has_dfg(&s, "total#0", "start#1", CP));
    assert!(has_dfg(&s, "total#1", "total#0", CF)); // += reads the old value
    assert!(has_dfg(&s, "total#1", "n#1", CP));
    assert!(has_dfg(&s, "total#2", "total#1", CF));
    assert!(has_dfg(&s, "self#1", "self#0", CF));
    // a staticmethod has no receiver: `self.total` there is not the field
    assert!(dfg_from(&s, "total#3").is_empty());
}

#[test]
fn py_if_elif_without_else_merges_fallthrough() {
    let s = py("x = 1\nif c:\n    x = 2\nelif d:\n    x = 3\nprint(x)\n");
    let mut from: Vec<usize> = dfg_from(&s, "x#3").into_iter().map(|e| e.0).collect();
    from.sort();
    assert_eq!(from, [t(&s, "x#0"), t(&s, "x#1"), t(&s, "x#2")]);
}

#[test]
fn py_if_else_replaces_previous_definition() {
    let s = py("x = 1\nif c:\n    x = 2\nelse:\n    x = 3\nprint(x)\n");
    let from: Vec<usize> = dfg_from(&s, "x#3").into_iter().map(|e| e.0).collect();
    assert_eq!(from, [t(&s, "x#1"), t(&s, "x#2")]);
    assert_eq!(cat(&s, "else"), Category::Keyword);
}

#[test]
fn py_while_loop_carried_flow() {
    let s = py("i = 0\nwhile i < n:\n    i = i + 1\nprint(i)\n");
    // condition's i sees the initial i and the one assigned in the body (second pass)
    assert!(has_dfg(&s, "i#1", "i#0", CF));
    assert!(has_dfg(&s, "i#1", "i#2", CF));
    assert!(has_dfg(&s, "i#3", "i#2", CF));
    assert!(has_dfg(&s, "i#2", "i#3", CP));
    // after the loop: not entered (i#0) or after the body (i#2)
    assert!(has_dfg(&s, "i#4", "i#0", CF));
    assert!(has_dfg(&s, "i#4", "i#2", CF));
}

#[test]
fn py_for_loop_targets() {
    let s = py("total = 0\nfor k, v in d.items():\n    total += v\nreturn_value = total\n");
    assert_eq!(role(&s, "k"), Some("definition:variable"));
    assert!(has_dfg(&s, "k", "d", CP));
    assert!(has_dfg(&s, "v#0", "d", CP));
    assert!(has_dfg(&s, "total#1", "total#0", CF));
    assert!(has_dfg(&s, "total#1", "v#1", CP));
    assert!(has_dfg(&s, "v#1", "v#0", CF));
    assert!(has_dfg(&s, "total#2", "total#0", CF));
    assert!(has_dfg(&s, "total#2", "total#1", CF));
}

#[test]
fn py_try_except() {
    let s =
        py("try:\n    v = int(s)\nexcept ValueError as e:\n    v = e\nfinally:\n    done = v\n");
    assert_eq!(role(&s, "ValueError"), Some("use:variable"));
    assert_eq!(role(&s, "e#0"), Some("definition:variable"));
    assert!(has_dfg(&s, "e#0", "ValueError", CP));
    assert!(has_dfg(&s, "v#1", "e#1", CP));
    assert!(has_dfg(&s, "v#2", "v#0", CF));
    assert!(has_dfg(&s, "v#2", "v#1", CF));
}

#[test]
fn py_with_statement() {
    let s = py("with open(p) as fh, lock:\n    data = fh.read()\n");
    assert_eq!(role(&s, "fh#0"), Some("definition:variable"));
    assert_eq!(role(&s, "read"), Some("use:method"));
    assert!(has_dfg(&s, "fh#0", "open", CP));
    assert!(has_dfg(&s, "fh#0", "p", CP));
    assert!(has_dfg(&s, "fh#1", "fh#0", CF));
    assert!(has_dfg(&s, "data", "fh#1", CP));
    assert_eq!(cat(&s, "as"), Category::Keyword);
}

#[test]
fn py_imports() {
    let s = py("import numpy as np\nimport os.path\nfrom os.path import join as pjoin, exists\nx = np.zeros(3)\n");
    assert_eq!(role(&s, "numpy"), Some("use:module"));
    assert_eq!(role(&s, "np#0"), Some("definition:module"));
    assert_eq!(role(&s, "os#0"), Some("definition:module"));
    assert_eq!(role(&s, "path#0"), Some("use:module"));
    assert_eq!(role(&s, "os#1"), Some("use:module"));
    assert_eq!(role(&s, "join"), Some("use:import"));
    assert_eq!(role(&s, "pjoin"), Some("definition:import"));
    assert_eq!(role(&s, "exists"), Some("definition:import"));
    assert_eq!(role(&s, "zeros"), Some("use:method"));
    assert!(has_dfg(&s, "np#1", "np#0", CF));
    assert!(has_dfg(&s, "x", "np#1", CP));
}

#[test]
fn py_global_and_closures() {
    let s = py("count = 0\ndef inc():\n    global count\n    count += 1\ndef outer(a):\n    def inner():\n        return a\n    return inner\n");
    assert!(has_dfg(&s, "count#2", "count#0", CF));
    assert!(has_dfg(&s, "a#1", "a#0", CF)); // closure read
    assert!(has_dfg(&s, "inner#1", "inner#0", CF));
    assert_eq!(role(&s, "inner#0"), Some("definition:function"));
}

#[test]
fn py_keyword_argument_vs_variable() {
    let s = py("a = 1\nf(a, key=a)\n");
    assert_eq!(role(&s, "key"), Some("use:keyword_argument"));
    assert_eq!(role(&s, "f"), Some("use:function"));
    assert_eq!(role(&s, "a#2"), Some("use:variable"));
    assert!(has_dfg(&s, "a#2", "a#0", CF));
    let key = t(&s, "key");
    assert!(s
        .graphs
        .dfg_refined
        .iter()
        .all(|e| e.0 != key && e.1 != key));
}

#[test]
fn py_docstring_and_comments() {
    let src =
        "def f():\n    \"\"\"Doc.\n    more\"\"\"\n    # a comment\n    return 1  # trailing\n";
    let s = py(src);
    assert_eq!(
        texts(&s),
        [
            "def",
            "f",
            "(",
            ")",
            ":",
            "\"\"\"Doc.\n    more\"\"\"",
            "return",
            "1"
        ]
    );
    assert_eq!(s.tokens[5].kind, "string");
    assert_eq!(s.comments.len(), 2);
    assert_eq!(&src[s.comments[0].0..s.comments[0].1], "# a comment");
    assert_eq!(&src[s.comments[1].0..s.comments[1].1], "# trailing");
}

#[test]
fn py_literals_and_word_operators() {
    let s = py("x = not a is None and b in (True, False, ..., 0x1F, 2.5j)\n");
    for k in ["not", "is", "and", "in"] {
        assert_eq!(cat(&s, k), Category::Keyword, "{k}");
    }
    for l in ["None", "True", "False", "...", "0x1F", "2.5j"] {
        assert_eq!(cat(&s, l), Category::Literal, "{l}");
    }
    assert_eq!(cat(&s, "("), Category::Delimiter);
    assert_eq!(cat(&s, ","), Category::Delimiter);
}

#[test]
fn py_chained_and_tuple_assignments() {
    let s = py("a = b = c\nx, y = y, x\n");
    assert!(has_dfg(&s, "a", "b", CP));
    assert!(has_dfg(&s, "a", "c", CP));
    assert!(has_dfg(&s, "b", "c", CP));
    // element-wise (same arity on both sides)
    assert!(has_dfg(&s, "x#0", "y#1", CP));
    assert!(has_dfg(&s, "y#0", "x#1", CP));
    assert!(!has_dfg(&s, "x#0", "x#1", CP));
}

#[test]
fn py_subscript_and_attribute_targets() {
    let s = py("d = {}\nd[k] = v\nobj.attr = d\n");
    assert_eq!(role(&s, "d#1"), Some("use:variable"));
    assert_eq!(role(&s, "attr"), Some("definition:attribute"));
    assert!(has_dfg(&s, "d#1", "d#0", CF)); // the write reads the dict
    assert!(has_dfg(&s, "d#1", "v", CP));
    assert!(has_dfg(&s, "d#2", "d#1", CF)); // ... and redefines it
    assert!(has_dfg(&s, "obj", "d#2", CP));
    assert_eq!(cat(&s, "["), Category::Delimiter);
    assert_eq!(cat(&s, "."), Category::Delimiter);
}

#[test]
fn py_class_body_and_slices() {
    let s = py("class C(Base, metaclass=M):\n    size = 3\n    def get(self):\n        return self.size\nxs[1:2]\n");
    assert_eq!(role(&s, "Base"), Some("use:variable"));
    assert_eq!(role(&s, "metaclass"), Some("use:keyword_argument"));
    assert_eq!(role(&s, "size#0"), Some("definition:attribute"));
    assert_eq!(role(&s, "get"), Some("definition:method"));
    assert!(has_dfg(&s, "size#1", "size#0", CF)); // class attribute through self
    assert_eq!(cat(&s, ":#2"), Category::Delimiter); // the slice colon
}

#[test]
fn py_line_continuation_is_not_a_token() {
    let s = py("x = 1 + \\\n    2\n");
    assert_eq!(texts(&s), ["x", "=", "1", "+", "2"]);
}

#[test]
fn py_broken_code_keeps_going() {
    let src = "def f(:\n    x = = 2\n    return x +\nprint(x)\n";
    let s = py(src);
    assert!(!s.errors.is_empty());
    assert!(s.errors.iter().all(|e| !e.message.is_empty()));
    // the rest is still tokenized, including tokens inside ERROR nodes
    assert!(texts(&s).contains(&"def"));
    assert!(texts(&s).contains(&"print"));
    assert_eq!(texts(&s).iter().filter(|&&x| x == "=").count(), 2);
    let s2 = py("print(\"unterminated)\n");
    assert!(!s2.errors.is_empty());
    let missing = py("foo(a, b\n");
    assert!(
        missing
            .errors
            .iter()
            .any(|e| e.message.contains("missing") || e.message.contains("syntax error")),
        "{:?}",
        missing.errors
    );
}

#[test]
fn py_unicode_identifiers() {
    let s = py("café = 1\nnaïve_λ = café * 2  # ünïcode\n");
    assert_eq!(
        texts(&s),
        ["café", "=", "1", "naïve_λ", "=", "café", "*", "2"]
    );
    assert_eq!(s.tokens[3].start, 10); // "café" is 5 bytes
    assert!(has_dfg(&s, "café#1", "café#0", CF));
}

// ---------------------------------------------------------------------------------------
// Java constructs
// ---------------------------------------------------------------------------------------

fn in_class(body: &str) -> String {
    format!("class T {{\n{body}\n}}\n")
}

#[test]
fn java_generics_and_wildcards() {
    let s = java(&in_class(
        "List<? extends Number> xs = new ArrayList<>();\n<K, V extends Comparable<? super V>> V top(Map<K, V> m) { return null; }",
    ));
    assert_eq!(cat(&s, "<#0"), Category::Delimiter);
    assert_eq!(cat(&s, ">#0"), Category::Delimiter);
    assert_eq!(cat(&s, "?#0"), Category::Operator);
    assert_eq!(cat(&s, "extends#0"), Category::Keyword);
    assert_eq!(cat(&s, "super"), Category::Keyword);
    assert_eq!(role(&s, "Number"), Some("use:type"));
    assert_eq!(kind(&s, "Number"), "type_identifier");
    assert_eq!(role(&s, "xs"), Some("definition:attribute"));
    assert_eq!(role(&s, "K#0"), Some("definition:type"));
    assert_eq!(role(&s, "V#0"), Some("definition:type"));
    assert_eq!(role(&s, "V#1"), Some("use:type"));
    assert_eq!(role(&s, "top"), Some("definition:method"));
    assert_eq!(role(&s, "m#0"), Some("definition:parameter"));
    assert_eq!(cat(&s, "null"), Category::Literal);
}

#[test]
fn java_annotations() {
    let s = java(&in_class(
        "@SuppressWarnings(value = \"unchecked\")\n@Override\npublic void f() {}",
    ));
    assert_eq!(cat(&s, "@#0"), Category::Operator);
    assert_eq!(role(&s, "SuppressWarnings"), Some("use:decorator"));
    assert_eq!(role(&s, "value"), Some("use:keyword_argument"));
    assert_eq!(role(&s, "Override"), Some("use:decorator"));
    assert_eq!(cat(&s, "public"), Category::Keyword);
    assert_eq!(cat(&s, "void"), Category::Keyword);
    assert_eq!(kind(&s, "void"), "void_type");
    assert!(s.graphs.dfg_refined.is_empty());
    let at = java("@interface Ann { String value() default \"a\"; }");
    assert_eq!(cat(&at, "@interface"), Category::Keyword);
}

#[test]
fn java_lambdas() {
    let s = java(&in_class(
        "int step = 2;\nvoid f() {\n  Function<Integer, Integer> inc = x -> x + step;\n  BiFunction<A, B, C> g = (a, b) -> { return a; };\n}",
    ));
    assert_eq!(cat(&s, "->#0"), Category::Operator);
    assert_eq!(role(&s, "x#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "a#0"), Some("definition:parameter"));
    assert!(has_dfg(&s, "x#1", "x#0", CF));
    assert!(has_dfg(&s, "step#1", "step#0", CF)); // bare field name -> field declaration
    assert!(has_dfg(&s, "inc", "x#1", CF)); // declarator: comesFrom (DFG.py)
    assert!(has_dfg(&s, "inc", "step#1", CF));
    assert!(has_dfg(&s, "a#1", "a#0", CF));
}

#[test]
fn java_method_references() {
    let s = java(&in_class(
        "void f(List<String> names) {\n  names.forEach(System.out::println);\n  Supplier<List<String>> s = ArrayList::new;\n}",
    ));
    assert_eq!(cat(&s, "::#0"), Category::Operator);
    assert_eq!(role(&s, "println"), Some("use:method"));
    assert_eq!(role(&s, "forEach"), Some("use:method"));
    assert_eq!(role(&s, "out"), Some("use:attribute"));
    assert_eq!(cat(&s, "new"), Category::Keyword);
    assert!(has_dfg(&s, "names#1", "names#0", CF));
    let println = t(&s, "println");
    assert!(s
        .graphs
        .dfg_refined
        .iter()
        .all(|e| e.0 != println && e.1 != println));
}

#[test]
fn java_labelled_loops() {
    let s = java(&in_class(
        "int f(int[][] m) {\n  int n = 0;\n  outer:\n  for (int[] row : m) {\n    for (int v : row) {\n      if (v < 0) break outer;\n      if (v == 0) continue outer;\n      n += v;\n    }\n  }\n  return n;\n}",
    ));
    assert_eq!(role(&s, "outer#0"), Some("definition:label"));
    assert_eq!(role(&s, "outer#1"), Some("use:label"));
    assert_eq!(role(&s, "outer#2"), Some("use:label"));
    assert_eq!(cat(&s, ":#0"), Category::Delimiter);
    assert!(has_dfg(&s, "row#0", "m#1", CP));
    assert!(has_dfg(&s, "v#0", "row#1", CP));
    assert!(has_dfg(&s, "n#1", "n#0", CF));
    assert!(has_dfg(&s, "n#1", "v#3", CP));
    assert!(has_dfg(&s, "n#2", "n#1", CF));
    assert!(has_dfg(&s, "n#2", "n#0", CF));
    let outer = t(&s, "outer#0");
    assert!(s
        .graphs
        .dfg_refined
        .iter()
        .all(|e| e.0 != outer && e.1 != outer));
}

#[test]
fn java_text_blocks_and_chars() {
    let src = in_class(
        "String s = \"\"\"\n    hi \"there\"\n    \"\"\";\nchar c = '\\n';\nvar v = \"a\\tb\";",
    );
    let s = java(&src);
    let tb = t(&s, "\"\"\"\n    hi \"there\"\n    \"\"\"");
    assert_eq!(s.tokens[tb].kind, "string");
    assert_eq!(s.tokens[tb].category, Category::Literal);
    assert_eq!(kind(&s, "'\\n'"), "string");
    assert_eq!(kind(&s, "\"a\\tb\""), "string");
    assert_eq!(cat(&s, "var"), Category::Keyword);
    assert_eq!(s.tokens[t(&s, "var")].role, None);
    assert_eq!(cat(&s, "char"), Category::Keyword);
}

#[test]
fn java_records() {
    let s = java("record Point(int x, int y) {\n  Point {\n    if (x < 0) throw new IllegalArgumentException();\n  }\n  double norm() { return Math.sqrt(x * x + y * y); }\n}\n");
    assert_eq!(cat(&s, "record"), Category::Keyword);
    assert_eq!(role(&s, "Point#0"), Some("definition:class"));
    assert_eq!(role(&s, "Point#1"), Some("definition:method"));
    assert_eq!(role(&s, "x#0"), Some("definition:parameter"));
    assert!(has_dfg(&s, "x#1", "x#0", CF)); // compact constructor reads the component
    assert!(has_dfg(&s, "x#2", "x#0", CF)); // accessor body reads the field
    assert!(has_dfg(&s, "y#1", "y#0", CF));
    assert_eq!(role(&s, "sqrt"), Some("use:method"));
}

#[test]
fn java_switch_expressions() {
    let s = java(&in_class(
        "int f(Day d) {\n  int n = switch (d) {\n    case MON, TUE -> 1;\n    default -> { int k = 2; yield k; }\n  };\n  return n;\n}",
    ));
    assert_eq!(cat(&s, "switch"), Category::Keyword);
    assert_eq!(cat(&s, "yield"), Category::Keyword);
    assert_eq!(cat(&s, "default"), Category::Keyword);
    assert_eq!(cat(&s, "->#0"), Category::Operator);
    assert!(has_dfg(&s, "d#1", "d#0", CF));
    assert!(has_dfg(&s, "n#0", "d#1", CF));
    assert!(has_dfg(&s, "k#1", "k#0", CF));
    assert!(has_dfg(&s, "n#1", "n#0", CF));
}

#[test]
fn java_switch_patterns() {
    let s = java(&in_class(
        "double area(Shape sh) {\n  return switch (sh) {\n    case Circle c when c.r > 0 -> c.r;\n    case Rect(double w, double h) -> w * h;\n    default -> 0;\n  };\n}",
    ));
    assert_eq!(role(&s, "c#0"), Some("definition:variable"));
    assert_eq!(role(&s, "Rect"), Some("use:type"));
    assert_eq!(role(&s, "w#0"), Some("definition:variable"));
    assert_eq!(cat(&s, "when"), Category::Keyword);
    assert!(has_dfg(&s, "c#0", "sh#1", CP));
    assert!(has_dfg(&s, "c#1", "c#0", CF));
    assert!(has_dfg(&s, "w#0", "sh#1", CP));
    assert!(has_dfg(&s, "w#1", "w#0", CF));
}

#[test]
fn java_varargs() {
    let s = java(&in_class(
        "static int sum(int... vals) {\n  int total = 0;\n  for (int v : vals) total += v;\n  return total;\n}",
    ));
    assert_eq!(cat(&s, "..."), Category::Operator);
    assert_eq!(role(&s, "vals#0"), Some("definition:parameter"));
    assert!(has_dfg(&s, "vals#1", "vals#0", CF));
    assert!(has_dfg(&s, "v#0", "vals#1", CP));
    assert!(has_dfg(&s, "total#1", "v#1", CP));
    assert!(has_dfg(&s, "total#1", "total#0", CF));
    assert!(has_dfg(&s, "total#2", "total#1", CF));
    assert!(has_dfg(&s, "total#2", "total#0", CF));
}

#[test]
fn java_fields_through_this_and_bare_names() {
    let s = java(
        "class Counter {\n  private int count = 0;\n  void inc() {\n    count++;\n    this.count += 2;\n  }\n  int get() { return count; }\n}\n",
    );
    assert_eq!(role(&s, "count#0"), Some("definition:attribute"));
    assert_eq!(role(&s, "count#1"), Some("definition:variable"));
    assert_eq!(role(&s, "count#2"), Some("definition:attribute"));
    assert_eq!(cat(&s, "this"), Category::Keyword);
    assert!(has_dfg(&s, "count#1", "count#0", CF)); // count++ reads the field
    assert!(has_dfg(&s, "count#2", "count#1", CF)); // this.count += reads count++'s value
    assert!(has_dfg(&s, "count#3", "count#2", CF)); // a later method sees the last write
    assert_eq!(cat(&s, "++"), Category::Operator);
}

#[test]
fn java_if_else_merge() {
    let s = java(&in_class(
        "int f(boolean c) {\n  int x = 1;\n  if (c) { x = 2; } else if (!c) { x = 3; }\n  return x;\n}",
    ));
    let mut from: Vec<usize> = dfg_from(&s, "x#3").into_iter().map(|e| e.0).collect();
    from.sort();
    assert_eq!(from, [t(&s, "x#0"), t(&s, "x#1"), t(&s, "x#2")]);
    assert_eq!(cat(&s, "!"), Category::Operator);
}

#[test]
fn java_instanceof_pattern() {
    let s = java(&in_class(
        "boolean f(Object o) { return o instanceof String str && str.isEmpty(); }",
    ));
    assert_eq!(cat(&s, "instanceof"), Category::Keyword);
    assert_eq!(role(&s, "str#0"), Some("definition:variable"));
    assert!(has_dfg(&s, "str#0", "o#1", CP));
    assert!(has_dfg(&s, "str#1", "str#0", CF));
    assert_eq!(cat(&s, "&&"), Category::Operator);
}

#[test]
fn java_try_catch_resources() {
    let s = java(&in_class(
        "String f(Path p) {\n  String r = null;\n  try (var in = open(p)) {\n    r = in.read();\n  } catch (IOException | RuntimeException e) {\n    r = e.getMessage();\n  } finally {\n    log(r);\n  }\n  return r;\n}",
    ));
    assert_eq!(role(&s, "in#0"), Some("definition:variable"));
    assert_eq!(role(&s, "e#0"), Some("definition:variable"));
    assert_eq!(cat(&s, "|"), Category::Operator);
    assert!(has_dfg(&s, "in#0", "p#1", CF));
    assert!(has_dfg(&s, "r#1", "in#1", CP));
    assert!(has_dfg(&s, "r#2", "e#1", CP));
    // finally sees the end of the try body and of the handler (r#0 is overwritten on
    // both paths)
    assert!(has_dfg(&s, "r#3", "r#1", CF));
    assert!(has_dfg(&s, "r#3", "r#2", CF));
    assert!(!has_dfg(&s, "r#3", "r#0", CF));
}

#[test]
fn java_package_and_imports() {
    let s = java("package com.acme;\nimport java.util.List;\nimport static java.lang.Math.max;\nimport java.io.*;\nclass A {}\n");
    assert_eq!(role(&s, "com"), Some("use:module"));
    assert_eq!(role(&s, "acme"), Some("use:module"));
    assert_eq!(role(&s, "util"), Some("use:module"));
    assert_eq!(role(&s, "List"), Some("definition:import"));
    assert_eq!(role(&s, "max"), Some("definition:import"));
    assert_eq!(role(&s, "io"), Some("use:module"));
    assert_eq!(cat(&s, "*"), Category::Operator);
    assert!(!s.wrapped);
}

#[test]
fn java_ternary_and_array_targets() {
    let s = java(&in_class(
        "void f(int[] arr, int i, boolean c) {\n  arr[i] = c ? i : -i;\n  g(arr);\n}",
    ));
    assert_eq!(cat(&s, "?"), Category::Operator);
    assert_eq!(cat(&s, ":"), Category::Delimiter);
    assert!(has_dfg(&s, "arr#1", "arr#0", CF));
    assert!(has_dfg(&s, "arr#1", "i#3", CP));
    assert!(has_dfg(&s, "arr#2", "arr#1", CF));
    assert!(has_dfg(&s, "i#1", "i#0", CF));
}

#[test]
fn java_anonymous_class_and_enum() {
    let s = java(
        "enum Color { RED, GREEN; Color next() { return RED; } }\nclass U { Runnable r = new Runnable() { int q = 1; public void run() { q++; } }; }\n",
    );
    assert_eq!(role(&s, "RED#0"), Some("definition:attribute"));
    assert!(has_dfg(&s, "RED#1", "RED#0", CF));
    assert!(has_dfg(&s, "q#1", "q#0", CF));
    assert_eq!(role(&s, "Runnable#1"), Some("use:type"));
}

#[test]
fn java_loops_are_walked_twice() {
    let s = java(&in_class(
        "int f(int n) {\n  int a = 0, b = 1;\n  for (int i = 0; i < n; i++) { int t = a + b; a = b; b = t; }\n  do { n--; } while (n > 0);\n  return a;\n}",
    ));
    // b read in the body sees the initial b and the loop-carried b = t
    assert!(has_dfg(&s, "b#1", "b#0", CF));
    assert!(has_dfg(&s, "b#1", "b#3", CF));
    assert!(has_dfg(&s, "i#1", "i#2", CF)); // condition sees i++
    assert!(has_dfg(&s, "n#1", "n#0", CF)); // `i < n`
    assert!(has_dfg(&s, "n#2", "n#0", CF)); // `n--` in the do body (always entered once)
    assert!(has_dfg(&s, "n#3", "n#2", CF)); // `n > 0`
    assert!(has_dfg(&s, "a#3", "a#0", CF)); // loop never entered
    assert!(has_dfg(&s, "a#3", "a#2", CF));
}

// ---------------------------------------------------------------------------------------
// Wrapping bare Java
// ---------------------------------------------------------------------------------------

#[test]
fn java_bare_method_is_wrapped_in_a_class() {
    let src = "  public int add(int a, int b) {\n    int s = a + b; // sum\n    return s;\n  }\n";
    let s = java(src);
    assert!(s.wrapped);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(
        texts(&s),
        [
            "public", "int", "add", "(", "int", "a", ",", "int", "b", ")", "{", "int", "s", "=",
            "a", "+", "b", ";", "return", "s", ";", "}"
        ]
    );
    assert_eq!(s.tokens[0].start, 2);
    assert!(texts(&s).iter().all(|x| !x.contains("__")));
    assert_eq!(s.comments, vec![(52, 58)]);
    // method_declaration is at depth 1 under the (virtual) class body root
    assert_eq!(s.tokens[t(&s, "add")].depth, 2);
    assert_eq!(role(&s, "add"), Some("definition:method"));
    assert!(has_dfg(&s, "s#1", "s#0", CF));
    assert!(has_dfg(&s, "s#0", "a#1", CF));
    assert!(has_dfg(&s, "a#1", "a#0", CF));
    // tree distance across the method: add (2) and s in return (4); LCA method (1)
    assert_eq!(s.tree_distance(t(&s, "add"), t(&s, "s#1")), 4);
}

#[test]
fn java_constructor_needs_the_class_wrapper() {
    let s = java("Foo(int x) { this.x = x; }");
    assert!(s.wrapped);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(role(&s, "Foo"), Some("definition:method"));
    assert_eq!(role(&s, "x#1"), Some("definition:attribute"));
    assert!(has_dfg(&s, "x#1", "x#2", CP));
    assert!(has_dfg(&s, "x#2", "x#0", CF));
}

#[test]
fn java_statement_list_is_wrapped_in_a_method() {
    let src = "int x = 1;\nx++;\nSystem.out.println(x);\n";
    let s = java(src);
    assert!(s.wrapped);
    assert!(s.errors.is_empty());
    assert_eq!(texts(&s)[0], "int");
    assert_eq!(s.tokens[0].depth, 3); // block(0) > declaration(1) > integral_type(2) > int(3)
    assert!(has_dfg(&s, "x#1", "x#0", CF));
    assert!(has_dfg(&s, "x#2", "x#1", CF));
    assert_eq!(texts(&s).len(), 17);
}

#[test]
fn java_fields_and_methods_without_class() {
    let s = java("private int n = 3;\nint twice() { return n * 2; }\n");
    assert!(s.wrapped);
    assert!(s.errors.is_empty());
    assert_eq!(role(&s, "n#0"), Some("definition:attribute"));
    assert!(has_dfg(&s, "n#1", "n#0", CF));
}

#[test]
fn java_full_file_is_not_wrapped() {
    let s = java("class A { void f() {} }");
    assert!(!s.wrapped);
    assert_eq!(s.tokens[0].depth, 2); // program > class_declaration > class
}

#[test]
fn java_broken_code_keeps_going() {
    let src = "class A {\n  void f( {\n    int x = ;\n    return x\n  }\n}\n";
    let s = java(src);
    assert!(!s.errors.is_empty());
    assert!(texts(&s).contains(&"return"));
    assert!(s
        .errors
        .iter()
        .any(|e| e.message.starts_with("missing") || e.message.starts_with("syntax error")));
    let bare = java("int f( { return 1;");
    assert!(!bare.errors.is_empty());
    assert!(texts(&bare).contains(&"return"));
    for e in &bare.errors {
        assert!(e.end <= bare.source.len());
    }
}

#[test]
fn py_pasted_methods_get_their_class_back() {
    let src = "    def __init__(self, n):\n        self.n = n\n\n    @property\n    def get(self):\n        return self.n\n";
    let s = py(src);
    assert!(s.wrapped);
    assert!(s.errors.is_empty());
    assert_eq!(s.tokens[0].text, "def");
    assert_eq!(s.tokens[0].start, 4);
    assert_eq!(s.tokens[0].depth, 2); // as for a def at the top of a file
    assert_eq!(role(&s, "__init__"), Some("definition:method"));
    assert_eq!(role(&s, "get"), Some("definition:method"));
    assert!(texts(&s).iter().all(|x| !x.contains("__W")));
    assert!(has_dfg(&s, "n#1", "n#2", CP)); // self.n = n
    assert!(has_dfg(&s, "n#3", "n#1", CF)); // return self.n, in another method
                                            // the same text without `self` stays unwrapped: plain functions
    let f = py("def f(a):\n    return a\n");
    assert!(!f.wrapped);
    // statements are never wrapped
    let st = py("    x = 1\n    y = x\n");
    assert!(!st.wrapped);
    assert!(has_dfg(&st, "y", "x#1", CP));
    // a def line copied without its indentation, body still indented
    let d = py("def m(self):\n        return self.v\n    def k(self):\n        self.v = 1\n");
    assert!(d.wrapped, "{:?}", d.errors);
    assert_eq!(role(&d, "k"), Some("definition:method"));
    // a method dedented as a whole (corpus extraction) parses as it is: not wrapped, and
    // its body's data flow reaches the parameters
    let m = py("def get(self, key):\n    return self.data[key]\n");
    assert!(!m.wrapped);
    assert!(has_dfg(&m, "self#1", "self", CF));
    assert!(has_dfg(&m, "key#1", "key", CF));
}

// ---------------------------------------------------------------------------------------
// The study's data-flow graph: cases checked against its code (study_graphs.py --raw)
// ---------------------------------------------------------------------------------------

#[test]
fn study_dfg_hand_checked_cases() {
    let s = py("def f(o, n):\n    y = o.attr\n    g(key=n)\n    while n:\n        n = n - 1\n    r = [v for v in o]\n    return v\n");
    #[rustfmt::skip]
    let expected = vec![
        (8, 10, CP), (8, 12, CP),   // y <- o, attr (attribute names are values)
        (10, 3, CF), (17, 5, CF),
        (20, 5, CF), (20, 22, CF),  // `while n` sees the loop's own `n = ...` (second walk)
        (22, 24, CP), (22, 26, CP), // n <- n, 1 (literal source)
        (24, 5, CF), (24, 22, CF),
        (27, 30, CP), (27, 32, CP), (27, 34, CP),
        (30, 32, CF), (32, 34, CP), (34, 3, CF),
        (37, 32, CF),               // the comprehension variable after the comprehension
    ];
    assert_eq!(s.graphs.dfg, expected);
    // A use in a loop body walked twice comes from itself.
    let s = py("while c:\n    print(x)\n");
    assert_eq!(s.graphs.dfg, vec![(1, 1, CF), (3, 3, CF), (5, 5, CF)]);
    assert!(s.graphs.dfg_refined.iter().all(|&(i, j, _)| i != j));
    // The study slices a token out of its line with byte columns as character indices:
    // after a non-ASCII character on the line the "text" shifts (`+` reads as `a`), and
    // its graph follows; so does this one.
    let s = py("def f(a):\n    s = \"\u{e9}\u{e9}\" + a\n    t = s\n    u = \"\u{e9}\" if a else b\n    return u + t\n");
    #[rustfmt::skip]
    let expected = vec![
        (6, 8, CP), (6, 9, CP), (6, 10, CP), (9, 3, CF), (11, 13, CP), (13, 6, CF),
        (14, 16, CP), (14, 17, CP), (14, 18, CP), (14, 19, CP), (14, 20, CP), (20, 10, CF),
        (22, 14, CF), (24, 11, CF),
    ];
    assert_eq!(s.graphs.dfg, expected);
}

#[test]
fn dedented_method_with_a_multi_line_signature_keeps_its_body() {
    // Issue #12, defect 1: the continuation line was taken as the body's indentation, the
    // first line re-indented, and the body fell outside an empty def.
    let s = py("def m(self, a,\n        b):\n    return a + b\n");
    assert!(!s.wrapped);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.tokens[0].depth, 2); // module > function_definition > def
    assert_eq!(s.tokens[t(&s, "return")].depth, 4); // ... > block > return_statement
    assert_eq!(role(&s, "a#0"), Some("definition:parameter"));
    assert_eq!(role(&s, "b#1"), Some("use:variable"));
    assert!(has_dfg(&s, "a#1", "a#0", CF));
    assert!(has_dfg(&s, "b#1", "b#0", CF));
    assert!(s.graphs.dfg.contains(&(t(&s, "a#1"), t(&s, "a#0"), CF)));
    // The same with the method still indented is wrapped in its class and agrees.
    let w = py("    def m(self, a,\n            b):\n        return a + b\n");
    assert!(w.wrapped && w.errors.is_empty());
    assert_eq!(w.graphs.dfg_refined, s.graphs.dfg_refined);
    assert_eq!(w.graphs.dfg, s.graphs.dfg);
}

#[test]
fn self_fields_flow_in_a_bare_method() {
    // Issue #12, defect 2: with no enclosing class (a corpus snippet), `self.x` flows
    // vanished.
    let s = py("def m(self, a):\n    self.x = a\n    return self.x\n");
    assert!(!s.wrapped);
    assert!(has_dfg(&s, "x#0", "a#1", CP)); // self.x = a
    assert!(has_dfg(&s, "x#1", "x#0", CF)); // return self.x
                                            // Across the methods of one snippet, as in a class.
    let s = py("def __init__(self, n):\n    self.n = n\n\ndef get(self):\n    return self.n\n");
    assert!(has_dfg(&s, "n#3", "n#1", CF));
    // A plain function's first parameter is no receiver.
    let f = py("def f(obj, a):\n    obj.x = a\n    return obj.x\n");
    assert!(!has_dfg(&f, "x#1", "x#0", CF));
    // A static method has no receiver either.
    let st = py("@staticmethod\ndef m(self, a):\n    self.x = a\n    return self.x\n");
    assert!(!has_dfg(&st, "x#1", "x#0", CF));
}

#[test]
fn empty_and_whitespace_sources() {
    for lang in Language::ALL {
        for src in ["", "   \n\n", "# c\n", "// c\n"] {
            let s = parse(src, lang).unwrap();
            check_invariants(&s);
            let foreign_comment = (lang == Language::Python && src.starts_with("//"))
                || (lang == Language::Java && src.starts_with('#'));
            if !foreign_comment {
                assert!(s.tokens.is_empty(), "{lang} {src:?}");
                assert!(s.graphs.ast_motif().is_empty());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Bundled samples and rendering
// ---------------------------------------------------------------------------------------

const PY_SAMPLES: [(&str, &str); 3] = [
    (
        "binary_search.py",
        include_str!("../../assets/samples/python/binary_search.py"),
    ),
    (
        "inventory.py",
        include_str!("../../assets/samples/python/inventory.py"),
    ),
    (
        "async_fetch.py",
        include_str!("../../assets/samples/python/async_fetch.py"),
    ),
];
const JAVA_SAMPLES: [(&str, &str); 3] = [
    (
        "BinarySearch.java",
        include_str!("../../assets/samples/java/BinarySearch.java"),
    ),
    (
        "Inventory.java",
        include_str!("../../assets/samples/java/Inventory.java"),
    ),
    (
        "Shapes.java",
        include_str!("../../assets/samples/java/Shapes.java"),
    ),
];

#[test]
fn samples_parse_cleanly() {
    for (name, src) in PY_SAMPLES {
        let s = py(src);
        assert!(s.errors.is_empty(), "{name}: {:?}", s.errors);
        assert!(s.tokens.len() > 100, "{name}");
        assert!(!s.graphs.dfg_refined.is_empty(), "{name}");
    }
    for (name, src) in JAVA_SAMPLES {
        let s = java(src);
        assert!(s.errors.is_empty(), "{name}: {:?}", s.errors);
        assert!(!s.wrapped, "{name}");
        assert!(!s.graphs.dfg_refined.is_empty(), "{name}");
    }
}

#[test]
fn sample_spot_checks() {
    let s = py(PY_SAMPLES[0].1);
    // `lo, hi = 0, len(items) - 1` then the while condition reads both
    assert!(has_dfg(&s, "lo#1", "lo#0", CF));
    assert!(has_dfg(&s, "hi#0", "items#1", CP));
    assert!(!has_dfg(&s, "lo#0", "items#1", CP)); // element-wise: lo from 0 only
    assert!(has_dfg(&s, "probe#0", "key#1", CP));
    let s = py(PY_SAMPLES[1].1);
    assert!(has_dfg(&s, "owner#1", "owner#2", CP)); // self.owner = owner
    assert!(has_dfg(&s, "owner#2", "owner#0", CF));
    assert_eq!(role(&s, "dataclass#1"), Some("use:decorator"));
    let s = java(JAVA_SAMPLES[1].1);
    // `this.owner = owner;` then `owner` in toString resolves to the field
    let last_owner = s.tokens.iter().filter(|t| t.text == "owner").count() - 1;
    assert!(has_dfg(&s, &format!("owner#{last_owner}"), "owner#2", CF));
    let s = java(JAVA_SAMPLES[2].1);
    assert_eq!(role(&s, "outer#0"), Some("definition:label"));
    assert!(s
        .tokens
        .iter()
        .any(|t| t.kind == "string" && t.text.starts_with("\"\"\"")));
}

#[test]
fn render_table_shows_every_token() {
    let s = py(WORKED);
    let plain = s.render_table(false);
    assert_eq!(plain.lines().count(), s.tokens.len() + 1);
    assert!(plain.contains("definition:function"));
    assert!(!plain.contains('\x1b'));
    let colored = s.render_table(true);
    assert!(colored.contains("\x1b[38;5;204m")); // keyword colour
    let doc = py("x = \"\"\"a\nb\"\"\"\n").render_table(false);
    assert_eq!(doc.lines().count(), 4); // newline inside the token is escaped
}

#[test]
fn token_at_finds_spans() {
    let s = py(WORKED);
    assert_eq!(s.token_at(4), Some(1));
    assert_eq!(s.token_at(6), Some(1));
    assert_eq!(s.token_at(7), Some(2));
    assert_eq!(s.token_at(3), None); // the space
    assert_eq!(s.token_at(10_000), None);
    assert_eq!(s.identifier_indices(), [1, 3, 5, 10, 12, 14, 16]);
}

// ---------------------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------------------

fn code_like() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("def ".to_string()),
        Just("class ".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(":\n    ".to_string()),
        Just(" = ".to_string()),
        Just(";\n".to_string()),
        Just("\"s\"".to_string()),
        Just("f'{x}'".to_string()),
        Just("\"\"\"".to_string()),
        Just("# c\n".to_string()),
        Just("// c\n".to_string()),
        Just("if ".to_string()),
        Just("for x in ".to_string()),
        Just("int ".to_string()),
        Just("é".to_string()),
        Just("λx".to_string()),
        Just("😀".to_string()),
        "[a-z]{1,4}",
        "[0-9]{1,3}",
        "[ \t\n]{1,3}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let src = String::from_utf8_lossy(&bytes).into_owned();
        for lang in Language::ALL {
            let s = parse(&src, lang).unwrap();
            check_invariants(&s);
            let _ = s.to_json().unwrap();
        }
    }

    #[test]
    fn code_like_input_keeps_invariants(src in code_like()) {
        for lang in Language::ALL {
            let s = parse(&src, lang).unwrap();
            check_invariants(&s);
            for i in 0..s.tokens.len().min(8) {
                for j in 0..s.tokens.len().min(8) {
                    prop_assert_eq!(s.tree_distance(i, j), s.tree_distance(j, i));
                }
            }
        }
    }

    #[test]
    fn random_subword_splits_align(
        src in code_like(),
        cuts in prop::collection::vec(0usize..400, 0..60),
        specials in prop::collection::vec(any::<bool>(), 60),
    ) {
        let s = parse(&src, Language::Python).unwrap();
        // Cut the byte range anywhere (even inside a UTF-8 character: byte fallback).
        let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (src.len() + 1)).collect();
        points.push(0);
        points.push(src.len());
        points.sort_unstable();
        points.dedup();
        let mut subwords = vec![SubwordSpan::special()];
        for (k, w) in points.windows(2).enumerate() {
            let mut sw = SubwordSpan::new(w[0], w[1]);
            sw.special = specials[k % specials.len()] && k % 7 == 3;
            subwords.push(sw);
        }
        subwords.push(SubwordSpan::special());
        let al = align(&subwords, &s.tokens);
        prop_assert_eq!(al.subword_to_tokens.len(), subwords.len());
        prop_assert_eq!(al.token_to_subwords.len(), s.tokens.len());
        for (k, sw) in subwords.iter().enumerate() {
            for (i, tok) in s.tokens.iter().enumerate() {
                let overlaps = sw.start < tok.end && tok.start < sw.end;
                let expected = overlaps && !sw.special;
                prop_assert_eq!(al.subword_to_tokens[k].contains(&i), expected);
                prop_assert_eq!(al.token_to_subwords[i].contains(&k), expected);
            }
        }
        // A partition of the text covers every token.
        if subwords.iter().all(|w| !w.special || w.start == w.end) {
            prop_assert!(al.uncovered_tokens().is_empty());
        }
    }

    #[test]
    fn paper_spans_round_trip(src in code_like()) {
        for lang in Language::ALL {
            let s = parse(&src, lang).unwrap();
            let p = paper_text(&s);
            prop_assert_eq!(p.spans.len(), s.tokens.len());
            for (i, &(a, b)) in p.spans.iter().enumerate() {
                prop_assert_eq!(&p.text[a..b], s.tokens[i].text.as_str());
                if i > 0 {
                    prop_assert_eq!(a, p.spans[i - 1].1 + 1);
                    prop_assert_eq!(&p.text[a - 1..a], " ");
                }
            }
            let retargeted = p.retarget(&s.tokens);
            for (i, tok) in retargeted.iter().enumerate() {
                prop_assert_eq!(&p.text[tok.start..tok.end], s.tokens[i].text.as_str());
            }
        }
    }
}
