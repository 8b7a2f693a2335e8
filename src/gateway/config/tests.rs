//! The unit tests of the upstreams file: parsing, placeholders, the
//! fingerprint, allow and deny lists, and entries that run zenmode itself.

use std::time::Duration;

use serde_json::Value;

use super::entry::glob_match;
use super::*;
use serde_json::json;

fn one(entry: Value) -> Result<UpstreamConfig, String> {
    parse(&json!({"mcpServers": {"srv": entry}})).map(|mut f| f.servers.remove(0))
}

#[test]
fn stdio_and_http_entries_with_defaults() {
    let stdio =
        one(json!({"command": "npx", "args": ["-y", "x"], "env": {"K": "secretvalue"}})).unwrap();
    assert_eq!(stdio.prefix, "srv");
    assert_eq!(stdio.timeout, DEFAULT_TIMEOUT);
    assert_eq!(stdio.startup, Startup::Lazy);
    assert!(stdio.enabled);
    let http = one(json!({"type": "http", "url": "https://h/mcp",
        "headers": {"Authorization": "Bearer tok123456"}, "prefix": "h", "timeout": 5,
        "idle_shutdown": 0, "startup": "eager"}))
    .unwrap();
    assert_eq!(http.prefix, "h");
    assert_eq!(http.timeout, Duration::from_secs(5));
    assert_eq!(http.idle_shutdown, None);
    assert_eq!(http.startup, Startup::Eager);
    assert!(matches!(http.transport, Transport::Http { .. }));
}

#[test]
fn misconfigured_entries_name_the_entry_and_the_problem() {
    let cases = [
        (json!({}), "needs \"command\""),
        (json!({"command": 3}), "must be a string"),
        (json!({"command": "x", "url": "http://h"}), "both"),
        (json!({"type": "sse", "url": "http://h"}), "SSE"),
        (json!({"url": "ftp://h"}), "http://"),
        (json!({"command": "x", "timeout": -1}), "seconds"),
        (json!({"command": "x", "startup": "soon"}), "lazy"),
        (json!({"command": "x", "prefix": "a b"}), "prefix"),
        (json!({"command": "x", "prefix": "a__b"}), "prefix"),
        (json!({"command": "x", "args": "y"}), "list of strings"),
        (
            json!({"command": "x", "max_reply_bytes": 10}),
            "max_reply_bytes",
        ),
        (
            json!({"command": "x", "protocol_version": "2025-11-25"}),
            "protocol_version",
        ),
    ];
    for (entry, expected) in cases {
        let error = parse(&json!({"mcpServers": {"broken": entry}})).unwrap_err();
        assert!(
            error.contains("\"broken\"") && error.contains(expected),
            "{error}"
        );
    }
    assert!(
        parse(&json!({"servers": {}}))
            .unwrap_err()
            .contains("mcpServers")
    );
}

#[test]
fn two_servers_with_one_prefix_are_refused() {
    let error = parse(&json!({"mcpServers": {
        "a": {"command": "x", "prefix": "p"}, "b": {"command": "y", "prefix": "p"}}}))
    .unwrap_err();
    assert!(error.contains("prefix \"p\""), "{error}");
}

#[test]
fn each_bad_entry_is_set_aside_and_the_good_ones_kept() {
    let file = parse_each(&json!({"mcpServers": {
        "a": {"command": "x", "prefix": "p"},
        "bad": {"command": 3},
        "b": {"command": "y", "prefix": "p"},
        "c": {"command": "z"}}}))
    .unwrap();
    let names: Vec<&str> = file.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "c"]);
    let bad: Vec<&str> = file.bad.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(bad, ["bad", "b"], "file order: {:?}", file.bad);
    assert!(file.bad[1].1.contains("prefix \"p\""), "{:?}", file.bad);
}

#[test]
fn a_file_that_is_not_json_names_the_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("upstreams.json");
    std::fs::write(
        &path,
        "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n}}\n",
    )
    .unwrap();
    let error = load_each(&path).unwrap_err().to_string();
    assert!(
        error.contains("line 3") && error.contains("column") && error.contains("trailing comma"),
        "{error}"
    );
}

#[test]
fn oauth_objects_are_checked_and_their_secret_never_prints() {
    let url = "https://h/mcp";
    let good = one(
        json!({"url": url, "oauth": {"client_id": "c1", "client_secret": "s3cret-value-42",
        "scopes": "read write", "grant": "client_credentials"}}),
    )
    .unwrap();
    let oauth = good.oauth.clone().unwrap();
    assert_eq!(oauth.scopes, ["read", "write"]);
    assert!(oauth.client_credentials);
    assert!(!format!("{good:?}").contains("s3cret-value-42"));
    assert!(
        !good
            .redactor()
            .redact("x s3cret-value-42 y")
            .contains("s3cret")
    );
    for (entry, needle) in [
        (
            json!({"command": "x", "oauth": {}}),
            "only to an http server",
        ),
        (json!({"url": url, "oauth": "yes"}), "must be an object"),
        (
            json!({"url": url, "oauth": {"client": "c"}}),
            "unknown key \"client\"",
        ),
        (
            json!({"url": url, "oauth": {"client_secret": "s"}}),
            "without \"client_id\"",
        ),
        (
            json!({"url": url, "oauth": {"grant": "client_credentials", "client_id": "c"}}),
            "needs \"client_id\" and \"client_secret\"",
        ),
        (
            json!({"url": url, "oauth": {"grant": "password"}}),
            "\"grant\" is \"password\"",
        ),
        (
            json!({"url": url, "oauth": {"scopes": ["a b"]}}),
            "one word",
        ),
        (
            json!({"url": url, "oauth": {"client_id": ""}}),
            "non-empty string",
        ),
        (
            json!({"url": url, "oauth": {"client_metadata_url": "http://x/c.json"}}),
            "https URL",
        ),
    ] {
        let error = one(entry.clone()).unwrap_err();
        assert!(error.contains(needle), "{entry}: {error}");
    }
}

