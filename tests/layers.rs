//! The layering rule, enforced: no module imports from a layer above its
//! own, and the top-level modules form no cycle.
//!
//! The layers are read from the table under "## Layers" in ARCHITECTURE.md,
//! so the document and this test cannot disagree. Every `pub mod` of
//! `src/lib.rs` must appear in that table exactly once.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

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

/// Removes `//` comments (doc comments included), keeping line numbers.
fn strip_comments(source: &str) -> String {
    source
        .lines()
        .map(|line| {
            let mut in_string = false;
            let bytes = line.as_bytes();
            for i in 0..bytes.len() {
                match bytes[i] {
                    b'"' if i == 0 || bytes[i - 1] != b'\\' => in_string = !in_string,
                    b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
                    _ => {}
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The top-level modules a source file names through `crate::` paths, each
/// with the line it is named on. `use crate::{a::X, b}` names `a` and `b`.
fn crate_references(source: &str) -> Vec<(String, usize)> {
    let code = strip_comments(source);
    let line_of = |offset: usize| code[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut search = 0;
    while let Some(position) = code[search..].find("crate::") {
        let start = search + position;
        search = start + "crate::".len();
        let preceded_by_ident = code[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        if preceded_by_ident {
            continue;
        }
        let rest = &code[search..];
        if let Some(group) = rest.strip_prefix('{') {
            // Items at depth one of the brace group, each starting an item.
            let mut depth = 1;
            let mut item_start = true;
            for (offset, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if item_start && depth == 1 && (c.is_alphabetic() || c == '_') => {
                        item_start = false;
                        let name = ident_at(&group[offset..]);
                        if name != "self" {
                            found.push((name.to_owned(), line_of(search + 1 + offset)));
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident_at(rest);
            if !name.is_empty() {
                found.push((name.to_owned(), line_of(search)));
            }
        }
    }
    found
}

/// Top-level modules named through a `super::` chain that climbs to the
/// crate root from a file `depth` modules deep (`super::super::engine` in
/// `src/a/b.rs`).
fn root_references_through_super(source: &str, depth: usize) -> Vec<(String, usize)> {
    let code = strip_comments(source);
    let chain = "super::".repeat(depth);
    let mut found = Vec::new();
    for (number, line) in code.lines().enumerate() {
        let mut search = 0;
        while let Some(position) = line[search..].find(&chain) {
            let start = search + position;
            search = start + chain.len();
            let extends_further = line[search..].starts_with("super::");
            let preceded_by_path = line[..start].ends_with("::");
            if !extends_further && !preceded_by_path {
                let name = ident_at(&line[search..]);
                if !name.is_empty() {
                    found.push((name.to_owned(), number + 1));
                }
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Edges between top-level modules, each with one place that causes it.
fn module_graph(layers: &BTreeMap<String, u32>) -> BTreeMap<(String, String), String> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut edges = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let module = first.to_str().unwrap().trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        assert!(
            layers.contains_key(&module),
            "src/{} belongs to module {module:?}, which ARCHITECTURE.md's layer table does not list",
            relative.display()
        );
        let source = fs::read_to_string(&file).unwrap();
        let depth = relative.components().count()
            - usize::from(relative.file_name().is_some_and(|n| n == "mod.rs"));
        let references = crate_references(&source)
            .into_iter()
            .chain(root_references_through_super(&source, depth));
        for (target, line) in references {
            if target != module && layers.contains_key(&target) {
                edges
                    .entry((module.clone(), target))
                    .or_insert_with(|| format!("src/{}:{line}", relative.display()));
            }
        }
    }
    edges
}

/// A cycle among the graph's nodes, if there is one.
fn find_cycle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeSet<(String, String)>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for (_, to) in edges.iter().filter(|(from, _)| from == node) {
            if let Some(cycle) = visit(to, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for (from, _) in edges {
        if let Some(cycle) = visit(from, edges, &mut Vec::new(), &mut done) {
            return Some(cycle);
        }
    }
    None
}

#[test]
fn every_top_level_module_has_a_layer() {
    let layers = layers_from(&fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap());
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
}

#[test]
fn no_module_imports_from_a_higher_layer() {
    let layers = layers_from(&fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap());
    let upward: Vec<String> = module_graph(&layers)
        .into_iter()
        .filter(|((from, to), _)| layers[to] > layers[from])
        .map(|((from, to), place)| {
            format!(
                "{place}: {from} (layer {}) imports {to} (layer {})",
                layers[&from], layers[&to]
            )
        })
        .collect();
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn top_level_modules_form_no_cycle() {
    let layers = layers_from(&fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap());
    let graph = module_graph(&layers);
    let edges: BTreeSet<(String, String)> = graph.keys().cloned().collect();
    if let Some(cycle) = find_cycle(&edges) {
        let places: Vec<String> = cycle
            .windows(2)
            .map(|pair| graph[&(pair[0].clone(), pair[1].clone())].clone())
            .collect();
        panic!(
            "import cycle {} (at {})",
            cycle.join(" -> "),
            places.join(", ")
        );
    }
}

/// Tool names belong to the surface: the layers below it (and so the
/// engine) must not mention them, or a strategy that lists other tools
/// would hand the model instructions it cannot follow.
#[test]
fn layers_below_the_surface_name_no_tool() {
    let layers = layers_from(&fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap());
    let surface = layers["surface"];
    let tool_names = ["zen_select_mode", "zen_execute"];
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut offenders = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root().join("src")).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let module = first.to_str().unwrap().trim_end_matches(".rs");
        if layers.get(module).is_some_and(|layer| *layer < surface) {
            let source = fs::read_to_string(&file).unwrap();
            for name in tool_names.iter().filter(|name| source.contains(**name)) {
                offenders.push(format!("src/{} names {name}", relative.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

/// The checker itself: it must see through groups, paths and comments, or
/// the tests above could pass on code that breaks the rule.
#[test]
fn the_checker_finds_what_it_should() {
    let source = "use crate::{\n    engine::{Engine, Outcome},\n    select,\n    self as here,\n};\n// crate::cli in a comment\nfn f() { crate::surface::zen::run(); let s = \"// not a comment\"; crate::server::x(); }\nmacro_rules! m { () => { $crate::tokens::x() } }\n";
    let names: Vec<(String, usize)> = crate_references(source);
    let names: Vec<(&str, usize)> = names.iter().map(|(n, l)| (n.as_str(), *l)).collect();
    assert_eq!(
        names,
        [("engine", 2), ("select", 3), ("surface", 7), ("server", 7)]
    );

    assert_eq!(
        root_references_through_super("use super::super::engine::Engine;\nuse super::x;", 2),
        [("engine".to_owned(), 1)]
    );

    let layers = layers_from(
        "# A\n\n## Layers\n\n| layer | name | modules |\n|---|---|---|\n| 1 | low | `a`, `b` |\n| 2 | high | `c` |\n\n## Next\n| 9 | x | `z` |\n",
    );
    assert_eq!(
        layers.into_iter().collect::<Vec<_>>(),
        [("a".into(), 1), ("b".into(), 1), ("c".into(), 2)]
    );

    let edge = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    let acyclic: BTreeSet<_> = [edge("c", "a"), edge("a", "b")].into();
    assert_eq!(find_cycle(&acyclic), None);
    let cyclic: BTreeSet<_> = [edge("c", "a"), edge("a", "b"), edge("b", "c")].into();
    assert!(find_cycle(&cyclic).is_some_and(|c| c.len() == 4));
}
