//! `zenmode upstream import`: the MCP servers other clients already run,
//! read from their own files.
//!
//! | client | file | where the servers are |
//! |---|---|---|
//! | Claude Desktop | `claude_desktop_config.json` in the OS's config directory | `mcpServers` |
//! | Claude Code, user and local scopes | `~/.claude.json` | `mcpServers`; `projects.<dir>.mcpServers` for the current directory |
//! | Claude Code, project scope | `.mcp.json` | `mcpServers` |
//! | Cursor | `~/.cursor/mcp.json`, `.cursor/mcp.json` | `mcpServers` |
//! | VS Code | `.vscode/mcp.json`, `Code/User/mcp.json` in the config directory | `servers` (entries with `type`) |
//! | VS Code settings | `Code/User/settings.json` | `mcp.servers` |
//! | Windsurf | `~/.codeium/windsurf/mcp_config.json` | `mcpServers` |
//!
//! Relative files (`.mcp.json`, `.cursor/`, `.vscode/`) are looked up in the
//! current directory; `~` is `HOME`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// One client file that exists, and the servers in it.
pub struct Found {
    /// The client and scope, e.g. "Claude Code (user)".
    pub label: String,
    pub path: PathBuf,
    pub servers: Map<String, Value>,
}

/// The server entries of any client's file, in file order: `mcpServers`,
/// VS Code's `servers` and `mcp.servers`, and Claude Code's local scope for
/// `cwd` (`projects.<cwd>.mcpServers`). `None` when the file has none of them.
pub fn servers_in(document: &Value, cwd: &Path) -> Option<Map<String, Value>> {
    let project = document
        .get("projects")
        .and_then(Value::as_object)
        .and_then(|projects| projects.get(cwd.to_str()?))
        .and_then(|project| project.get("mcpServers"));
    let places = [
        document.get("mcpServers"),
        document.get("servers"),
        document.get("mcp").and_then(|mcp| mcp.get("servers")),
        project,
    ];
    let mut found = None::<Map<String, Value>>;
    for servers in places.into_iter().flatten().filter_map(Value::as_object) {
        let all = found.get_or_insert_with(Map::new);
        for (name, entry) in servers {
            all.entry(name.clone()).or_insert_with(|| entry.clone());
        }
    }
    found
}

/// The usual client files for this OS, whether or not they exist.
pub fn usual_files(cwd: &Path) -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    let config = dirs::config_dir();
    if let Some(config) = &config {
        files.push((
            "Claude Desktop".to_owned(),
            config.join("Claude/claude_desktop_config.json"),
        ));
    }
    if let Some(home) = dirs::home_dir() {
        files.push((
            "Claude Code (user and local)".to_owned(),
            home.join(".claude.json"),
        ));
        files.push(("Cursor (user)".to_owned(), home.join(".cursor/mcp.json")));
        files.push((
            "Windsurf".to_owned(),
            home.join(".codeium/windsurf/mcp_config.json"),
        ));
    }
    if let Some(config) = &config {
        files.push((
            "VS Code (user)".to_owned(),
            config.join("Code/User/mcp.json"),
        ));
        files.push((
            "VS Code (user settings)".to_owned(),
            config.join("Code/User/settings.json"),
        ));
    }
    files.push(("Claude Code (project)".to_owned(), cwd.join(".mcp.json")));
    files.push(("Cursor (project)".to_owned(), cwd.join(".cursor/mcp.json")));
    files.push(("VS Code (project)".to_owned(), cwd.join(".vscode/mcp.json")));
    files
}

/// The usual files that exist and hold servers; a file that cannot be read
/// or is not JSON is reported in `problems` and skipped.
pub fn discover(cwd: &Path, problems: &mut Vec<String>) -> Vec<Found> {
    let mut found = Vec::new();
    for (label, path) in usual_files(cwd) {
        if !path.is_file() {
            continue;
        }
        let document = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                // A settings.json with comments (which VS Code allows) is
                // not JSON to serde_json: reported and skipped, like any
                // unreadable file.
                serde_json::from_str::<Value>(&text).map_err(|e| format!("not JSON: {e}"))
            });
        match document {
            Ok(document) => {
                if let Some(servers) = servers_in(&document, cwd).filter(|s| !s.is_empty()) {
                    found.push(Found {
                        label,
                        path,
                        servers,
                    });
                }
            }
            Err(problem) => problems.push(format!("{label}: {}: {problem}", path.display())),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_client_shape_is_read() {
        let cwd = Path::new("/p");
        let claude_code = json!({"mcpServers": {"a": {}}, "projects": {"/p": {"mcpServers": {"b": {}}}, "/q": {"mcpServers": {"c": {}}}}});
        let names: Vec<String> = servers_in(&claude_code, cwd)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert!(servers_in(&json!({"servers": {"v": {"type": "stdio"}}}), cwd).is_some());
        assert!(servers_in(&json!({"mcp": {"servers": {"v": {}}}}), cwd).is_some());
        assert!(servers_in(&json!({"other": 1}), cwd).is_none());
    }
}