#[test]
fn unknown_keys_warn_and_disabled_is_read() {
    let file =
        parse(&json!({"mcpServers": {"a": {"command": "x", "autoApprove": [], "disabled": true}}}))
            .unwrap();
    assert!(!file.servers[0].enabled);
    assert!(
        file.warnings[0].contains("autoApprove"),
        "{:?}",
        file.warnings
    );
}

#[test]
fn fingerprint_changes_with_the_entry_and_secrets_never_print() {
    let a = one(json!({"command": "x", "env": {"TOKEN": "supersecret1"}})).unwrap();
    let b = one(json!({"command": "x", "env": {"TOKEN": "supersecret2"}})).unwrap();
    assert_ne!(a.fingerprint(), b.fingerprint());
    assert_eq!(a.fingerprint(), a.clone().fingerprint());
    assert!(!format!("{a:?}").contains("supersecret1"));
    let http = one(json!({"url": "https://h/mcp?key=supersecret9", "headers": {"Authorization": "Bearer tok123456"}})).unwrap();
    assert!(!format!("{http:?}").contains("tok123456"));
    let redactor = http.redactor();
    assert_eq!(redactor.redact("sent tok123456!"), "sent [redacted]!");
}

#[test]
fn placeholders_fill_from_the_environment_with_an_escape() {
    let lookup = |name: &str| (name == "T").then(|| "tok".to_owned());
    assert_eq!(
        expand_placeholders("Bearer ${T}", &lookup).unwrap(),
        "Bearer tok"
    );
    assert_eq!(
        expand_placeholders("$${T} $5 ${T", &lookup).unwrap(),
        "${T} $5 ${T"
    );
    assert_eq!(
        expand_placeholders("${NOPE}", &lookup),
        Err(UnsetVariable("NOPE".into()))
    );
    let entry = one(json!({"url": "${ZT_UNIT_UNSET_BASE}/mcp"})).unwrap();
    let problem = entry.expanded().unwrap_err();
    assert!(problem.contains("ZT_UNIT_UNSET_BASE"), "{problem}");
}

#[test]
fn entries_that_run_zenmode_are_recognised_and_others_are_not() {
    let runs = |entry: Value| runs_zenmode(&parse_one("x", &entry).unwrap());
    assert!(runs(json!({"command": "/opt/bin/zenmode", "args": ["serve"]})).is_some());
    assert!(runs(json!({"command": "zenmode"})).is_some());
    assert!(runs(json!({"command": "npx", "args": ["-y", "zenmode@1.2", "serve"]})).is_some());
    assert!(
        runs(json!({"command": "npx", "args": ["-y", "zenmode", "connect", "--profile", "w"]}))
            .is_some()
    );
    assert!(runs(json!({"command": "sh", "args": ["-c", "exec zenmode serve --full"]})).is_some());
    assert!(
        runs(json!({"command": "cargo", "args": ["run", "--bin", "zenmode", "--", "serve"]}))
            .is_some()
    );
    assert!(runs(json!({"command": "npx", "args": ["zenmode-helper", "serve"]})).is_none());
    assert!(runs(json!({"command": "sh", "args": ["-c", "zenmode upstream list"]})).is_none());
    assert!(runs(json!({"url": "http://zenmode/mcp"})).is_none());
    let file = parse(&json!({"mcpServers": {"me": {"command": "zenmode", "args": ["serve"]}, "other": {"command": "x"}}})).unwrap();
    assert_eq!(file.servers.len(), 1);
    assert!(
        file.warnings[0].contains("runs zenmode itself"),
        "{:?}",
        file.warnings
    );
}

#[test]
fn allow_and_deny_lists_take_globs() {
    let config = one(
        json!({"command": "x", "allow_tools": ["read_*", "list"], "deny_tools": ["read_secret*"]}),
    )
    .unwrap();
    assert!(config.allows("read_file"));
    assert!(config.allows("list"));
    assert!(!config.allows("write_file"));
    assert!(!config.allows("read_secrets"));
    assert!(glob_match("*", "anything"));
    assert!(glob_match("a*b*c", "axxbyyc"));
    assert!(!glob_match("a*b*c", "axxc"));
}
