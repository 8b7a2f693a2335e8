//! The layering rule, enforced: no module imports from a layer above its
//! own, the top-level modules form no cycle, and no two source files import
//! each other, directly or around a ring.
//!
//! The layers are read from the table under "## Layers" in ARCHITECTURE.md,
//! so the document and this test cannot disagree. Every `pub mod` of
//! `src/lib.rs` must appear in that table exactly once.
//!
//! Imports are found by a small std-only analysis of the source text (a
//! lexer, then a walk over the tokens that records each module's children,
//! items and `use`s), which resolves every path, as rustc would, to the file
//! that *defines* the item: a re-export leads on to where it is written, so
//! a `mod.rs` that only declares and re-exports its children is no cycle.
//!
//! File A depends on file B when a private `use` in A, or a path with `::`
//! in A's code (`crate::x::f`, `super::T`, `child::h`, `$crate::k`,
//! `alias::f` after `use super::alias;`), names an item defined in B. Not
//! dependencies: `mod x;`, re-exports (`pub use`, `pub(..) use`), a `use` of
//! a module (an alias), globs (tried when resolving, but a bare `Name` is
//! not resolved), attributes, other crates, and test code: any item, field
//! or statement under `#[cfg(test)]`, and the file of `#[cfg(test)] mod x;`.

use std::{
    cell::RefCell,
    collections::{BTreeMap, BTreeSet, HashMap, VecDeque},
    fs,
    path::Path,
};

/// Edges between files or modules, each with the place (`src/a.rs:12`) of
/// its first cause.
type Graph = BTreeMap<(String, String), String>;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Top-level module -> layer number, from ARCHITECTURE.md's table.
///
/// A row looks like `| 3 | executors | `executor` | ... |`: the first cell
/// is the layer number and every backticked word in the third cell is a
/// module of that layer.
fn layers_from(markdown: &str) -> BTreeMap<String, u32> {
    let section = markdown
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("ARCHITECTURE.md has a \"## Layers\" section");
    let mut layers = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(layer) = cells.get(1).and_then(|c| c.parse::<u32>().ok()) else {
            continue;
        };
        let modules = cells.get(3).copied().unwrap_or_default();
        for module in modules.split('`').skip(1).step_by(2) {
            let previous = layers.insert(module.to_owned(), layer);
            assert!(previous.is_none(), "{module} is listed in two layers");
        }
    }
    layers
}

