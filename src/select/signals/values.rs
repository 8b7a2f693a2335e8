//! Values a request carries, and the tools that take them.
//!
//! A request often holds the value it wants a tool to work on: a web
//! address, a file name, a time zone, a commit hash. Such a value says more
//! about which tool is meant than the words around it: "open this website
//! and summarize it: https://www.python.org" wants the tool that takes a
//! `url`, whatever its verb; "dump config.yaml for me" wants one that takes
//! a `path`, not the one whose description says it dumps the environment.
//!
//! The kinds are read from the request's tokens by their shape, and from a
//! tool's input schema by its parameters' names and formats. Both readings
//! are general (no catalog's tool names): a parameter named `source_path`
//! or `files` takes a path whichever server declares it.

use serde_json::{Map, Value};

use crate::select::text::words::split_identifier;

/// A set of value kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Values(u16);

impl Values {
    pub const NONE: Values = Values(0);
    /// A web address (`https://...`, `www.example.com`).
    pub const URL: Values = Values(1);
    /// A file or directory: `src/main.py`, `config.yaml`, `/tmp`, `~/notes`.
    pub const PATH: Values = Values(1 << 1);
    /// An IANA time zone (`Asia/Kolkata`) or a zone abbreviation (`UTC`).
    pub const TIME_ZONE: Values = Values(1 << 2);
    /// A clock time (`16:45`, `9:30pm`).
    pub const TIME: Values = Values(1 << 3);
    /// A commit hash (`abc123`, `9f1c2d7e`).
    pub const REVISION: Values = Values(1 << 4);
    /// An e-mail address.
    pub const EMAIL: Values = Values(1 << 5);
    /// A place on this machine: a path from a root, the home or the
    /// current directory (`~/code/billing`, `/srv/app`), and the tools
    /// that take one (a local repository's `repo_path`, a file tool's
    /// `path`), not those whose `path` is inside a remote repository
    /// (they take its `owner` and `repo` too).
    pub const LOCAL_PATH: Values = Values(1 << 6);
    /// A tracker's issue key, a project's letters and a number (`PAY-341`,
    /// `OPS-77`), and the tools that take one (`issue_key`, an
    /// `identifier` whose description shows one).
    pub const ISSUE_KEY: Values = Values(1 << 7);
    /// A calendar day (`2025-03-12`, `March 12`, `the 3rd of May`,
    /// `tomorrow`, `friday`), and the tools that take one (`date`,
    /// `start_date_time`, `due`, `since`): a weather forecast for a day,
    /// not the current conditions; a calendar's view of a day, not its
    /// list of events.
    pub const DATE: Values = Values(1 << 8);
    /// A record's opaque id (`pu_7731`, `cust_0a12`, a UUID, the value
    /// after "id"), and the tools that take one (`id`, `project_id`,
    /// `issueId`): a record by its id, not the list it is in.
    pub const IDENTIFIER: Values = Values(1 << 9);

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many kinds the two sets share.
    pub fn shared(self, other: Values) -> u32 {
        (self.0 & other.0).count_ones()
    }

    pub const fn union(self, other: Values) -> Values {
        Values(self.0 | other.0)
    }

    pub const fn without(self, other: Values) -> Values {
        Values(self.0 & !other.0)
    }

