//! The flattened syntax tree: tree-sitter's tree copied once into an [`Arena`] (preorder,
//! children contiguous), with the raw code tokens found on the way, and [`TreeInfo`] for
//! LCA / tree-distance queries (docs/METHODS.md 4).
//!
//! Role: tree-sitter nodes are cursors into the tree with no O(1) parent or child access;
//! every later pass (roles, graphs) walks the arena instead. Collapsed strings and
//! comments are arena leaves (their insides are not represented).
//!
//! Invariants: node 0 is the root; a node's children are in source order; `depth` counts
//! from the real root (the caller rebases it for wrapped snippets); `token` is the index
//! into the token list or [`NONE`].

use super::lang::Language;
use super::Lca;

// ---------------------------------------------------------------------------------------
// Arena
// ---------------------------------------------------------------------------------------

/// Sentinel for "no node" / "no token".
pub(crate) const NONE: u32 = u32::MAX;

/// One tree node, flattened. Collapsed strings and comments are arena leaves (their
/// insides are not represented).
#[derive(Debug, Clone)]
pub(crate) struct ANode {
    pub kind: &'static str,
    pub field: Option<&'static str>,
    pub start: usize,
    pub end: usize,
    pub parent: u32,
    pub depth: u32,
    first: u32,
    len: u32,
    /// Index into the token list, or [`NONE`].
    pub token: u32,
    /// A node of today's grammar that the study's grammar did not have (its children
    /// belonged to the parent then): skipped by the study view ([`Arena::view_parent`],
    /// [`Arena::view_children`]). See [`Language::study_transparent`].
    pub transparent: bool,
}

/// The syntax tree in preorder, with children stored contiguously.
#[derive(Debug, Default, Clone)]
pub(crate) struct Arena {
    pub nodes: Vec<ANode>,
    kids: Vec<u32>,
}

impl Arena {
    pub fn children(&self, n: u32) -> &[u32] {
        let a = &self.nodes[n as usize];
        &self.kids[a.first as usize..(a.first + a.len) as usize]
    }
    pub fn kind(&self, n: u32) -> &'static str {
        self.nodes[n as usize].kind
    }
    pub fn field(&self, n: u32) -> Option<&'static str> {
        self.nodes[n as usize].field
    }
    pub fn parent(&self, n: u32) -> Option<u32> {
        let p = self.nodes[n as usize].parent;
        (p != NONE).then_some(p)
    }
    pub fn parent_kind(&self, n: u32) -> &'static str {
        self.parent(n).map_or("", |p| self.kind(p))
    }
    /// The parent in the study's grammar: the nearest ancestor that is not transparent.
    /// Transparent chains are at most two nodes long, so this is O(1).
    pub fn view_parent(&self, n: u32) -> Option<u32> {
        let mut p = self.parent(n)?;
        while self.nodes[p as usize].transparent {
            p = self.parent(p)?;
        }
        Some(p)
    }
    /// Append the children of `n` in the study's grammar (transparent children replaced
    /// by their own view children) to `out`.
    pub fn view_children(&self, n: u32, out: &mut Vec<u32>) {
        for &c in self.children(n) {
            if self.nodes[c as usize].transparent {
                self.view_children(c, out);
            } else {
                out.push(c);
            }
        }
    }
    pub fn is_leaf(&self, n: u32) -> bool {
        self.nodes[n as usize].len == 0
    }
    pub fn token(&self, n: u32) -> Option<usize> {
        let t = self.nodes[n as usize].token;
        (t != NONE).then_some(t as usize)
    }
    pub fn child_by_field(&self, n: u32, field: &str) -> Option<u32> {
        self.children(n)
            .iter()
            .copied()
            .find(|&c| self.field(c) == Some(field))
    }
    pub fn children_by_field<'a>(
        &'a self,
        n: u32,
        field: &'a str,
    ) -> impl Iterator<Item = u32> + 'a {
        self.children(n)
            .iter()
            .copied()
            .filter(move |&c| self.field(c) == Some(field))
    }
    /// First child of kind `kind`.
    pub fn child_of_kind(&self, n: u32, kind: &str) -> Option<u32> {
        self.children(n)
            .iter()
            .copied()
            .find(|&c| self.kind(c) == kind)
    }
    /// The wrapper's body node for a source at `[start, end)` of the parsed text: the
    /// deepest inner node that begins inside the wrapper prefix and covers the source.
    /// For `class __W {` that is the `class_body`, for the method wrapper the `block`,
    /// for Python's `class __W:` the class's body `block`.
    pub fn container(&self, start: usize, end: usize) -> u32 {
        let mut node = 0u32;
        'down: loop {
            for &c in self.children(node) {
                let cn = &self.nodes[c as usize];
                if cn.start < start && cn.end >= end && !self.is_leaf(c) {
                    node = c;
                    continue 'down;
                }
            }
            // A Python class body (`block`) starts at its first statement, inside the
            // source: step into it explicitly.
            if self.kind(node) == "class_definition" {
                if let Some(b) = self.child_by_field(node, "body") {
                    return b;
                }
            }
            return node;
        }
    }
}