/// The source without comments and with the contents of string, byte, raw
/// and char literals blanked, newlines kept: the braces left balance, a
/// `crate::` left is code, and lines keep their numbers. Lifetimes stay.
fn lex(source: &str) -> String {
    let c: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < c.len() {
        // The end of the comment or literal that starts here, if one does,
        // and for a literal the quote that stays at either end.
        let (end, quote) = if c[i..].starts_with(&['/', '/']) {
            let line_end = (i..c.len()).find(|&j| c[j] == '\n');
            (line_end.unwrap_or(c.len()), None)
        } else if c[i..].starts_with(&['/', '*']) {
            let (mut depth, mut j) = (0, i); // block comments nest
            while j < c.len() && (depth > 0 || j == i) {
                let (opens, closes) = (
                    c[j..].starts_with(&['/', '*']),
                    c[j..].starts_with(&['*', '/']),
                );
                depth += i32::from(opens) - i32::from(closes);
                j += 1 + usize::from(opens || closes);
            }
            (j, None)
        } else if let Some(end) = literal_end(&c, i) {
            (end, Some(if c[i] == '\'' { '\'' } else { '"' }))
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        for (k, &ch) in c[i..end].iter().enumerate() {
            let quote = quote.filter(|_| k == 0 || i + k + 1 == end);
            out.push(quote.unwrap_or(if ch == '\n' { '\n' } else { ' ' }));
        }
        i = end;
    }
    out
}

/// One past the end of the string or char literal that starts at `i`, if
/// one does: `"a\""`, `b"a"`, `c"a"`, `r#"a"#`, `br"a"`, `'{'`, `'\''`,
/// `'\u{7f}'`. A lifetime, `'a` or `'static`, is none.
fn literal_end(c: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    if at(i) == '\'' {
        let close = match at(i + 1) {
            '\\' => (i + 3..c.len()).find(|&j| c[j] == '\''),
            _ => (at(i + 2) == '\'').then_some(i + 2),
        };
        return close.map(|close| close + 1);
    }
    let after_word = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
    if at(i) != '"' && (after_word || !matches!(at(i), 'b' | 'c' | 'r')) {
        return None;
    }
    let mut j = i + usize::from(matches!(at(i), 'b' | 'c'));
    let raw = at(j) == 'r';
    let hashes = (j + 1..c.len()).take_while(|&k| raw && c[k] == '#').count();
    j += usize::from(raw) + hashes;
    if at(j) != '"' {
        return None;
    }
    j += 1;
    while j < c.len() {
        if c[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
            return Some(j + 1 + hashes);
        }
        j += if c[j] == '\\' && !raw { 2 } else { 1 };
    }
    Some(c.len())
}

/// A word (name, keyword, number, lifetime), `::`, or one other character
/// of lexed code, with its line.
struct Token {
    text: String,
    line: usize,
}

fn tokenize(code: &str) -> Vec<Token> {
    let c: Vec<char> = code.chars().collect();
    let word = |i: usize| c.get(i).is_some_and(|c| c.is_alphanumeric() || *c == '_');
    let (mut tokens, mut line, mut i) = (Vec::new(), 1, 0);
    while i < c.len() {
        let mut start = i;
        i += 1;
        if c[start].is_whitespace() {
            line += usize::from(c[start] == '\n');
            continue;
        } else if word(start) || matches!(c[start], '$' | '\'') && word(i) {
            if c[start] == 'r' && !word(i) && c.get(i) == Some(&'#') && word(i + 1) {
                (start, i) = (i + 1, i + 1); // the raw name `r#type` is `type`
            }
            while word(i) {
                i += 1;
            }
        } else if c[start] == ':' && c.get(i) == Some(&':') {
            i += 1;
        }
        let text = c[start..i].iter().collect();
        tokens.push(Token { text, line });
    }
    tokens
}

/// Whether a token can be a segment of a path: a name, `$crate`, `self`.
fn is_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$')
}

/// One leaf of a `use` tree: `use a::{b::C as D}` gives path `a::b::C`
/// bound to `D`, `use a::{self}` gives `a` bound to `a`, and a glob
/// `use a::*` gives `a` bound to `*`.
struct Use {
    path: Vec<String>,
    name: Option<String>,
    line: usize,
}

/// The leaves of a `use` tree, given the tokens between `use` and `;`.
fn use_tree(tokens: &[Token]) -> Vec<Use> {
    fn subtree(t: &[Token], i: &mut usize, mut path: Vec<String>, out: &mut Vec<Use>) {
        let text = |k: usize| t.get(k).map_or("", |t| t.text.as_str());
        loop {
            match text(*i) {
                "::" if path.is_empty() => path.push("::".into()), // global: external
                "::" => {}
                "as" => break,
                name if is_name(name) => path.push(name.to_owned()),
                _ => break,
            }
            *i += 1;
        }
        if text(*i) == "{" {
            *i += 1;
            while !matches!(text(*i), "}" | "") {
                let before = *i;
                subtree(t, i, path.clone(), out);
                *i += usize::from(text(*i) == "," || *i == before);
            }
            *i += 1;
            return;
        }
        if path.len() > 1 && path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
        let mut name = path.last().cloned();
        if text(*i) == "*" {
            name = Some("*".into());
            *i += 1;
        } else if text(*i) == "as" {
            name = Some(text(*i + 1).to_owned()).filter(|n| n != "_");
            *i += 2;
        }
        if let Some(last) = t.get(i.wrapping_sub(1)).filter(|_| !path.is_empty()) {
            out.push(Use {
                path,
                name,
                line: last.line,
            });
        }
    }
    let mut out = Vec::new();
    subtree(tokens, &mut 0, Vec::new(), &mut out);
    out
}