    /// The kinds of the values written in a request.
    pub fn of_request(text: &str) -> Values {
        let tokens = text
            .split_whitespace()
            .map(|token| {
                token
                    .trim_start_matches(['(', '[', '{', '"', '\'', '`', '<'])
                    .trim_end_matches([
                        '.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'', '`', '>',
                    ])
            })
            .filter(|token| !token.is_empty())
            .fold(Values::NONE, |kinds, token| {
                kinds.union(kind_of_token(token))
            });
        tokens.union(kinds_of_words(text))
    }

    /// [`Values::of_parameters`], and an issue key for a tool about issues
    /// or tickets (by its name) that takes a bare `identifier` or `key`:
    /// Huly's `get_issue(project, identifier)`.
    pub fn of_tool(name: &str, properties: Option<&Map<String, Value>>) -> Values {
        let kinds = Values::of_parameters(properties);
        let words = split_identifier(name).to_lowercase();
        let about_issues = words
            .split_whitespace()
            .any(|w| matches!(w, "issue" | "issues" | "ticket" | "tickets"));
        let takes_bare_key = properties.is_some_and(|p| {
            ["identifier", "key", "id_or_key", "issue_id_or_key"]
                .iter()
                .any(|name| p.contains_key(*name))
        });
        if about_issues && takes_bare_key {
            kinds.union(Values::ISSUE_KEY)
        } else {
            kinds
        }
    }

    /// The kinds the tool's parameters take, from their names and formats
    /// (`properties` of its input schema), one level into an object or an
    /// array of objects (`{"options": {"outputPath": ...}}`).
    pub fn of_parameters(properties: Option<&Map<String, Value>>) -> Values {
        let Some(properties) = properties else {
            return Values::NONE;
        };
        let remote_repository = properties.contains_key("owner")
            && ["repo", "repository", "repo_name"]
                .iter()
                .any(|name| properties.contains_key(*name));
        let kinds = properties
            .iter()
            .fold(Values::NONE, |kinds, (name, schema)| {
                let nested = schema
                    .get("properties")
                    .or_else(|| schema.pointer("/items/properties"))
                    .and_then(Value::as_object)
                    .map_or(Values::NONE, |inner| {
                        inner.iter().fold(Values::NONE, |kinds, (name, schema)| {
                            kinds.union(kind_of_parameter(name, schema))
                        })
                    });
                kinds.union(kind_of_parameter(name, schema)).union(nested)
            });
        if remote_repository {
            kinds.without(Values::LOCAL_PATH)
        } else {
            kinds
        }
    }
}

/// Zone abbreviations common enough in requests to mean a time zone.
const ZONE_ABBREVIATIONS: &[&str] = &[
    "UTC", "GMT", "CET", "CEST", "EET", "EEST", "WET", "BST", "IST", "JST", "KST", "AEST", "AEDT",
    "EST", "EDT", "CST", "CDT", "MST", "MDT", "PST", "PDT",
];

/// Endings that make `name.ending` a web address rather than a file name.
const WEB_ENDINGS: &[&str] = &[
    "com", "org", "net", "io", "dev", "ai", "co", "edu", "gov", "app",
];

fn kind_of_token(token: &str) -> Values {
    let lower = token.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("www.") {
        return Values::URL;
    }
    if let Some((user, domain)) = token.split_once('@')
        && !user.is_empty()
        && domain.contains('.')
    {
        return Values::EMAIL;
    }
    if ZONE_ABBREVIATIONS.contains(&token) || is_zone_name(token) {
        return Values::TIME_ZONE;
    }
    if is_clock_time(&lower) {
        return Values::TIME;
    }
    if is_commit_hash(token) {
        return Values::REVISION;
    }
    if is_issue_key(token) {
        return Values::ISSUE_KEY;
    }
    // `example.com`, `docs.python.org/3/`: a host without a scheme.
    if is_web_name(&lower) && (token.contains('/') || is_path(token)) {
        return Values::URL;
    }
    if is_path(token) {
        return if is_rooted(token) {
            Values::PATH.union(Values::LOCAL_PATH)
        } else {
            Values::PATH
        };
    }
    Values::NONE
}

/// `pu_7731`, `rm_2025h2`, `cust_0a12`: a short prefix, an underscore and
/// an alphanumeric tail holding a digit.
fn is_prefixed_id(word: &str) -> bool {
    word.split_once('_').is_some_and(|(prefix, tail)| {
        (1..=6).contains(&prefix.len())
            && prefix.chars().all(|c| c.is_ascii_lowercase())
            && !tail.is_empty()
            && tail.chars().all(|c| c.is_ascii_alphanumeric())
            && tail.chars().any(|c| c.is_ascii_digit())
    })
}

/// `3b9e8d12-4c1a-4f0e-9a77-2d5e6c1b8f00`: five groups of hex digits.
fn is_uuid(word: &str) -> bool {
    let groups: Vec<&str> = word.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Words that name a day on their own.
const DAY_WORDS: &[&str] = &[
    "today",
    "tonight",
    "tomorrow",
    "tmrw",
    "yesterday",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Month names and their usual abbreviations; a day only beside a number
/// ("March 12", "12th of Mar"), so "may" as a verb is no date.
const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

/// The kinds read from a word and its neighbours rather than from one
/// token: a calendar day (a numeric date, a day's own word, a month beside
/// a day's number) and a record's id (a token shaped like one, or a value
/// with a digit right after the word "id").
fn kinds_of_words(text: &str) -> Values {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| {
            word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
                .to_lowercase()
        })
        .filter(|word| !word.is_empty())
        .collect();
    let is_month = |at: usize| words.get(at).is_some_and(|w| MONTHS.contains(&w.as_str()));
    let is_day_number = |at: usize| words.get(at).is_some_and(|w| is_day_number(w));
    let names_a_day = words.iter().enumerate().any(|(at, word)| {
        is_numeric_date(word)
            || DAY_WORDS.contains(&word.trim_end_matches("'s"))
            || (is_month(at)
                && (is_day_number(at + 1)
                    || (at > 0 && is_day_number(at - 1))
                    || (at > 1 && words[at - 1] == "of" && is_day_number(at - 2))))
    });
    let names_an_id = words.iter().enumerate().any(|(at, word)| {
        is_prefixed_id(word)
            || is_uuid(word)
            || (at > 0
                && matches!(words[at - 1].as_str(), "id" | "ids")
                && word.chars().any(|c| c.is_ascii_digit()))
    });
    let day = if names_a_day {
        Values::DATE
    } else {
        Values::NONE
    };
    day.union(if names_an_id {
        Values::IDENTIFIER
    } else {
        Values::NONE
    })
}

/// `12`, `3rd`, `21st`: a day of a month.
fn is_day_number(word: &str) -> bool {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    matches!(suffix, "" | "st" | "nd" | "rd" | "th")
        && (1..=2).contains(&digits.len())
        && digits
            .parse::<u32>()
            .is_ok_and(|day| (1..=31).contains(&day))
}

/// `2025-03-12`, `2023.4.17`, `3/14/2025`: a year, a month and a day.
fn is_numeric_date(word: &str) -> bool {
    let parts: Vec<&str> = word.split(['-', '.', '/']).collect();
    let numbers = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    numbers
        && ((parts[0].len() == 4 && parts[1].len() <= 2 && parts[2].len() <= 2)
            || (parts[0].len() <= 2 && parts[1].len() <= 2 && matches!(parts[2].len(), 2 | 4)))
}

/// `Area/City` as the time-zone database writes it: `Europe/Paris`,
/// `America/New_York`, `America/Argentina/Buenos_Aires`.
fn is_zone_name(token: &str) -> bool {
    let parts: Vec<&str> = token.split('/').collect();
    parts.len() >= 2
        && parts.iter().all(|part| {
            let mut chars = part.chars();
            chars.next().is_some_and(|c| c.is_ascii_uppercase())
                && part.len() >= 2
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphabetic() || c == '_' || c == '-')
                && part.chars().skip(1).any(|c| c.is_ascii_lowercase())
        })
}

/// `16:45`, `9:30`, `9:30pm`, `23:59:59`.
fn is_clock_time(lower: &str) -> bool {
    let digits = lower.trim_end_matches("am").trim_end_matches("pm");
    let parts: Vec<&str> = digits.split(':').collect();
    (2..=3).contains(&parts.len())
        && (1..=2).contains(&parts[0].len())
        && parts[1..].iter().all(|p| p.len() == 2)
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// Six to sixteen lower-case hex digits with at least one digit and one
/// letter, or forty: an abbreviated or full commit hash, not a word or a
/// number. Thirty-two are an id (Notion's pages, UUIDs without dashes).
fn is_commit_hash(token: &str) -> bool {
    ((6..=16).contains(&token.len()) || token.len() == 40)
        && token.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
        && token.chars().any(|c| c.is_ascii_digit())
        && token.chars().any(|c| c.is_ascii_alphabetic())
}

/// Names of standards written the way issue keys are (`UTF-8`,
/// `SHA-256`, `ISO-8601`): a version, not an issue.
const STANDARD_PREFIXES: &[&str] = &[
    "AES", "CVE", "ECMA", "ES", "GPT", "HTTP", "IEEE", "IPV", "ISO", "MD", "PEP", "RFC", "RSA",
    "SHA", "SSL", "TLS", "UTF", "WCAG",
];

/// Two to ten capitals or digits starting with a capital, a dash and a
/// number: `PAY-341`, `ACV2-642`; not a standard's name and version.
fn is_issue_key(token: &str) -> bool {
    let Some((project, number)) = token.split_once('-') else {
        return false;
    };
    (2..=10).contains(&project.len())
        && project.starts_with(|c: char| c.is_ascii_uppercase())
        && project
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && (1..=7).contains(&number.len())
        && number.chars().all(|c| c.is_ascii_digit())
        && !STANDARD_PREFIXES.contains(&project)
}

/// A file or directory: a name with an extension (`config.yaml`,
/// `.gitignore`), or a path that starts at a root, the home or the current
/// directory, or has a separator and ends in a name with an extension.
/// `feature/login` (a branch) and `and/or` are not paths.
fn is_path(token: &str) -> bool {
    if token.len() < 2 || token.contains("://") {
        return false;
    }
    if is_rooted(token) {
        return token
            .chars()
            .skip(1)
            .any(|c| c.is_alphanumeric() || c == '/');
    }
    let last = token.rsplit(['/', '\\']).next().unwrap_or(token);
    has_extension(last) || is_dotfile(last)
}

/// Starts at a root, the home or the current directory.
fn is_rooted(token: &str) -> bool {
    token.starts_with('/')
        || token.starts_with("~/")
        || token.starts_with("./")
        || token.starts_with("../")
        || token.starts_with('\\')
        || (token.len() > 2 && token.as_bytes()[1] == b':' && token.as_bytes()[2] == b'\\')
}

/// `.gitignore`, `.env`, `.bashrc`; not a CSS class such as `.login-btn`
/// (dotfiles rarely have a hyphen; class names mostly do).
fn is_dotfile(name: &str) -> bool {
    name.strip_prefix('.').is_some_and(|rest| {
        (2..=16).contains(&rest.len())
            && rest
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && rest.starts_with(|c: char| c.is_ascii_lowercase())
    })
}

/// File extensions longer than four letters that are common in requests.
const LONG_EXTENSIONS: &[&str] = &["ipynb", "proto", "scala", "swift", "svelte", "xhtml"];

/// `name.ext` with a short extension that starts with a letter (`main.rs`,
/// `archive.tar.gz`), not `e.g`, `v1.2` or a property such as
/// `document.title`.
fn has_extension(name: &str) -> bool {
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    let short = (2..=4).contains(&extension.len())
        && extension.starts_with(|c: char| c.is_ascii_alphabetic())
        && extension.chars().all(|c| c.is_ascii_alphanumeric());
    !stem.is_empty()
        && is_name(stem.trim_start_matches('.'))
        && (short || LONG_EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str()))
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `example.com`, `docs.python.org/3/`: a host name without a scheme.
fn is_web_name(lower: &str) -> bool {
    let host = lower.split('/').next().unwrap_or(lower);
    host.rsplit_once('.')
        .is_some_and(|(_, ending)| WEB_ENDINGS.contains(&ending))
}

fn kind_of_parameter(name: &str, schema: &Value) -> Values {
    let format = schema
        .get("format")
        .or_else(|| schema.pointer("/items/format"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    match format {
        "uri" | "url" | "iri" | "uri-reference" => return Values::URL,
        "email" | "idn-email" => return Values::EMAIL,
        "time" => return Values::TIME,
        "date" => return Values::DATE,
        "date-time" => return Values::DATE.union(Values::TIME),
        _ => {}
    }
    let words = split_identifier(name).to_lowercase();
    let words: Vec<&str> = words.split_whitespace().collect();
    let has = |wanted: &[&str]| words.iter().any(|w| wanted.contains(w));
    let shows_issue_key = || {
        schema
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|text| Values::of_request(text).shared(Values::ISSUE_KEY) > 0)
    };
    if (has(&["issue", "issues", "epic", "ticket"])
        && has(&["key", "keys", "identifier", "identifiers"]))
        || shows_issue_key()
    {
        return Values::ISSUE_KEY;
    }
    if has(&[
        "url", "urls", "uri", "uris", "link", "links", "href", "website", "host", "hostname",
        "domain", "endpoint",
    ]) {
        Values::URL
    } else if has(&["timezone", "tz", "zone"]) {
        Values::TIME_ZONE
    } else if has(&["email", "emails", "recipient", "recipients", "receiver"]) {
        Values::EMAIL
    } else if has(&["revision", "commit", "sha", "hash", "rev"]) {
        Values::REVISION
    } else if has(&["repo", "repository"]) {
        // A repository's location, not the file the request names: a local
        // one if it is a path (`repo_path`).
        if has(&["path", "dir", "directory", "folder", "root"]) {
            Values::LOCAL_PATH
        } else {
            Values::NONE
        }
    } else if has(&[
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "filenames",
        "filepath",
        "dir",
        "directory",
        "folder",
        "source",
        "destination",
    ]) {
        Values::PATH.union(Values::LOCAL_PATH)
    } else if has(&[
        "date", "dates", "datetime", "day", "due", "deadline", "since", "until",
    ]) {
        // `date`, `start_date_time`, `due`: a day, and the time of it
        // when the name says so.
        if has(&["time"]) {
            Values::DATE.union(Values::TIME)
        } else {
            Values::DATE
        }
    } else if has(&["time"]) {
        // `time`, `start_time`, `show_time`: a clock time.
        Values::TIME
    } else if has(&["id", "ids", "uuid"]) {
        Values::IDENTIFIER
    } else {
        Values::NONE
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_the_kinds_a_request_carries() {
        let cases = [
            (
                "open this website and summarize it: https://www.python.org",
                Values::URL,
            ),
            ("read docs.python.org/3/library for me", Values::URL),
            ("what does example.com say", Values::URL),
            ("dump config.yaml for me", Values::PATH),
            ("view the source of utils/helpers.js", Values::PATH),
            (
                "what's sitting in /tmp right now",
                Values::PATH.union(Values::LOCAL_PATH),
            ),
            (
                "show the last 10 commits in ~/code/billing",
                Values::PATH.union(Values::LOCAL_PATH),
            ),
            ("make a fresh file called .gitignore", Values::PATH),
            (
                "move 16:45 from Asia/Kolkata to America/New_York",
                Values::TIME.union(Values::TIME_ZONE),
            ),
            ("what time is it in UTC?", Values::TIME_ZONE),
            ("what did the commit abc123 change", Values::REVISION),
            ("mail bob@example.com the report", Values::EMAIL),
            ("move PAY-341 to In Review", Values::ISSUE_KEY),
            ("log 2h on OPS-77, then link ACV2-642.", Values::ISSUE_KEY),
            ("what's on my calendar on March 12, 2025?", Values::DATE),
            ("the forecast for Phoenix on 2023-04-14", Values::DATE),
            ("flights on the 12th of march 2023", Values::DATE),
            (
                "can you check the weather next Tuesday please",
                Values::DATE,
            ),
            ("push the due date to 3/14/2025", Values::DATE),
            (
                "dentist appt June 2 10:30",
                Values::DATE.union(Values::TIME),
            ),
            ("open project update pu_7731 in linear", Values::IDENTIFIER),
            (
                "pull up project 3b9e8d12-4c1a-4f0e-9a77-2d5e6c1b8f00",
                Values::IDENTIFIER,
            ),
            ("is it in stock? product id 12345XYZ", Values::IDENTIFIER),
        ];
        for (request, kinds) in cases {
            assert_eq!(Values::of_request(request), kinds, "{request}");
        }
    }

    #[test]
    fn words_branches_and_numbers_are_no_values() {
        for request in [
            "move me over to the feature/login branch",
            "e.g. list the files, and/or the folders",
            "click the element with the selector .login-btn",
            "run the JavaScript code 'document.title' in the console",
            "bump the version to 1.2.3",
            "add a decade of coffee facts",
            "what is 12:5 in ratio terms",
            "save it as UTF-8 and hash it with SHA-256",
            "dates in ISO-8601, ids like CVE-2024-3094",
            "the pay-341 ticket",
            "you may 2x the limit",
            "march 40 steps forward",
            "the top 10 results of the day",
            "rename snake_case names to camelCase",
            "what is the id of my account",
        ] {
            assert_eq!(Values::of_request(request), Values::NONE, "{request}");
        }
    }

    #[test]
    fn reads_the_kinds_a_tool_takes_from_its_parameters() {
        let properties = |value: Value| value.as_object().cloned().unwrap();
        let fetch = properties(json!({"url": {"type": "string"}, "max_length": {}}));
        assert_eq!(Values::of_parameters(Some(&fetch)), Values::URL);
        let link = properties(json!({"target": {"type": "string", "format": "uri"}}));
        assert_eq!(Values::of_parameters(Some(&link)), Values::URL);
        let local_file = Values::PATH.union(Values::LOCAL_PATH);
        let git = properties(json!({"repo_path": {}, "files": {"type": "array"}}));
        assert_eq!(Values::of_parameters(Some(&git)), local_file);
        let show = properties(json!({"repo_path": {}, "revision": {}}));
        assert_eq!(
            Values::of_parameters(Some(&show)),
            Values::REVISION.union(Values::LOCAL_PATH)
        );
        // A file inside a remote repository is no place on this machine.
        let remote = properties(json!({"owner": {}, "repo": {}, "path": {}}));
        assert_eq!(Values::of_parameters(Some(&remote)), Values::PATH);
        let remote_repository = properties(json!({"repo": {}}));
        assert_eq!(
            Values::of_parameters(Some(&remote_repository)),
            Values::NONE
        );
        let convert = properties(json!({
            "source_timezone": {}, "time": {}, "target_timezone": {}
        }));
        assert_eq!(
            Values::of_parameters(Some(&convert)),
            Values::TIME_ZONE.union(Values::TIME)
        );
        let codegen = properties(json!({"options": {
            "type": "object", "properties": {"outputPath": {}, "testNamePrefix": {}}
        }}));
        assert_eq!(Values::of_parameters(Some(&codegen)), local_file);
        let alarm = properties(json!({"alarm_time": {}, "label": {}}));
        assert_eq!(Values::of_parameters(Some(&alarm)), Values::TIME);
        let database = properties(json!({"host": {}, "port": {}}));
        assert_eq!(Values::of_parameters(Some(&database)), Values::URL);
        let moved = properties(json!({"source": {}, "destination": {}}));
        assert_eq!(Values::of_parameters(Some(&moved)), local_file);
        assert_eq!(Values::of_parameters(None), Values::NONE);
        let jira = properties(json!({"issue_key": {}, "comment": {}}));
        assert_eq!(Values::of_parameters(Some(&jira)), Values::ISSUE_KEY);
        let tracker = properties(json!({"identifier": {
            "type": "string", "description": "Within the project (e.g., 'PROJ-123')"
        }}));
        assert_eq!(Values::of_parameters(Some(&tracker)), Values::ISSUE_KEY);
        let github = properties(json!({"issue_number": {}, "owner": {}, "repo": {}}));
        assert_eq!(Values::of_parameters(Some(&github)), Values::NONE);
        let huly = properties(json!({"project": {}, "identifier": {}}));
        assert_eq!(
            Values::of_tool("huly__get_issue", Some(&huly)),
            Values::ISSUE_KEY
        );
        assert_eq!(Values::of_tool("get_document", Some(&huly)), Values::NONE);
        let weather = properties(json!({"city": {}, "date": {}}));
        assert_eq!(Values::of_parameters(Some(&weather)), Values::DATE);
        let view = properties(json!({"startDateTime": {}, "endDateTime": {}}));
        assert_eq!(
            Values::of_parameters(Some(&view)),
            Values::DATE.union(Values::TIME)
        );
        let due = properties(json!({"when": {"type": "string", "format": "date"}}));
        assert_eq!(Values::of_parameters(Some(&due)), Values::DATE);
        let record = properties(json!({"projectId": {}, "name": {}}));
        assert_eq!(Values::of_parameters(Some(&record)), Values::IDENTIFIER);
        let listing = properties(json!({"limit": {}, "cursor": {}}));
        assert_eq!(Values::of_parameters(Some(&listing)), Values::NONE);
        let sum = properties(json!({"a": {}, "b": {}}));
        assert_eq!(Values::of_parameters(Some(&sum)), Values::NONE);
    }
}
