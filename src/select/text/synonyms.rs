//! A small synonym table for the domain: software work and tool catalogs.
//!
//! Each group names a concept; every member (a word or a two-word phrase)
//! also yields the concept as an extra term, at a discount, so "crash" finds a
//! mode that only says "error" while an exact word still counts for more.
//! Groups stay narrow on purpose: a loose group ("review" ~ "audit") would blur
//! exactly the neighbours the ranking must separate (codereview vs secaudit).
//!
//! Members are written as people type them; the analyzer stems them when it
//! builds its lookup table, so "failing" covers "fails" and "failed" too.

/// `(concept, members)`. A member is one word or two words separated by a space.
pub const GROUPS: &[(&str, &[&str])] = &[
    // Something is wrong at run time.
    (
        "defect",
        &[
            "bug",
            "error",
            "crash",
            "failing",
            "failure",
            "broken",
            "exception",
            "defect",
            "fault",
            "panic",
            "segfault",
            "traceback",
            "stacktrace",
            "stack trace",
            "not working",
            "misbehaving",
            "glitch",
            "500",
        ],
    ),
    (
        "hang",
        &["hang", "freeze", "stuck", "deadlock", "unresponsive"],
    ),
    ("leak", &["leak", "oom", "memory leak"]),
    ("fix", &["fix", "repair", "troubleshoot", "diagnose"]),
    ("cause", &["cause", "root cause", "culprit"]),
    (
        "intermittent",
        &["flaky", "intermittent", "sporadic", "nondeterministic"],
    ),
    // Judging code someone wrote.
    (
        "review",
        &["review", "critique", "critic", "inspect", "look over"],
    ),
    // Tests.
    (
        "test",
        &[
            "test",
            "tests",
            "spec",
            "specs",
            "coverage",
            "unittest",
            "unit test",
            "pytest",
            "jest",
            "junit",
            "rspec",
            "mocha",
            "vitest",
            "test case",
            "assertion",
        ],
    ),
    (
        "edge",
        &["edge case", "corner case", "boundary", "boundary condition"],
    ),
    // Writing documentation into the code.
    (
        "docstring",
        &[
            "docstring",
            "jsdoc",
            "javadoc",
            "rustdoc",
            "pydoc",
            "doc comment",
            "doxygen",
            "comment",
            "annotate",
        ],
    ),
    ("document", &["document", "documentation", "docs", "doc"]),
    // Security.
    (
        "vulnerability",
        &[
            "vulnerability",
            "vuln",
            "exploit",
            "attack",
            "cve",
            "owasp",
            "injection",
            "xss",
            "csrf",
            "ssrf",
            "insecure",
            "security hole",
            "attacker",
            "malicious",
            "pentest",
        ],
    ),
    (
        "secret",
        &[
            "secret",
            "credential",
            "password",
            "api key",
            "token",
            "hardcoded",
        ],
    ),
    (
        "auth",
        &[
            "auth",
            "authentication",
            "authorization",
            "login",
            "permission",
        ],
    ),
    // Version control.
    (
        "change",
        &[
            "staged",
            "unstaged",
            "uncommitted",
            "diff",
            "changeset",
            "working tree",
            "local changes",
        ],
    ),
    ("commit", &["commit", "precommit", "pre commit"]),
    ("merge", &["merge", "merging"]),
    (
        "pull_request",
        &["pull request", "pr", "merge request", "mr"],
    ),
    // Restructuring.
    (
        "restructure",
        &[
            "refactor",
            "restructure",
            "reorganize",
            "reorganise",
            "cleanup",
            "tidy",
            "decompose",
            "untangle",
            "modernize",
            "modernise",
            "rewrite",
            "simplify",
        ],
    ),
    (
        "smell",
        &[
            "code smell",
            "smell",
            "duplication",
            "copy paste",
            "god class",
            "long method",
            "spaghetti",
            "dead code",
        ],
    ),
    // Following the code.
    (
        "call_flow",
        &[
            "call graph",
            "call chain",
            "call flow",
            "caller",
            "callers",
            "callee",
            "callees",
            "who calls",
            "execution path",
            "execution flow",
            "control flow",
            "code path",
        ],
    ),
    (
        "dependency",
        &[
            "dependency",
            "dependencies",
            "depend",
            "depends",
            "coupling",
        ],
    ),
    // Planning.
    (
        "plan",
        &[
            "plan",
            "planning",
            "roadmap",
            "breakdown",
            "break down",
            "milestone",
            "phase",
            "outline",
            "sequence",
            "rollout",
        ],
    ),
    // Thinking and talking.
    (
        "think",
        &[
            "think",
            "reason",
            "ponder",
            "deliberate",
            "contemplate",
            "reflect",
        ],
    ),
    ("brainstorm", &["brainstorm", "idea", "ideas", "ideate"]),
    (
        "opinion",
        &["opinion", "perspective", "thought", "feedback"],
    ),
    ("explain", &["explain", "clarify", "eli5", "teach"]),
    (
        "doubt",
        &["doubt", "skeptical", "sceptical", "disagree", "push back"],
    ),
    (
        "debate",
        &["debate", "vote", "poll", "panel", "consensus", "verdict"],
    ),
    (
        "decide",
        &[
            "decide", "decision", "choose", "choice", "pick", "versus", "vs",
        ],
    ),
    // Delegating to another agent.
    (
        "delegate",
        &[
            "delegate",
            "hand off",
            "handoff",
            "offload",
            "subagent",
            "sub agent",
            "spawn",
            "subprocess",
        ],
    ),
    ("cli", &["cli", "command line", "terminal", "shell"]),
    // Models and the server itself.
    (
        "model",
        &["model", "models", "llm", "provider", "providers"],
    ),
    (
        "config",
        &["config", "configuration", "settings", "setup", "configured"],
    ),
    // Speed and size.
    (
        "performance",
        &[
            "performance",
            "perf",
            "slow",
            "latency",
            "throughput",
            "bottleneck",
            "speed",
            "faster",
        ],
    ),
    ("scale", &["scale", "scalability", "scaling", "traffic"]),
    // Generic verbs of tool catalogs (create / read / update / delete / find).
    ("create", &["create", "add", "submit", "post"]),
    (
        "read",
        &["get", "read", "fetch", "retrieve", "view", "details"],
    ),
    ("list", &["list", "enumerate"]),
    ("update", &["update", "edit", "modify", "change", "rename"]),
    ("delete", &["delete", "remove", "erase", "detach", "unset"]),
    ("search", &["search", "find", "lookup", "query"]),
    ("close", &["close", "resolve"]),
    ("reply", &["reply", "respond", "answer"]),
    // Repository vocabulary.
    ("repository", &["repo", "repository"]),
    ("issue", &["issue", "ticket", "bug report"]),
    ("user", &["user", "account", "profile", "member"]),
    ("label", &["label", "tag"]),
    (
        "workflow",
        &["workflow", "action", "actions", "ci", "pipeline"],
    ),
    ("star", &["star", "starred", "favorite", "bookmark"]),
    (
        "notification",
        &["notification", "notifications", "inbox", "alert"],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::text::words;

    #[test]
    fn every_member_is_one_run_of_one_or_two_words() {
        // A member with a stopword inside ("look for", "clean up") would
        // silently shrink to one of its words and drag that word into the group.
        for (concept, members) in GROUPS {
            assert!(!members.is_empty(), "{concept} is empty");
            for member in *members {
                let runs = words::runs(member);
                let written = member.split(' ').count();
                assert!(
                    (1..=2).contains(&written) && runs.len() == 1 && runs[0].len() == written,
                    "{concept}: {member:?} analyzes to {runs:?}"
                );
            }
        }
    }

    #[test]
    fn concepts_are_unique() {
        let mut names: Vec<&str> = GROUPS.iter().map(|(c, _)| *c).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count);
    }
}
