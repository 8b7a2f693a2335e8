//! What a request asks to do, and what a tool does: classes of verbs.
//!
//! People rarely ask for a tool in its own verb: "store in the knowledge
//! graph that Alice is a person" wants `create_entities`, "what changed in
//! my repo?" wants `git_status`. Words are grouped into a few classes of
//! action (store / save / add / record are all [`Actions::CREATE`]; "what
//! changed" is [`Actions::STATUS`] and [`Actions::COMPARE`]), read from the
//! request and from a tool's name and the first word of its description.
//! The ranking then favours tools whose action the request asks for and,
//! above all, keeps a destructive tool from being recommended for a request
//! that does not ask for what it destroys ([`Actions::licenses`]).
//!
//! The classes are general English, not a list of any catalog's tools.

use std::sync::LazyLock;

use super::intent;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// A set of action classes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Actions(u32);

impl Actions {
    pub const NONE: Actions = Actions(0);
    pub const CREATE: Actions = Actions(1);
    pub const READ: Actions = Actions(1 << 1);
    pub const LIST: Actions = Actions(1 << 2);
    pub const SEARCH: Actions = Actions(1 << 3);
    pub const UPDATE: Actions = Actions(1 << 4);
    pub const WRITE: Actions = Actions(1 << 5);
    pub const DELETE: Actions = Actions(1 << 6);
    pub const RESET: Actions = Actions(1 << 7);
    pub const MOVE: Actions = Actions(1 << 8);
    pub const SEND: Actions = Actions(1 << 9);
    pub const FETCH: Actions = Actions(1 << 10);
    pub const STATUS: Actions = Actions(1 << 11);
    pub const COMPARE: Actions = Actions(1 << 12);
    pub const HISTORY: Actions = Actions(1 << 13);
    pub const CONVERT: Actions = Actions(1 << 14);
    pub const RUN: Actions = Actions(1 << 15);
    pub const TOGGLE: Actions = Actions(1 << 16);
    pub const COMPRESS: Actions = Actions(1 << 17);
    /// Commits, checks out, switches, pushes, merges: a repository's
    /// own state-changing verbs.
    pub const COMMIT: Actions = Actions(1 << 18);
    /// Archives an issue, a channel, a page: a change of state of its
    /// own, so that "not archive" rules out no update.
    pub const ARCHIVE: Actions = Actions(1 << 19);
    /// Brings back what was archived or deleted: "restore the archived
    /// release" asks for the unarchiving tool, not the archiving one.
    pub const RESTORE: Actions = Actions(1 << 20);

    /// Actions that change state: a tool doing one of them is not what a
    /// question asks for ([`is_question`]).
    pub const CHANGING: Actions = Actions(
        Self::CREATE.0
            | Self::UPDATE.0
            | Self::WRITE.0
            | Self::DELETE.0
            | Self::RESET.0
            | Self::MOVE.0
            | Self::SEND.0
            | Self::TOGGLE.0
            | Self::COMMIT.0
            | Self::ARCHIVE.0
            | Self::RESTORE.0,
    );

    /// What a destructive tool without a recognisable verb destroys.
    const DESTROYING: Actions = Actions(Self::DELETE.0 | Self::RESET.0 | Self::WRITE.0);