/// A code token as found in the tree, before classification.
pub(crate) struct RawToken {
    pub node: u32,
    pub start: usize,
    pub end: usize,
    pub kind: &'static str,
    pub collapsed: bool,
}

/// Builds the [`Arena`] and the raw token list of one tree.
pub(crate) struct Builder<'a> {
    lang: Language,
    text: &'a str,
    region: (usize, usize),
    arena: Arena,
    tokens: Vec<RawToken>,
    comments: Vec<(usize, usize)>,
}

impl<'a> Builder<'a> {
    /// A builder for the tree of `text`; tokens are taken only inside `region` (the
    /// caller's source within a wrapper).
    pub fn new(lang: Language, text: &'a str, region: (usize, usize)) -> Self {
        Builder {
            lang,
            text,
            region,
            arena: Arena::default(),
            tokens: Vec::new(),
            comments: Vec::new(),
        }
    }

    /// The arena, the raw tokens in source order and the comment spans (in `text`).
    pub fn build(
        mut self,
        tree: &tree_sitter::Tree,
    ) -> (Arena, Vec<RawToken>, Vec<(usize, usize)>) {
        self.walk(tree);
        (self.arena, self.tokens, self.comments)
    }

    /// One preorder walk with a cursor (no recursion: deep trees cannot overflow).
    fn walk(&mut self, tree: &tree_sitter::Tree) {
        let names = self.lang.names();
        let mut cursor = tree.walk();
        let mut stack: Vec<u32> = Vec::new();
        loop {
            let node = cursor.node();
            let id = self.arena.nodes.len() as u32;
            let kind = names.kind(node.kind_id());
            debug_assert_eq!(kind, node.kind());
            let (start, end) = (node.start_byte(), node.end_byte());
            let collapsed = self.lang.is_collapsed_string(kind);
            let comment = self.lang.is_comment(kind);
            let leaf = node.child_count() == 0 || collapsed || comment;
            let in_region = start >= self.region.0 && end <= self.region.1;
            let mut token = NONE;
            if leaf && in_region {
                if comment {
                    self.comments.push((start, end));
                } else if end > start
                    && !self.lang.is_ignored_leaf(kind)
                    && self.text.get(start..end).is_some()
                {
                    token = self.tokens.len() as u32;
                    self.tokens.push(RawToken {
                        node: id,
                        start,
                        end,
                        kind,
                        collapsed,
                    });
                }
            }
            let parent_kind = stack.last().map_or("", |&p| self.arena.kind(p));
            let grand_kind = stack
                .len()
                .checked_sub(2)
                .map_or("", |k| self.arena.kind(stack[k]));
            self.arena.nodes.push(ANode {
                transparent: self.lang.study_transparent(kind, parent_kind, grand_kind),
                kind,
                field: cursor.field_id().map(|f| names.field(f.get())),
                start,
                end,
                parent: stack.last().copied().unwrap_or(NONE),
                depth: stack.len() as u32,
                first: 0,
                len: 0,
                token,
            });
            if !leaf && cursor.goto_first_child() {
                stack.push(id);
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    self.link_children();
                    return;
                }
                stack.pop();
            }
        }
    }

    /// Fill the contiguous child lists (preorder keeps siblings in source order).
    fn link_children(&mut self) {
        let nodes = &mut self.arena.nodes;
        let n = nodes.len();
        let mut count = vec![0u32; n];
        for node in nodes.iter() {
            if node.parent != NONE {
                count[node.parent as usize] += 1;
            }
        }
        let mut next = 0u32;
        for (i, node) in nodes.iter_mut().enumerate() {
            node.first = next;
            node.len = count[i];
            next += count[i];
        }
        let mut fill: Vec<u32> = nodes.iter().map(|x| x.first).collect();
        let mut kids = vec![0u32; next as usize];
        for (i, node) in nodes.iter().enumerate() {
            if node.parent != NONE {
                let p = node.parent as usize;
                kids[fill[p] as usize] = i as u32;
                fill[p] += 1;
            }
        }
        self.arena.kids = kids;
    }
}