/// What the analysis knows of one module, from a file or an inline `mod`.
#[derive(Default)]
struct Module {
    /// The file it is written in, relative to `src/`.
    file: Option<String>,
    /// Its child modules, `mod x;` and `mod x { }`.
    children: BTreeSet<String>,
    /// The items it defines at its own level (not methods, not locals).
    items: BTreeSet<String>,
    /// Its `use`s, public or not, at any depth: names resolve through them.
    uses: Vec<Use>,
}

/// A path that code names, kept until every module is known.
struct Mention {
    file: String,
    module: Vec<String>,
    path: Vec<String>,
    line: usize,
    /// Named by a `pub use`: the module's facade, not its code.
    reexport: bool,
}

/// What a path refers to; an item by the module that defines it.
#[derive(Clone)]
enum Target {
    Module(Vec<String>),
    Item(Vec<String>),
    External,
}

#[derive(Default)]
struct Crate {
    modules: BTreeMap<Vec<String>, Module>,
    mentions: Vec<Mention>,
    /// Modules declared under `#[cfg(test)]`: their files are test code.
    test_modules: Vec<Vec<String>>,
    /// What each `module::name` is, once worked out (see `name_in`).
    names: RefCell<HashMap<String, Option<Target>>>,
}

/// `a/b.rs` and `a/b/mod.rs` are `crate::a::b`, `lib.rs` the root; the
/// binary (`main.rs`, `bin/`) is another crate.
fn module_path(file: &str) -> Option<Vec<String>> {
    let stem = file.strip_suffix(".rs")?;
    if stem == "main" || stem.starts_with("bin/") {
        return None;
    }
    let mut path: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if stem == "lib" || path.last().is_some_and(|s| s == "mod") {
        path.pop();
    }
    Some(path)
}

/// The index of the bracket that closes the one at `open`.
fn closing(t: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, token) in t.iter().enumerate().skip(open) {
        match token.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 {
            return k;
        }
    }
    t.len()
}

/// The index of the last token of the item starting at `start`: its `;` or
/// its body's `}`. In a body, where an attribute may mark a field, an
/// argument or a statement, a `,` or the body's end stops it too.
fn item_end(t: &[Token], start: usize, in_body: bool) -> usize {
    let mut k = start;
    while k < t.len() {
        match t[k].text.as_str() {
            "(" | "[" => k = closing(t, k),
            "{" => return closing(t, k),
            ";" => return k,
            "," if in_body => return k,
            ")" | "]" | "}" => return k - 1,
            _ => {}
        }
        k += 1;
    }
    k
}

/// The keywords that define an item, with its name after them.
const ITEMS: [&str; 7] = ["fn", "struct", "enum", "trait", "type", "const", "static"];

