//! Every relative link in the Markdown docs (README.md, CONTRIBUTING.md,
//! ARCHITECTURE.md and docs/*.md) points at a file of the repository, and
//! every `#anchor` into a Markdown file names one of its headings, as GitHub
//! spells heading anchors. Standard library only, so it runs in a moment.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

/// The anchor GitHub gives a heading: lower case, spaces to hyphens, and
/// every character but letters, digits, `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Lines outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => lines.push((i + 1, line)),
            _ => {}
        }
    }
    lines
}

/// The anchors of a Markdown text's headings, with GitHub's `-1`, `-2`, ...
/// for repeated ones.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// Drops inline code spans, whose brackets are not links.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The targets of the inline links `[text](target)` and `![alt](target)`
/// of a Markdown text, with their line numbers.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    for (number, line) in prose_lines(text) {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            // A title after the target ("path "title"") is not part of it.
            let target = after[..end].split_whitespace().next().unwrap_or("");
            targets.push((number, target.to_owned()));
            rest = &after[end..];
        }
    }
    targets
}

/// What is wrong with the relative links of `doc` (its text `text`), found
/// against the files under `root`: one line per broken link.
fn broken_links(root: &Path, doc: &Path, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let shown = doc.strip_prefix(root).unwrap_or(doc).display().to_string();
    for (line, target) in link_targets(text) {
        if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let file = if path.is_empty() {
            doc.to_path_buf()
        } else {
            doc.parent().unwrap().join(path)
        };
        if !path.is_empty() && !file.exists() {
            problems.push(format!("{shown}:{line}: {target}: no such file"));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if file.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let heading_text = if file == doc {
            text.to_owned()
        } else {
            fs::read_to_string(&file).unwrap()
        };
        if !anchors(&heading_text).contains(anchor) {
            problems.push(format!(
                "{shown}:{line}: {target}: no heading with the anchor #{anchor}"
            ));
        }
    }
    problems
}

fn docs(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"]
        .iter()
        .map(|name| root.join(name))
        .collect();
    // The user docs and the decision records beside them.
    let mut pages: Vec<PathBuf> = ["docs", "docs/decisions"]
        .iter()
        .flat_map(|dir| fs::read_dir(root.join(dir)).unwrap())
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().and_then(|e| e.to_str()) == Some("md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

#[test]
fn relative_links_in_the_docs_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in docs(root) {
        let text = fs::read_to_string(&doc)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", doc.display()));
        checked += link_targets(&text).len();
        problems.extend(broken_links(root, &doc, &text));
    }
    assert!(
        checked > 50,
        "found only {checked} links; is the parser broken?"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn readme_stays_short() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lines = fs::read_to_string(root.join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines < 250,
        "README.md has {lines} lines; move details to docs/"
    );
}

#[test]
fn headings_become_github_anchors() {
    assert_eq!(
        slug("How `zen_select_mode` ranks"),
        "how-zen_select_mode-ranks"
    );
    assert_eq!(slug("`serve` flags"), "serve-flags");
    assert_eq!(
        slug("Strategies: five other ways to load tools lazily"),
        "strategies-five-other-ways-to-load-tools-lazily"
    );
    let text = "# Notes\n## Setup\n```sh\n# not a heading\n```\n## Setup\n";
    let found: Vec<_> = anchors(text).into_iter().collect();
    assert_eq!(found, ["notes", "setup", "setup-1"]);
}

#[test]
fn broken_files_and_anchors_are_reported() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = root.join("docs/example.md");
    let text = "# Example\n\
        [fine](../README.md#install) [here](#example) [web](https://example.com/x)\n\
        [gone](missing.md) [bad anchor](../README.md#no-such-heading) [self](#nowhere)\n\
        `[code](not-a-link.md)`\n\
        ```\n[fenced](also-not-a-link.md)\n```\n";
    let problems = broken_links(root, &doc, text);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].contains("missing.md: no such file"),
        "{problems:#?}"
    );
    assert!(
        problems[1].contains("no heading with the anchor #no-such-heading"),
        "{problems:#?}"
    );
    assert!(problems[2].contains("#nowhere"), "{problems:#?}");
}
