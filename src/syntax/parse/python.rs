//! Python's wrapper: methods pasted out of a class get their class back.

/// The wrappers a Python snippet may be parsed in: a class around methods, and the same
/// with the first line re-indented.
pub(crate) const WRAPPERS: [(&str, &str); 2] = [("class __W:\n", "\n"), ("class __W:\n    ", "\n")];

/// The wrappers worth trying for `source`, whose own parse is `original`.
pub(crate) fn wrappers_for(
    original: &tree_sitter::Tree,
    source: &str,
) -> Vec<(&'static str, &'static str)> {
    if !looks_like_methods(original, source) {
        return Vec::new();
    }
    // Methods pasted out of a class: give them their class back, so `self` is a
    // receiver. The first line's indentation decides the wrapper's. A first line
    // at column 0 is re-indented (by 4, the first line only) just when the source
    // does not parse as it is and the other lines are indented deeper than that
    // (a def copied without its indentation, body still indented): for a method
    // dedented as a whole, as corpus extraction gives it, the one-line indent
    // would leave the body outside the def and break its data flow.
    let indent = |l: &str| {
        l.chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .map(|c| if c == '\t' { 8 } else { 1 })
            .sum::<usize>()
    };
    let first = source.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    // The indentation of every statement after the first line (not of every line:
    // a dedented method whose signature spans lines has a continuation line
    // indented deeper than its body).
    let lines: Vec<&str> = source.split('\n').collect();
    let body: Vec<usize> = statement_rows(original)
        .into_iter()
        .skip(1)
        .filter_map(|r| lines.get(r).map(|l| indent(l)))
        .collect();
    if indent(first) > 0 {
        vec![WRAPPERS[0]]
    } else if body.first().is_some_and(|&b| b > 4) && body.iter().all(|&b| b >= 4) {
        vec![WRAPPERS[1]]
    } else {
        Vec::new()
    }
}

/// Python source made only of function definitions, at least one of which takes
/// `self` or `cls` first: methods copied out of a class.
fn looks_like_methods(tree: &tree_sitter::Tree, source: &str) -> bool {
    let root = tree.root_node();
    let mut c = root.walk();
    let mut any_method = false;
    for n in root.named_children(&mut c) {
        let func = match n.kind() {
            "comment" => continue,
            "function_definition" => n,
            "decorated_definition" => match n.child_by_field_name("definition") {
                Some(d) => d,
                None => return false,
            },
            _ => return false,
        };
        let first = func
            .child_by_field_name("parameters")
            .and_then(|p| p.named_child(0))
            .map(|p| match p.kind() {
                "typed_parameter" => p.named_child(0).unwrap_or(p),
                _ => p,
            });
        if let Some(p) = first {
            let name = source.get(p.start_byte()..p.end_byte()).unwrap_or("");
            any_method |= matches!(name, "self" | "cls");
        }
    }
    any_method
}

/// Rows where a Python statement starts (a named child of the module or of a block,
/// comments excluded), in source order; one row once.
fn statement_rows(tree: &tree_sitter::Tree) -> Vec<usize> {
    let mut rows = Vec::new();
    let mut cursor = tree.walk();
    // Kinds of the current node's ancestors (tree-sitter's `parent()` costs the depth).
    let mut stack: Vec<&str> = Vec::new();
    loop {
        let node = cursor.node();
        if node.is_named()
            && node.kind() != "comment"
            && matches!(stack.last(), Some(&("module" | "block")))
            && rows.last() != Some(&node.start_position().row)
        {
            rows.push(node.start_position().row);
        }
        if cursor.goto_first_child() {
            stack.push(node.kind());
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return rows;
            }
            stack.pop();
        }
    }
}