impl Crate {
    /// Reads one file (its path relative to `src/`) into the module tree.
    fn read(&mut self, file: &str, source: &str) {
        let Some(module) = module_path(file) else {
            return;
        };
        self.modules.entry(module.clone()).or_default().file = Some(file.to_owned());
        let mut mention = |module: &[String], path: Vec<String>, line: usize, reexport: bool| {
            if file != "lib.rs" {
                let (file, module) = (file.to_owned(), module.to_vec());
                self.mentions.push(Mention {
                    file,
                    module,
                    path,
                    line,
                    reexport,
                });
            }
        };
        let t = tokenize(&lex(source));
        let text = |k: usize| t.get(k).map_or("", |t| t.text.as_str());
        // One entry per open brace: the module whose body it opens, if any.
        let mut scopes: Vec<Option<Vec<String>>> = Vec::new();
        let (mut opening, mut test_item, mut i) = (None, false, 0);
        while i < t.len() {
            let here = scopes.iter().rev().find_map(Clone::clone);
            let here = here.unwrap_or_else(|| module.clone());
            let item_level = scopes.last().is_none_or(Option::is_some);
            let (word, next, before) = (text(i), text(i + 1), text(i.wrapping_sub(1)));
            let mut end = i; // the last token this turn handles
            if word == "#" && (next == "[" || next == "!" && text(i + 2) == "[") {
                let open = i + 1 + usize::from(next == "!");
                end = closing(&t, open);
                let attribute: String = t[open + 1..end].iter().map(|t| t.text.as_str()).collect();
                let for_tests = attribute == "cfg(test)" || attribute.starts_with("cfg(all(test,");
                if for_tests && next == "!" && scopes.is_empty() {
                    return; // the whole file is test code
                }
                test_item |= for_tests && next == "[";
            } else if test_item {
                test_item = false;
                end = item_end(&t, i, !item_level);
                if text(end) == ";" && text(end.saturating_sub(2)) == "mod" {
                    let name = text(end - 1).to_owned();
                    self.test_modules.push([here, vec![name]].concat());
                }
            } else if word == "mod" && is_name(next) && matches!(text(i + 2), ";" | "{") {
                let child = [here.clone(), vec![next.to_owned()]].concat();
                let parent = self.modules.entry(here).or_default();
                parent.children.insert(next.to_owned());
                if text(i + 2) == "{" {
                    self.modules.entry(child.clone()).or_default().file = Some(file.to_owned());
                    opening = Some(child);
                }
                end = i + 1;
            } else if word == "{" {
                scopes.push(opening.take());
            } else if word == "}" {
                scopes.pop();
            } else if word == "use" {
                end = (i..t.len()).find(|&k| text(k) == ";").unwrap_or(t.len());
                // `pub use` or `pub(..) use`: a re-export.
                let visibility = match before {
                    ")" => (0..i).rfind(|&k| text(k) == "(").unwrap_or(i),
                    _ => i,
                };
                let reexport = text(visibility.wrapping_sub(1)) == "pub";
                let uses = &mut self.modules.entry(here.clone()).or_default().uses;
                for leaf in use_tree(&t[i + 1..end]) {
                    if leaf.name.as_deref() != Some("*") {
                        mention(&here, leaf.path.clone(), leaf.line, reexport);
                    }
                    uses.push(leaf);
                }
            } else if item_level && (ITEMS.contains(&word) || word == "union" && is_name(next)) {
                let name = text(i + 1 + usize::from(next == "mut"));
                if is_name(name) && !matches!(name, "fn" | "unsafe" | "async" | "extern" | "_") {
                    let items = &mut self.modules.entry(here).or_default().items;
                    items.insert(name.to_owned());
                }
            } else if is_name(word) && next == "::" && !matches!(before, "::" | ".") {
                let mut path = vec![word.to_owned()];
                while text(end + 1) == "::" && is_name(text(end + 2)) {
                    end += 2;
                    path.push(text(end).to_owned());
                }
                mention(&here, path, t[i].line, false);
            }
            i = end + 1;
        }
    }

    /// What `path`, named in module `here`, refers to.
    fn resolve(&self, here: &[String], path: &[String]) -> Target {
        let supers = path.iter().take_while(|s| *s == "super").count();
        let (mut module, rest) = match path.first().map(String::as_str) {
            Some("crate" | "$crate") => (Vec::new(), &path[1..]),
            Some("self") => (here.to_vec(), &path[1..]),
            Some("super") if supers <= here.len() => {
                (here[..here.len() - supers].to_vec(), &path[supers..])
            }
            Some(first) if self.name_in(here, first).is_some() => (here.to_vec(), path),
            _ => return Target::External,
        };
        for segment in rest {
            match self.name_in(&module, segment) {
                Some(Target::Module(inner)) => module = inner,
                Some(item_or_external) => return item_or_external,
                // Unknown (a macro, an item a macro makes): the module's own.
                None => return Target::Item(module),
            }
        }
        Target::Module(module)
    }

