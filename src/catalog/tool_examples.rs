//! Example requests for other servers' tools: the ones shipped in the binary
//! for well-known MCP servers (`data/examples/<server>.json`), written in
//! users' words, so that a tool is ranked by how people ask for it and not
//! only by its description (docs/selection.md, "Examples for other servers'
//! tools").
//!
//! A file names its server and the tools it covers, each with the
//! fingerprint of the description its examples were written for. A server
//! behind zenmode (or a `--catalog` file) is matched to a file by the tool
//! names they share, so it does not matter what the user called the server
//! or how it was added; a tool whose description has changed since keeps
//! its examples and is reported as changed (`zenmode upstream tools`).

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock, RwLock},
};

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// `(file name, contents)` of every `data/examples/*.json`, sorted by name.
static EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/embedded_examples.rs"));

/// A file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExamplesFile {
    server: String,
    /// Names the server gives itself (`serverInfo.name`) or is installed
    /// under; they break ties between files sharing tool names.
    #[serde(default)]
    identity: Vec<String>,
    /// What users call the server in their requests ("jira", "confluence").
    #[serde(default)]
    called: Vec<String>,
    tools: HashMap<String, ToolFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolFile {
    fingerprint: String,
    examples: Vec<String>,
}

/// The shipped examples of one server.
#[derive(Debug)]
pub struct ServerExamples {
    pub server: String,
    identity: Vec<String>,
    called: Arc<[String]>,
    tools: HashMap<String, ToolExamples>,
}

#[derive(Debug)]
struct ToolExamples {
    fingerprint: String,
    examples: Arc<[String]>,
}

impl ServerExamples {
    /// The examples of `tool`, if this file has any.
    pub fn examples(&self, tool: &str) -> Option<Arc<[String]>> {
        self.tools.get(tool).map(|t| Arc::clone(&t.examples))
    }

    /// Whether `tool` is known here with another description than
    /// `description`: its examples may no longer fit what it does.
    pub fn changed(&self, tool: &str, description: &str) -> bool {
        self.tools
            .get(tool)
            .is_some_and(|t| t.fingerprint != fingerprint(description))
    }

    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    pub fn example_count(&self) -> usize {
        self.tools.values().map(|t| t.examples.len()).sum()
    }
}

/// The fingerprint of a tool description: the first 16 hex digits of its
/// SHA-256, over the text as the server sends it.
pub fn fingerprint(description: &str) -> String {
    let digest = Sha256::digest(description.as_bytes());
    hex::encode(&digest[..8])
}

/// Every shipped file, parsed once. A file that does not parse is left out
/// with a warning (the build and a unit test check them all).
pub fn shipped() -> &'static [ServerExamples] {
    static SHIPPED: OnceLock<Vec<ServerExamples>> = OnceLock::new();
    SHIPPED.get_or_init(|| {
        EMBEDDED
            .iter()
            .filter_map(|(name, text)| match parse(text) {
                Ok(server) => Some(server),
                Err(error) => {
                    tracing::warn!(file = name, %error, "shipped tool examples left out");
                    None
                }
            })
            .collect()
    })
}

fn parse(text: &str) -> Result<ServerExamples, String> {
    let file: ExamplesFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(ServerExamples {
        server: file.server,
        identity: file.identity,
        called: file.called.into(),
        tools: file
            .tools
            .into_iter()
            .map(|(name, tool)| {
                (
                    name,
                    ToolExamples {
                        fingerprint: tool.fingerprint,
                        examples: tool.examples.into(),
                    },
                )
            })
            .collect(),
    })
}

/// Servers whose shipped examples are not used (`zenmode eval
/// --withhold-examples`: measuring how servers never seen are ranked).
static WITHHELD: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Leaves out the shipped examples of these servers (by their file's
/// `server` name; `all`: every server) in catalogs loaded from now on.
pub fn withhold(servers: &[String]) {
    if let Ok(mut withheld) = WITHHELD.write() {
        withheld.clear();
        withheld.extend(servers.iter().cloned());
    }
}

fn withheld(server: &str) -> bool {
    WITHHELD
        .read()
        .is_ok_and(|w| w.iter().any(|name| name == server || name == "all"))
}

/// The shipped file for a server whose tools are named `tools`, known by
/// `names` (what it calls itself, what the user called it): the file that
/// covers most of its tools, if it covers at least half of them (or at
/// least one when a name matches the file's identity). Ties go to a file
/// whose identity names the server, then to the one with more examples,
/// then to the smaller file (the more specific server).
pub fn match_server(names: &[&str], tools: &[&str]) -> Option<&'static ServerExamples> {
    best_match(
        shipped().iter().filter(|server| !withheld(&server.server)),
        names,
        tools,
    )
}