// ---------------------------------------------------------------------------------------
// Tree distance
// ---------------------------------------------------------------------------------------

/// Parent links and rebased depths of the tree, for LCA queries (docs/METHODS.md 4).
#[derive(Debug, Clone, Default)]
pub(crate) struct TreeInfo {
    parent: Vec<u32>,
    depth: Vec<u32>,
    kind: Vec<&'static str>,
    /// Arena node of each token (the leaf, or the collapsed string node).
    pub token_node: Vec<u32>,
}

impl TreeInfo {
    /// `root` becomes the root (its parent link is cut); depths are reduced by `base`.
    pub fn new(a: &Arena, root: u32, base: u32, token_node: Vec<u32>) -> Self {
        let mut parent: Vec<u32> = a.nodes.iter().map(|n| n.parent).collect();
        parent[root as usize] = NONE;
        TreeInfo {
            parent,
            depth: a
                .nodes
                .iter()
                .map(|n| n.depth.saturating_sub(base))
                .collect(),
            kind: a.nodes.iter().map(|n| n.kind).collect(),
            token_node,
        }
    }

    /// Ancestors of token `i` (node id, kind), its parent first, the root last.
    pub fn ancestors(&self, i: usize) -> Vec<(u32, &'static str)> {
        let mut out = Vec::new();
        let mut n = self.parent[self.token_node[i] as usize];
        while n != NONE {
            out.push((n, self.kind[n as usize]));
            n = self.parent[n as usize];
        }
        out
    }

    /// Lowest common ancestor of tokens `i` and `j`.
    pub fn lca(&self, i: usize, j: usize) -> Lca {
        let (mut x, mut y) = (self.token_node[i], self.token_node[j]);
        let d = |n: u32| self.depth[n as usize];
        while x != y {
            let (px, py) = (self.parent[x as usize], self.parent[y as usize]);
            if d(x) >= d(y) && px != NONE {
                x = px;
            } else if py != NONE {
                y = py;
            } else if px != NONE {
                x = px;
            } else {
                // Disconnected (cannot happen for tokens under the root): the root.
                return Lca { depth: 0, kind: "" };
            }
        }
        Lca {
            depth: d(x) as usize,
            kind: self.kind[x as usize],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Language};

    #[test]
    fn lca_of_same_token_is_itself() {
        let s = parse("x = a + b\n", Language::Python).unwrap();
        assert_eq!(s.tree_distance(2, 2), 0);
        assert_eq!(s.lca(2, 2).kind, "identifier");
        // a and b share binary_operator: distance 2.
        assert_eq!(s.tree_distance(2, 4), 2);
        assert_eq!(s.lca(2, 4).kind, "binary_operator");
    }
}