    /// What `name` is in `module`: a child module, an item it defines, a
    /// name it `use`s, or a name one of its globs brings. Worked out once per
    /// module and name; asked again meanwhile (`use`s or globs in a loop),
    /// the name is unknown.
    fn name_in(&self, module: &[String], name: &str) -> Option<Target> {
        let key = format!("{}::{name}", module.join("::"));
        if let Some(known) = self.names.borrow().get(&key) {
            return known.clone();
        }
        self.names.borrow_mut().insert(key.clone(), None);
        let m = self.modules.get(module)?;
        let found = if m.children.contains(name) {
            Some(Target::Module([module, &[name.to_owned()]].concat()))
        } else if m.items.contains(name) {
            Some(Target::Item(module.to_vec()))
        } else if let Some(used) = m.uses.iter().find(|u| u.name.as_deref() == Some(name)) {
            Some(self.resolve(module, &used.path))
        } else {
            let mut globs = m.uses.iter().filter(|u| u.name.as_deref() == Some("*"));
            globs.find_map(|glob| match self.resolve(module, &glob.path) {
                Target::Module(from) => self.name_in(&from, name),
                _ => None,
            })
        };
        self.names.borrow_mut().insert(key, found.clone());
        found
    }
}

/// The file graph of the given sources (paths relative to `src/`), with
/// nodes named `src/a/b.rs`. Re-exports are edges only if asked for: they
/// are no cycle between files, but a module that re-exports from a higher
/// layer depends on it.
fn file_graph(sources: &BTreeMap<String, String>, reexports: bool) -> Graph {
    let mut krate = Crate::default();
    for (file, source) in sources {
        krate.read(file, source);
    }
    let mut edges = Graph::new();
    for m in &krate.mentions {
        let in_tests = krate.test_modules.iter().any(|t| m.module.starts_with(t));
        if in_tests || m.reexport && !reexports {
            continue;
        }
        let Target::Item(owner) = krate.resolve(&m.module, &m.path) else {
            continue;
        };
        let to = krate.modules.get(&owner).and_then(|o| o.file.as_ref());
        if let Some(to) = to.filter(|to| **to != m.file) {
            let place = format!("src/{}:{}", m.file, m.line);
            let edge = (format!("src/{}", m.file), format!("src/{to}"));
            edges.entry(edge).or_insert(place);
        }
    }
    edges
}

/// The top-level module of a file: `src/a/b.rs` -> `a`.
fn top_level(file: &str) -> &str {
    let relative = file.strip_prefix("src/").unwrap_or(file);
    relative.split(['/', '.']).next().unwrap_or_default()
}

/// The file graph seen from above, between top-level modules.
fn module_graph(files: &Graph) -> Graph {
    let mut edges = Graph::new();
    for ((from, to), place) in files {
        let (from, to) = (top_level(from), top_level(to));
        if from != to && from != "lib" && to != "lib" {
            let edge = (from.to_owned(), to.to_owned());
            edges.entry(edge).or_insert_with(|| place.clone());
        }
    }
    edges
}

/// Every node reachable from `start` in one step or more, with the node it
/// is first reached from: breadth first, so the path back is a shortest one.
fn reached_from<'a>(edges: &'a Graph, start: &'a str) -> BTreeMap<&'a str, &'a str> {
    let mut parents = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        let after = (node.to_owned(), String::new());
        for ((_, next), _) in edges.range(after..).take_while(|((f, _), _)| f == node) {
            if !parents.contains_key(next.as_str()) {
                parents.insert(next.as_str(), node);
                queue.push_back(next);
            }
        }
    }
    parents
}