    pub const fn union(self, other: Actions) -> Actions {
        Actions(self.0 | other.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn intersects(self, other: Actions) -> bool {
        self.0 & other.0 != 0
    }

    /// How many classes the two sets share.
    pub fn shared(self, other: Actions) -> u32 {
        (self.0 & other.0).count_ones()
    }

    /// Whether a request asking for `self` asks for what a destructive
    /// tool doing `tool` does. A destructive tool whose name and
    /// description name no action needs a request that deletes, resets or
    /// overwrites.
    pub fn licenses(self, tool: Actions) -> bool {
        let needed = if tool.is_empty() {
            Self::DESTROYING
        } else {
            tool
        };
        self.intersects(needed)
    }

    /// The actions named anywhere in a request.
    ///
    /// The repository verbs ([`Actions::COMMIT`]) count only when the
    /// request opens with one (an imperative): elsewhere "commit" is as
    /// often the noun ("include the new file in the next commit" wants
    /// `git_add`), and counting it sent such requests to `git_commit`.
    ///
    /// Words under a negation ask for nothing ([`intent::split`]): "don't
    /// delete it, just show it" does not ask to delete.
    pub fn of_request(text: &str) -> Actions {
        Self::of_split(text, &intent::split(text)).all
    }

    /// The actions a request rules out ("don't commit", "without
    /// deleting"), the repository verbs included: a tool doing one of them
    /// is never its ready call.
    pub fn negated_in_request(text: &str) -> Actions {
        Self::of_split(text, &intent::split(text)).negated
    }

    /// The request's main action (its first word that names one: the
    /// imperative of "list all entities you have stored", the question of
    /// "what changed in my repo") and every action it names.
    pub fn of_request_main(text: &str) -> (Actions, Actions) {
        let read = Self::of_split(text, &intent::split(text));
        (read.main, read.all)
    }

    /// What a request asks and rules out, from its [`intent::split`] done
    /// once (a select reads all three).
    pub fn of_split(text: &str, split: &intent::Split) -> RequestActions {
        let repository_verb = opens_with_repository_verb(text);
        let mut read = RequestActions::default();
        let asked: Vec<String> = words(&split.asked).collect();
        for (at, word) in asked.iter().enumerate() {
            let class = if repository_verb {
                of_word(word)
            } else {
                of_word(word).without(Actions::COMMIT)
            };
            let class = if reads_something_new(&asked[at + 1..]) && class.intersects(Actions::READ)
            {
                // "open a new issue", "get a new API key": made, not read.
                Actions::CREATE
            } else if word == "bring" && asked.get(at + 1).is_some_and(|next| next == "back") {
                Actions::RESTORE
            } else {
                class
            };
            if read.main.is_empty() {
                read.main = class;
            }
            read.all = read.all.union(class);
        }
        read.negated =
            words(&split.negated).fold(Actions::NONE, |acc, word| acc.union(of_word(&word)));
        read
    }

    /// A tool's main action: the class of the first word of its name that
    /// names one (`git_diff_unstaged` compares, `git_create_branch`
    /// creates). Whether a tool changes state is read from this, not from
    /// every word: "unstaged" in a diff's name does not make it a reset.
    ///
    /// Only the name's last segment is read (`store.find_nearby` finds;
    /// `store` there is the namespace), and its first verb ends the search:
    /// in `calculate_entropy_change` "change" is the object of a verb that
    /// changes nothing. A description that opens with a verb leaving state
    /// alone overrules a name whose verb is also a noun
    /// (`video_games.store_price`: "Fetches the selling price ...").
    pub fn main_of_tool(name: &str, description: &str) -> Actions {
        Self::main_of_tool_with(name, description, true)
    }

    /// [`Actions::main_of_tool`] with the action classes alone (`false`),
    /// without the verbs read in tool names only: what orders a ranking.
    /// Counting those verbs there too held MetaTool's tools below harmless
    /// ones for questions, and its top-1 fell under the model alone's.
    pub fn main_of_tool_with(name: &str, description: &str, tool_verbs: bool) -> Actions {
        let segment = name.rsplit(['.', '/', ':']).next().unwrap_or(name);
        let segment = segment.rsplit("__").next().unwrap_or(segment);
        let mut main = Actions::NONE;
        let named: Vec<String> = words(segment).collect();
        for (at, word) in named.iter().enumerate() {
            // `browser_evaluate`, `exec_sql`: a tool that runs what it is
            // given may do anything.
            if tool_verbs && has_stem(&COMMAND_TOOL_STEMS, word) {
                main = Actions::RUN;
                break;
            }
            if is_neutral_verb(word) {
                break;
            }
            let class = of_word(word);
            if !class.is_empty() {
                main = class;
                break;
            }
            // A noun as often as a verb (`tag_list`, `order_status`): a
            // later word that changes nothing says what the tool does.
            let read_later = || {
                named[at + 1..].iter().any(|later| {
                    let class = of_word(later);
                    !class.is_empty() && !class.intersects(Actions::CHANGING)
                })
            };
            if tool_verbs && is_changing_tool_verb(word) && !read_later() {
                main = Actions::UPDATE;
                break;
            }
        }
        if main.intersects(Actions::CHANGING)
            && let Some(opener) = words(description).next()
        {
            let class = of_word(&opener);
            let leaves_state = !class.is_empty() && !class.intersects(Actions::CHANGING);
            if leaves_state || is_neutral_verb(&opener) {
                return class;
            }
        }
        main
    }

    /// These actions without `other`'s.
    pub fn without(self, other: Actions) -> Actions {
        Actions(self.0 & !other.0)
    }

    /// The actions both sets hold.
    pub fn intersection(self, other: Actions) -> Actions {
        Actions(self.0 & other.0)
    }

    /// A tool's actions: the classes of the words of its name (its verb and,
    /// often, the noun that says what it does, like `status` or `log`) and
    /// of its description's first word ("Shows the working tree status").
    ///
    /// A participle in a name describes its object, not what the tool does:
    /// `git_diff_unstaged` compares, it does not unstage.
    pub fn of_tool(name: &str, description: &str) -> Actions {
        let named = words(name)
            .filter(|word| !(word.len() > 4 && word.ends_with("ed")))
            .fold(Actions::NONE, |acc, word| acc.union(of_word(&word)));
        let described = words(description)
            .next()
            .map_or(Actions::NONE, |w| of_word(&w));
        named.union(described)
    }
}

/// What a request asks to do and what it rules out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestActions {
    /// Its first action word's classes.
    pub main: Actions,
    /// Every action it asks for (not under a negation).
    pub all: Actions,
    /// The actions under a negation, the repository verbs included.
    pub negated: Actions,
}

/// Whether an imperative opens with a repository verb ("commit my staged
/// changes", "please push the branch"), or makes one as its object ("make
/// a commit of what I staged", "create a commit saying ..."): there
/// "commit" is what is asked, not the noun of "include it in the next
/// commit".
fn opens_with_repository_verb(text: &str) -> bool {
    let words = intent::opening_words(text);
    let class = |at: usize| words.get(at).map_or(Actions::NONE, |w| of_word(w));
    class(0).intersects(Actions::COMMIT)
        || (matches!(
            words.first().map(String::as_str),
            Some("make" | "create" | "do")
        ) && matches!(
            words.get(1).map(String::as_str),
            Some("a" | "an" | "new" | "the")
        ) && (class(2).intersects(Actions::COMMIT) || class(3).intersects(Actions::COMMIT)))
}

/// Lower-case words of a text, split on anything but letters and digits and
/// on camelCase humps (a tool's name read as words, here and in
/// `select::servers`).
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .flat_map(|piece| {
            let mut parts = Vec::new();
            let mut start = 0;
            let mut previous: Option<char> = None;
            for (index, c) in piece.char_indices() {
                if previous.is_some_and(char::is_lowercase) && c.is_uppercase() {
                    parts.push(&piece[start..index]);
                    start = index;
                }
                previous = Some(c);
            }
            parts.push(&piece[start..]);
            parts
        })
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// Word forms with a class of their own: "what changed" asks for the
/// state of things, "change the port" for an update.
const EXACT: &[(&str, Actions)] = &[
    ("changed", Actions::STATUS.union(Actions::COMPARE)),
    // "stage the file" adds it; "staged" and "staging" name what is there.
    ("stage", Actions::CREATE),
    ("changes", Actions::STATUS.union(Actions::COMPARE)),
    ("modified", Actions::STATUS.union(Actions::COMPARE)),
    ("commits", Actions::HISTORY),
];

/// Base forms of each class; inflections meet them through the stemmer.
const CLASSES: &[(Actions, &[&str])] = &[
    (
        Actions::CREATE,
        &[
            "create", "add", "store", "save", "record", "remember", "insert", "register", "append",
            "memorize", "memorise",
        ],
    ),
    (
        Actions::READ,
        &[
            "read", "get", "show", "open", "view", "display", "see", "print", "retrieve", "load",
            "inspect", "cat", "contents", "dump",
        ],
    ),
    (Actions::LIST, &["list", "enumerate", "ls", "listing"]),
    (
        Actions::SEARCH,
        &[
            "search", "find", "lookup", "locate", "grep", "query", "look",
        ],
    ),
    (
        Actions::UPDATE,
        &[
            "update", "edit", "modify", "change", "patch", "amend", "tweak", "adjust", "replace",
        ],
    ),
    // Archiving an issue, a channel or a page changes its state (and
    // "archive these logs" compresses them, below): when "archive" was
    // compressing only, "archive milestone ms_12" asked for no change and
    // every archiving tool was held below the first harmless one.
    (Actions::ARCHIVE, &["archive"]),
    (
        Actions::RESTORE,
        &["unarchive", "restore", "undelete", "reinstate", "revive"],
    ),
    // "Dump config.yaml for me" asks to see it: dumping is reading out.
    // "Create a file with ..." writes one.
    (Actions::WRITE, &["write", "overwrite", "save", "create"]),
    (
        Actions::DELETE,
        &[
            "delete", "remove", "erase", "drop", "purge", "wipe", "destroy", "discard", "forget",
            "unlink", "rm", "trash", "clear", "revoke",
        ],
    ),
    (
        Actions::RESET,
        &["reset", "unstage", "revert", "undo", "rollback"],
    ),
    (Actions::MOVE, &["move", "rename", "relocate", "mv"]),
    (Actions::SEND, &["send", "post", "email", "notify"]),
    (
        Actions::FETCH,
        // A web address in a request asks for what is behind it.
        &[
            "fetch", "download", "scrape", "crawl", "visit", "url", "webpage", "http", "https",
            "www",
        ],
    ),
    (
        Actions::STATUS,
        &["status", "state", "pending", "uncommitted", "dirty"],
    ),
    (
        Actions::COMPARE,
        &["diff", "compare", "difference", "differ"],
    ),
    (Actions::HISTORY, &["history", "log"]),
    (Actions::CONVERT, &["convert", "translate", "transform"]),
    (Actions::RUN, &["run", "execute", "trigger", "launch"]),
    (Actions::TOGGLE, &["toggle", "enable", "disable"]),
    (Actions::COMPRESS, &["compress", "zip", "gzip", "archive"]),
    (
        Actions::COMMIT,
        &["commit", "checkout", "switch", "push", "merge", "rebase"],
    ),
];

/// First words that make a request a question: it asks to be told
/// something, not to have something done.
const QUESTION_WORDS: &[&str] = &[
    "what", "whats", "which", "who", "whose", "whom", "where", "when", "why", "is", "are", "was",
    "were", "has", "have", "does", "did", "show", "tell", "any",
];

/// First words of a request that asks for something to be done, even
/// when it ends with a question mark ("can you commit this?").
const REQUEST_WORDS: &[&str] = &[
    "can", "could", "would", "will", "please", "should", "shall", "may", "let", "lets",
];

/// Verbs that answer without changing anything and have no class of
/// their own: in a tool's name they are its verb, so a later word that
/// names an action is its object.
const NEUTRAL_VERBS: &[&str] = &[
    "calculate",
    "compute",
    "estimate",
    "predict",
    "count",
    "measure",
    "evaluate",
    "analyze",
    "analyse",
    "check",
    "recommend",
    "suggest",
    "summarize",
    "summarise",
    "validate",
    "verify",
    "detect",
    "classify",
    "identify",
    "determine",
    "solve",
    "generate",
];

/// The stems of [`NEUTRAL_VERBS`], stemmed once: every tool name of a
/// catalog is read against them when the index is built.
static NEUTRAL_STEMS: LazyLock<HashSet<String>> = LazyLock::new(|| stems_of(NEUTRAL_VERBS));

fn is_neutral_verb(word: &str) -> bool {
    has_stem(&NEUTRAL_STEMS, word)
}

/// Verbs by which a speaker says they want something done ("I want to
/// order ...", "I need a QR code", "I'd like to ..."): such a request asks
/// to act even when a question follows it.
const WISH_VERBS: &[&str] = &["want", "wanna", "need", "wish", "intend", "plan"];

/// What a wish to be told is about: "I want to know ..." still asks.
const LEARNING_VERBS: &[&str] = &[
    "know",
    "understand",
    "learn",
    "find",
    "see",
    "check",
    "ask",
    "hear",
    "confirm",
    "figure",
];

/// Whether the request states a wish to have something done: "I" or "we",
/// at most two helper words, a wish verb (or "like" after "would" / "'d"),
/// and no learning verb right after it.
fn states_wish_to_act(text: &str) -> bool {
    let words: Vec<String> = words(text).collect();
    for (start, word) in words.iter().enumerate() {
        if word != "i" && word != "we" {
            continue;
        }
        let mut conditional = false;
        for (offset, next) in words.iter().enumerate().skip(start + 1).take(3) {
            let next = next.as_str();
            let wish = WISH_VERBS.contains(&next) || (next == "like" && conditional);
            if wish {
                let after: Vec<&str> = words
                    .iter()
                    .skip(offset + 1)
                    .take(2)
                    .map(String::as_str)
                    .collect();
                let object = if after.first() == Some(&"to") {
                    after.get(1).copied()
                } else {
                    after.first().copied()
                };
                if object.is_some_and(|o| LEARNING_VERBS.contains(&o)) {
                    break;
                }
                return true;
            }
            if matches!(next, "would" | "d") {
                conditional = true;
            } else if !matches!(next, "really" | "also" | "just" | "still" | "do") {
                break;
            }
        }
    }
    false
}

/// Whether a request is a question ("what changed in my repo?", "which
/// branches exist", "show me the log", "is there a file named x"): it
/// starts with a question word, or ends with a question mark without
/// opening as a polite request ("can you ...", "please ...").
///
/// A modal opens a request only with someone to act after it ("can you",
/// "could we", "may I"); before anything else it asks what would happen
/// ("would deleting key x break anything?", "will it drop the table?").
pub fn is_question(text: &str) -> bool {
    let Some(first) = words(text).next() else {
        return false;
    };
    if QUESTION_WORDS.contains(&first.as_str()) {
        return true;
    }
    // "we disbanded the HW team - can you archive it?": the request to act
    // follows the last dash.
    let after_dash = [text.rfind(['\u{2014}', '\u{2013}']), text.rfind(" - ")]
        .into_iter()
        .flatten()
        .max()
        .map(|at| &text[at..]);
    text.trim_end().ends_with('?')
        && !asks_someone_to_act(text)
        && !after_dash.is_some_and(asks_someone_to_act)
        && !states_wish_to_act(text)
}

/// Whether `text` opens by asking someone to act: "please ...", "can you
/// ...", "could we ...", not "can it ...".
fn asks_someone_to_act(text: &str) -> bool {
    let mut opening = words(text);
    let Some(first) = opening.next() else {
        return false;
    };
    REQUEST_WORDS.contains(&first.as_str())
        && (!MODALS.contains(&first.as_str())
            || opening
                .next()
                .is_some_and(|second| ACTORS.contains(&second.as_str())))
}

/// Whether a request asks to be told rather than to have something done:
/// it (or `asked`, its words no negation covers: [`intent::split`]) is a
/// question or a lookup, or every sentence of it that asks anything is.
pub fn asks_to_be_told(text: &str, asked: &str) -> bool {
    is_question(text)
        || intent::is_lookup(text)
        || is_question(asked)
        || intent::is_lookup(asked)
        || every_sentence_asks_to_be_told(text)
}

/// Whether a request of several sentences asks only to be told: every
/// sentence that asks for anything (not wholly negated or put off) is a
/// question or a lookup. "Thinking about deleting the 'legacy' label.
/// Would any saved views break? Just show me our saved views for now."
pub fn every_sentence_asks_to_be_told(text: &str) -> bool {
    let sentences = intent::sentences(text);
    if sentences.len() < 2 {
        return false;
    }
    let mut asking = sentences.into_iter().filter_map(|sentence| {
        let split = intent::split(sentence);
        (!split.asked.trim().is_empty()).then_some((sentence, split.asked))
    });
    let mut any = false;
    let all = asking.all(|(sentence, asked)| {
        any = true;
        is_question(sentence)
            || intent::is_lookup(sentence)
            || is_question(&asked)
            || intent::is_lookup(&asked)
    });
    any && all
}

/// Whether a request states a wish to act, then asks a question in a
/// sentence of its own: "I want to delete the STRIPE_KEY secret - which
/// secrets does the worker have right now?", "I'd like to order a
/// sculpture. What materials are there?". It may ask for either; a request
/// to act at its end ("... Can you do it?") is no question.
pub fn wish_then_question(text: &str) -> bool {
    match intent::sentences(text).split_last() {
        Some((last, earlier)) => {
            is_question(last) && earlier.iter().any(|sentence| states_wish_to_act(sentence))
        }
        None => false,
    }
}

/// The modals of [`REQUEST_WORDS`]: they ask for an act only with the one
/// who is to act after them.
const MODALS: &[&str] = &["can", "could", "would", "will", "should", "shall", "may"];

/// Who a modal's request asks to act ("can you", "could u", "may I", "would
/// someone").
const ACTORS: &[&str] = &[
    "you", "u", "ya", "yall", "i", "we", "someone", "somebody", "anyone", "anybody", "ye",
    "please", "pls", "plz",
];

/// Words that open a noun phrase or a statement rather than an
/// imperative ("the diff of my branch", "my notes", "I deleted it").
const NOT_VERBS: &[&str] = &[
    "the", "a", "an", "my", "our", "your", "his", "her", "their", "its", "this", "that", "these",
    "those", "all", "some", "every", "each", "no", "i", "im", "ive", "we", "it", "there", "here",
    "hello", "hey", "thanks", "thank",
];

/// Whether a request opens with a verb of no action class, in the
/// imperative ("star octo/app", "fork it", "land PR 12", "jot down that
/// ..."), or states a wish to act ("I want to order ..."): it asks for
/// something to be done, in words the classes do not know. `asked` is the part of the request no negation covers
/// ([`intent::split`]); a question or lookup opens with a word the test
/// leaves out.
pub fn opens_with_unclassified_verb(asked: &str) -> bool {
    let Some(word) = intent::opening_word(asked) else {
        return false;
    };
    // "I want to order a sculpture", "we need a new repo".
    if states_wish_to_act(asked) {
        return true;
    }
    word.chars().next().is_some_and(char::is_alphabetic)
        && of_word(&word).is_empty()
        && ![QUESTION_WORDS, REQUEST_WORDS, NOT_VERBS]
            .iter()
            .any(|list| list.contains(&word.as_str()))
        && !is_neutral_verb(&word)
        && !is_question(asked)
        && !intent::is_lookup(asked)
}

/// Stem -> classes, built once.
static BY_STEM: LazyLock<HashMap<String, Actions>> = LazyLock::new(|| {
    let mut map: HashMap<String, Actions> = HashMap::default();
    for (class, words) in CLASSES {
        for word in *words {
            let entry = map.entry(STEMMER.stem(word).into_owned()).or_default();
            *entry = entry.union(*class);
        }
    }
    map
});

fn of_word(word: &str) -> Actions {
    if let Some((_, class)) = EXACT.iter().find(|(form, _)| *form == word) {
        return *class;
    }
    BY_STEM
        .get(STEMMER.stem(word).as_ref())
        .copied()
        .unwrap_or_default()
}

mod tool_verbs;
pub use tool_verbs::opens_with_tool_verb;
use tool_verbs::{
    COMMAND_TOOL_STEMS, STEMMER, has_stem, is_changing_tool_verb, reads_something_new, stems_of,
};

#[cfg(test)]
mod tests;
