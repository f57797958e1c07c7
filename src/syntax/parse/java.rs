//! Java's wrappers: bare members and statements get a class (and a method) around them.

/// The wrappers a Java snippet may be parsed in: a class, then a class and a method.
pub(crate) const WRAPPERS: [(&str, &str); 2] = [
    ("class __W {\n", "\n}\n"),
    ("class __W { void __m() {\n", "\n}}\n"),
];

/// The wrappers worth trying for a snippet whose own parse is `original`: both, unless it
/// is a file (a type, package or imports at top level).
pub(crate) fn wrappers_for(
    original: &tree_sitter::Tree,
    _source: &str,
) -> Vec<(&'static str, &'static str)> {
    if has_top_level_decl(original) {
        Vec::new()
    } else {
        WRAPPERS.to_vec()
    }
}

/// Does a Java tree declare a type (or package/imports) at top level? Then it is a file.
fn has_top_level_decl(tree: &tree_sitter::Tree) -> bool {
    let root = tree.root_node();
    let mut c = root.walk();
    let found = root.children(&mut c).any(|n| {
        matches!(
            n.kind(),
            "class_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "record_declaration"
                | "annotation_type_declaration"
                | "package_declaration"
                | "import_declaration"
                | "module_declaration"
        )
    });
    found
}