/// The graph's strongly connected components of more than one node (by
/// mutual reachability, plenty for a few hundred nodes), each with a
/// shortest cycle through its first node. Every cycle lies inside one of
/// them, so they are all there is to untangle.
fn tangles(edges: &Graph) -> Vec<(Vec<String>, Vec<String>)> {
    let nodes: BTreeSet<&str> = edges.keys().map(|(from, _)| from.as_str()).collect();
    let reach: BTreeMap<&str, _> = nodes.iter().map(|n| (*n, reached_from(edges, n))).collect();
    let mutual = |a: &str, b: &str| reach[a].contains_key(b) && reach[b].contains_key(a);
    let mut found = Vec::new();
    for &start in &nodes {
        // Each component once, from its first node.
        if !mutual(start, start) || nodes.range(..start).any(|n| mutual(start, n)) {
            continue;
        }
        let component = nodes.iter().filter(|n| mutual(start, n));
        let mut cycle = vec![start];
        while let Some(parent) = reach[start].get(cycle[cycle.len() - 1]) {
            cycle.push(parent);
            if *parent == start {
                break;
            }
        }
        let cycle = cycle.iter().rev().map(|n| n.to_string()).collect();
        found.push((component.map(|n| n.to_string()).collect(), cycle));
    }
    found
}

/// One paragraph per tangle: its members, one cycle with the place of each
/// edge, and every edge inside it (cutting some of them is the way out).
fn describe_cycles(edges: &Graph) -> Vec<String> {
    let mut paragraphs = Vec::new();
    for (component, cycle) in tangles(edges) {
        let (members, example) = (component.join(", "), cycle.join(" -> "));
        let mut text = format!("{} import each other: {members}\n", component.len());
        text += &format!("  for example {example}\n");
        for pair in cycle.windows(2) {
            let place = &edges[&(pair[0].clone(), pair[1].clone())];
            text += &format!("    {place} -> {}\n", pair[1]);
        }
        text += "  every import inside:\n";
        for ((from, to), place) in edges {
            if component.contains(from) && component.contains(to) {
                text += &format!("    {place} -> {to}\n");
            }
        }
        paragraphs.push(text);
    }
    paragraphs
}

/// The crate's sources by path relative to `src/`. A file moved away while
/// this runs is skipped rather than failing the read.
fn sources_in(src: &Path) -> BTreeMap<String, String> {
    let mut sources = BTreeMap::new();
    let mut directories = vec![src.to_path_buf()];
    while let Some(directory) = directories.pop() {
        for entry in fs::read_dir(&directory).into_iter().flatten().flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(src).unwrap().to_string_lossy();
            let relative = relative.replace('\\', "/");
            if path.is_dir() {
                directories.push(path);
            } else if relative.ends_with(".rs")
                && let Ok(source) = fs::read_to_string(&path)
            {
                sources.insert(relative, source);
            }
        }
    }
    sources
}

fn real_layers() -> BTreeMap<String, u32> {
    layers_from(&fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap())
}

fn real_file_graph(reexports: bool) -> Graph {
    file_graph(&sources_in(&root().join("src")), reexports)
}