fn best_match<'a>(
    files: impl Iterator<Item = &'a ServerExamples>,
    names: &[&str],
    tools: &[&str],
) -> Option<&'a ServerExamples> {
    if tools.is_empty() {
        return None;
    }
    let named = |server: &ServerExamples| {
        names.iter().any(|name| {
            let name = name.trim();
            !name.is_empty()
                && (server.server.eq_ignore_ascii_case(name)
                    || server.identity.iter().any(|i| i.eq_ignore_ascii_case(name)))
        })
    };
    files
        .filter_map(|server| {
            let shared = tools
                .iter()
                .filter(|t| server.tools.contains_key(**t))
                .count();
            let is_named = named(server);
            let enough = shared * 2 >= tools.len() || (is_named && shared > 0);
            enough.then_some((shared, is_named, server))
        })
        .max_by(|a, b| {
            (a.0, a.1)
                .cmp(&(b.0, b.1))
                .then_with(|| a.2.example_count().cmp(&b.2.example_count()))
                .then_with(|| b.2.tools.len().cmp(&a.2.tools.len()))
                .then_with(|| b.2.server.cmp(&a.2.server))
        })
        .map(|(_, _, server)| server)
}

/// What one tool gets from its server's shipped file.
#[derive(Debug, Clone, Default)]
pub struct ForTool {
    pub examples: Arc<[String]>,
    pub server_called: Arc<[String]>,
    /// Its row in the tool classifier (`tool_classifier.rs`), if it has one.
    pub classifier_row: Option<u32>,
}

/// Where one server's tools get their examples: the shipped file matched
/// to it, if any.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExampleSource {
    shipped: Option<&'static ServerExamples>,
}

impl ExampleSource {
    /// The source for a server known by `names` whose tools are `tools`.
    pub fn for_server(names: &[&str], tools: &[&str]) -> Self {
        ExampleSource {
            shipped: match_server(names, tools),
        }
    }

    /// What `tool` gets: its examples (none when there are none) and what
    /// users call its server.
    pub fn examples(&self, tool: &str) -> ForTool {
        ForTool {
            examples: self
                .shipped
                .and_then(|server| server.examples(tool))
                .unwrap_or_default(),
            server_called: self
                .shipped
                .map(|server| Arc::clone(&server.called))
                .unwrap_or_default(),
            classifier_row: self
                .shipped
                .and_then(|server| super::tool_classifier::current().row(&server.server, tool)),
        }
    }

    /// The shipped file's server, when one matched.
    pub fn shipped(&self) -> Option<&'static ServerExamples> {
        self.shipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_file_parses_with_fingerprints_and_examples() {
        assert_eq!(
            shipped().len(),
            EMBEDDED.len(),
            "a shipped file did not parse"
        );
        for server in shipped() {
            for (name, tool) in &server.tools {
                assert_eq!(tool.fingerprint.len(), 16, "{}: {name}", server.server);
                assert!(
                    tool.examples.iter().all(|e| !e.trim().is_empty()),
                    "{}: {name} has an empty example",
                    server.server
                );
            }
        }
    }

    #[test]
    fn the_fingerprint_is_the_start_of_the_description_digest() {
        assert_eq!(fingerprint(""), "e3b0c44298fc1c14");
        assert_ne!(fingerprint("Reads a file"), fingerprint("Reads a file."));
    }

    fn server(name: &str, tools: &[&str]) -> ServerExamples {
        ServerExamples {
            server: name.to_owned(),
            identity: vec![format!("{name}-mcp")],
            called: Arc::from([]),
            tools: tools
                .iter()
                .map(|t| {
                    (
                        (*t).to_owned(),
                        ToolExamples {
                            fingerprint: fingerprint(t),
                            examples: vec![format!("do {t}")].into(),
                        },
                    )
                })
                .collect(),
        }
    }

    fn best<'a>(files: &'a [ServerExamples], names: &[&str], tools: &[&str]) -> Option<&'a str> {
        best_match(files.iter(), names, tools).map(|s| s.server.as_str())
    }

    #[test]
    fn a_server_is_matched_by_the_tools_it_shares_with_a_file() {
        let files = [
            server(
                "big",
                &["create_issue", "get_issue", "list_issues", "get_me"],
            ),
            server("legacy", &["create_issue", "get_issue", "push_files"]),
        ];
        assert_eq!(
            best(&files, &[], &["create_issue", "get_issue", "push_files"]),
            Some("legacy")
        );
        assert_eq!(
            best(
                &files,
                &[],
                &["create_issue", "get_issue", "list_issues", "get_me"]
            ),
            Some("big")
        );
        assert_eq!(best(&files, &[], &["unrelated", "other", "get_me"]), None);
        assert_eq!(
            best(&files, &["big-mcp"], &["unrelated", "other", "get_me"]),
            Some("big")
        );
    }

    #[test]
    fn the_shipped_files_serve_the_git_server() {
        let Some(git) = match_server(&[], &["git_status", "git_diff", "git_commit"]) else {
            panic!("the git server's examples are shipped")
        };
        assert_eq!(git.server, "git");
        assert!(git.examples("git_status").is_some_and(|e| e.len() >= 15));
        let source = ExampleSource::for_server(&["jira"], &["jira_get_issue", "confluence_search"]);
        assert!(
            source
                .examples("jira_get_issue")
                .server_called
                .iter()
                .any(|c| c == "jira")
        );
        assert!(match_server(&[], &["no_such_tool"]).is_none());
    }
}
