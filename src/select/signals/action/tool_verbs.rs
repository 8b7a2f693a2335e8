//! Verbs read in tool names only: those that change state and those of
//! tools that run what they are given.

use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashSet as HashSet;

/// The stemmer every verb list is read with (the action classes' too).
pub(super) static STEMMER: LazyLock<Stemmer> =
    LazyLock::new(|| Stemmer::create(Algorithm::English));

/// The stems of `verbs`, to meet their inflections (`closes`, `starred`).
pub(super) fn stems_of(verbs: &[&str]) -> HashSet<String> {
    let stemmer = &*STEMMER;
    verbs
        .iter()
        .map(|verb| stemmer.stem(verb).into_owned())
        .collect()
}

/// Whether `word`'s stem is one of `stems`.
pub(super) fn has_stem(stems: &HashSet<String>, word: &str) -> bool {
    let stemmer = &*STEMMER;
    stems.contains(stemmer.stem(word).as_ref())
}

/// Whether the words after a reading verb make its object a new one ("a
/// new issue", "new tab").
pub(super) fn reads_something_new(after: &[String]) -> bool {
    match after {
        [first, ..] if first == "new" => true,
        [first, second, ..] => matches!(first.as_str(), "a" | "an") && second == "new",
        _ => false,
    }
}

/// Verbs that change state when a tool's name opens with them
/// (`star_repository`, `browser_close`, `set_issue_fields`), beyond the
/// action classes: read in tool names only, as "set up", "close to" or
/// "start by" in a request ask for no change. Without `readOnlyHint` (most
/// servers send none) they are what keeps such a tool from a ready call
/// for a request that asks for no change.
const CHANGING_TOOL_VERBS: &[&str] = &[
    "set",
    "unset",
    "mark",
    "assign",
    "unassign",
    "label",
    "tag",
    "pin",
    "unpin",
    "star",
    "unstar",
    "reprioritize",
    "prioritize",
    "resolve",
    "unresolve",
    "approve",
    "reject",
    "dismiss",
    "close",
    "reopen",
    "lock",
    "unlock",
    "apply",
    "subscribe",
    "unsubscribe",
    "follow",
    "unfollow",
    "invite",
    "fork",
    "copy",
    "upload",
    "put",
    "publish",
    "deploy",
    "install",
    "uninstall",
    "cancel",
    "kill",
    "start",
    "stop",
    "restart",
    "pause",
    "resume",
    "schedule",
    "book",
    "reserve",
    "order",
    "buy",
    "purchase",
    "pay",
    "refund",
    "transfer",
    "grant",
    "revoke",
    "ban",
    "block",
    "unblock",
    "mute",
    "unmute",
    "unarchive",
    "import",
    "sync",
    "rotate",
    "submit",
    "accept",
    "decline",
    "click",
    "fill",
    "type",
    "press",
    "drag",
    "hover",
    "navigate",
    "upsert",
    "increment",
    "decrement",
    "react",
    "vote",
    "reply",
    "comment",
    "share",
    "transition",
    "link",
    "attach",
    "detach",
];

/// Verbs of tools that run what they are given (a command, code, a
/// query), read in tool names only: such a tool may change anything.
const COMMAND_TOOL_VERBS: &[&str] = &[
    "run", "exec", "execute", "eval", "evaluate", "invoke", "spawn", "shell",
];

/// The stems of [`COMMAND_TOOL_VERBS`].
pub(super) static COMMAND_TOOL_STEMS: LazyLock<HashSet<String>> =
    LazyLock::new(|| stems_of(COMMAND_TOOL_VERBS));

/// The stems of [`CHANGING_TOOL_VERBS`].
static CHANGING_TOOL_STEMS: LazyLock<HashSet<String>> =
    LazyLock::new(|| stems_of(CHANGING_TOOL_VERBS));

/// Whether the request's main clause, as its
/// [`opening_words`](crate::select::signals::intent::opening_words),
/// opens with a verb that changes state in tools' names, for a change to
/// something there ("set the status", not "set up a new server" or "set a
/// new alarm").
pub fn opens_with_tool_verb(words: &[String]) -> bool {
    words.first().is_some_and(|w| is_changing_tool_verb(w))
        && words.get(1).is_none_or(|next| next != "up")
        && !reads_something_new(words.get(1..).unwrap_or_default())
}

pub(super) fn is_changing_tool_verb(word: &str) -> bool {
    has_stem(&CHANGING_TOOL_STEMS, word)
}