/// A file a reader can hold in mind: none under src/ is longer than 800
/// lines (generated data lives outside src/).
#[test]
fn no_source_file_is_over_800_lines() {
    let long: Vec<String> = sources_in(&root().join("src"))
        .into_iter()
        .map(|(file, source)| (file, source.lines().count()))
        .filter(|(_, lines)| *lines > 800)
        .map(|(file, lines)| format!("src/{file}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "split these by concern:\n{}",
        long.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_layer() {
    let layers = real_layers();
    let lib = fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';').to_owned())
        .collect();
    let tabled: BTreeSet<String> = layers.keys().cloned().collect();
    assert_eq!(
        declared, tabled,
        "src/lib.rs and ARCHITECTURE.md's layer table must name the same modules"
    );
    let unlisted: Vec<String> = sources_in(&root().join("src"))
        .into_keys()
        .filter(|file| module_path(file).is_some_and(|m| !m.is_empty()))
        .filter(|file| !layers.contains_key(top_level(file)))
        .map(|file| format!("src/{file} is in a module the layer table does not list"))
        .collect();
    assert!(unlisted.is_empty(), "{}", unlisted.join("\n"));
}

#[test]
fn no_module_imports_from_a_higher_layer() {
    let layers = real_layers();
    let mut upward = Vec::new();
    for ((from, to), place) in module_graph(&real_file_graph(true)) {
        if let (Some(low), Some(high)) = (layers.get(&from), layers.get(&to))
            && high > low
        {
            upward.push(format!(
                "{place}: {from} (layer {low}) imports {to} (layer {high})"
            ));
        }
    }
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn top_level_modules_form_no_cycle() {
    let cycles = describe_cycles(&module_graph(&real_file_graph(true)));
    assert!(
        cycles.is_empty(),
        "top-level import cycles:\n{}",
        cycles.join("\n")
    );
}

/// Two files that need each other cannot be read, tested or moved apart
/// one at a time; the top-level check cannot see such a knot inside one
/// module.
#[test]
fn no_cycle_between_files() {
    let cycles = describe_cycles(&real_file_graph(false));
    assert!(
        cycles.is_empty(),
        "import cycles between files:\n{}",
        cycles.join("\n")
    );
}

/// Tool names belong to the surface: the layers below it (and so the
/// engine) must not mention them, or a strategy that lists other tools
/// would hand the model instructions it cannot follow.
#[test]
fn layers_below_the_surface_name_no_tool() {
    let layers = real_layers();
    let surface = layers["surface"];
    let mut offenders = Vec::new();
    for (file, source) in sources_in(&root().join("src")) {
        if layers
            .get(top_level(&file))
            .is_some_and(|layer| *layer < surface)
        {
            for name in ["zen_select_mode", "zen_execute"] {
                if source.contains(name) {
                    offenders.push(format!("src/{file} names {name}"));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

/// The file graph of an in-memory tree, as `place -> target` lines.
fn edges_of(files: &[(&str, &str)]) -> Vec<String> {
    let sources = files.iter().map(|(f, s)| (f.to_string(), s.to_string()));
    let graph = file_graph(&sources.collect(), false);
    graph
        .iter()
        .map(|((_, to), place)| format!("{place} -> {to}"))
        .collect()
}

/// The checker itself: it must see through comments, literals, groups,
/// re-exports and `super::`, or the tests above could pass on code that
/// breaks the rule, or fail on code that keeps it.
#[test]
fn the_checker_finds_what_it_should() {
    let code = lex(concat!(
        "let a = \"crate::x \\\" {\"; // crate::y {\n",
        "let b = r#\"{ \"crate::z\" }\"#; /* a /* nested { */ crate::w */ let f = b\"}\";\n",
        "let c = '{'; let d = '\\''; let e = '\\u{7f}'; let g = br##\"}\"#\"##;\n",
        "fn f<'a>(x: &'a str) -> &'static str { x }\n",
    ));
    let counts = (code.matches("crate::").count(), code.matches('{').count());
    assert_eq!((counts, code.lines().count()), ((0, 1), 4), "{code}");
    assert!(
        code.ends_with("f<'a>(x: &'a str) -> &'static str { x }\n"),
        "{code}"
    );

    let leaves = use_tree(&tokenize("crate::{a::{B, c as d, self}, e::*, f as _}"));
    let leaf = |u: &Use| u.path.join("::") + " as " + u.name.as_deref().unwrap_or("_");
    let leaves: Vec<String> = leaves.iter().map(leaf).collect();
    let expected =
        "crate::a::B as B, crate::a::c as d, crate::a as a, crate::e as *, crate::f as _";
    assert_eq!(leaves.join(", "), expected);
    assert_eq!(use_tree(&tokenize("::std::f"))[0].path, ["::", "std", "f"]);

    // Through a re-export to the defining file, through a module alias,
    // `super::` from a nested file and from an inline module; a `use` of a
    // module alone, a string and test code give no edge.
    let b = concat!(
        "use crate::a::Thing;\nuse crate::a;\nfn f() {\n    let s = \"crate::c::X\";\n",
        "    a::aid();\n}\nmod nested {\n    fn g() { super::super::a::local(); }\n}\n",
        "#[cfg(test)]\nmod tests {\n    use crate::c::Y;\n}\n",
    );
    let resolved = edges_of(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        (
            "a/mod.rs",
            "mod inner;\npub use inner::{Thing, help as aid};\npub fn local() {}",
        ),
        (
            "a/inner.rs",
            "pub struct Thing;\npub fn help() {}\nfn up() { super::local() }",
        ),
        ("b.rs", b),
    ]);
    let expected = "src/a/inner.rs:3 -> src/a/mod.rs, src/b.rs:1 -> src/a/inner.rs, \
                    src/b.rs:8 -> src/a/mod.rs";
    assert_eq!(resolved.join(", "), expected);

    // A parent that only declares and re-exports is no cycle with a child
    // that reaches a sibling's item through it; two files that call each
    // other are one, reported with both places.
    let files = [
        ("lib.rs", "pub mod p;\npub mod x;\npub mod y;\n"),
        (
            "p/mod.rs",
            "mod child;\nmod other;\npub use child::Api;\npub(crate) use other::Item;",
        ),
        ("p/child.rs", "use super::Item;\npub struct Api(Item);\n"),
        ("p/other.rs", "pub struct Item;\n"),
        ("x.rs", "pub fn f() {\n    crate::y::g()\n}\n"),
        ("y.rs", "use crate::x;\npub fn g() { x::f() }\n"),
    ];
    let expected = "src/p/child.rs:1 -> src/p/other.rs, src/x.rs:2 -> src/y.rs, \
                    src/y.rs:2 -> src/x.rs";
    assert_eq!(edges_of(&files).join(", "), expected);
    let sources = files.iter().map(|(f, s)| (f.to_string(), s.to_string()));
    let sources = sources.collect();
    let cycles = describe_cycles(&file_graph(&sources, false));
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let example = "for example src/x.rs -> src/y.rs -> src/x.rs\n    \
                   src/x.rs:2 -> src/y.rs\n    src/y.rs:2 -> src/x.rs\n";
    assert!(cycles[0].contains(example), "{}", cycles[0]);
    // Asked for, re-exports are edges, to the files that define the items.
    let facade = file_graph(&sources, true)
        .into_keys()
        .filter(|(from, _)| from == "src/p/mod.rs");
    let facade: Vec<String> = facade.map(|(_, to)| to).collect();
    assert_eq!(facade, ["src/p/child.rs", "src/p/other.rs"]);

    // A ring of three with a tail is found whole; files map to modules.
    let edge = |a: &str, b: &str| ((a.to_owned(), b.to_owned()), format!("{a}.rs:1"));
    let mut ring = Graph::from([edge("c", "a"), edge("a", "b"), edge("b", "c")]);
    ring.extend([edge("c", "d")]);
    let found: Vec<String> = tangles(&ring).iter().map(|t| format!("{t:?}")).collect();
    assert_eq!(found, [r#"(["a", "b", "c"], ["a", "b", "c", "a"])"#]);
    assert!(tangles(&Graph::from([edge("c", "a"), edge("a", "b")])).is_empty());
    let files = Graph::from([edge("src/a/x.rs", "src/b.rs"), edge("src/b.rs", "src/a.rs")]);
    let modules = format!("{:?}", module_graph(&files).keys());
    assert_eq!(modules, r#"[("a", "b"), ("b", "a")]"#);

    let layers = layers_from(concat!(
        "# A\n\n## Layers\n\n| layer | name | modules |\n|---|---|---|\n",
        "| 1 | low | `a`, `b` |\n| 2 | high | `c` |\n\n## Next\n| 9 | x | `z` |\n",
    ));
    let layers: Vec<(&str, u32)> = layers.iter().map(|(m, l)| (m.as_str(), *l)).collect();
    assert_eq!(layers, [("a", 1), ("b", 1), ("c", 2)]);
}
