//! What in a request points at one of a catalog's servers: a word that
//! names it ("in notion", "on jira", what its examples file says users call
//! it), or a word only its own tools use ("outlook", "namespace", "pod"
//! beside servers that never say them).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::catalog::Catalog;
use crate::select::signals::action;

/// Words too generic to name a server, though server names carry them.
const GENERIC: &[&str] = &["server", "mcp", "tools", "tool", "api", "the", "local"];

/// A catalog's servers and the words that point at each.
#[derive(Debug, Default)]
pub(super) struct ServerWords {
    /// Per mode: its server, as an index into the catalog's servers
    /// (`None` for zenmode's own modes).
    pub(super) of_mode: Vec<Option<u32>>,
    /// Words that name a server (its name, what users call it: "jira" for
    /// Atlassian's), lower-cased, to the servers they name.
    names: HashMap<String, Vec<u32>>,
    /// Terms (vocabulary ids) only one server's tools use, in two of them
    /// or more, to that server.
    vocabulary: HashMap<u32, u32>,
}

impl ServerWords {
    /// `mode_terms`: per mode, the ids of the word terms of its name,
    /// title, summary, keywords and description (not its parameters).
    pub(super) fn of(catalog: &Catalog, mode_terms: &[Vec<u32>]) -> Self {
        let mut ids: HashMap<String, u32> = HashMap::default();
        let mut names: HashMap<String, Vec<u32>> = HashMap::default();
        // Each word of a tool name, to the servers whose tools it names.
        let mut tool_words: HashMap<String, HashSet<u32>> = HashMap::default();
        let of_mode: Vec<Option<u32>> = catalog
            .modes()
            .iter()
            .map(|m| {
                let manifest = m.manifest();
                let server = manifest.server.as_deref()?;
                let next = ids.len() as u32;
                let id = *ids.entry(server.to_lowercase()).or_insert(next);
                let tool = manifest.upstream_tool.as_deref().unwrap_or(&manifest.name);
                for word in action::words(tool) {
                    tool_words.entry(word).or_default().insert(id);
                }
                // A name of several words names its server by each word of
                // four letters or more (`google-drive`).
                let parts: Vec<&str> = server
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|p| !p.is_empty())
                    .collect();
                if parts.len() == 1 {
                    add_name(&mut names, parts[0], id);
                } else {
                    for part in parts.iter().filter(|p| p.len() >= 4) {
                        add_name(&mut names, part, id);
                    }
                }
                for called in manifest.server_called.iter() {
                    add_name(&mut names, called, id);
                }
                Some(id)
            })
            .collect();
        // A word another server's tools are named by ("calendar" beside
        // Microsoft 365's `list-calendar-events`) does not single out the
        // server it names: "my Outlook calendar" sent to Google Calendar.
        for (word, servers) in names.iter_mut() {
            if let Some(naming) = tool_words.get(word) {
                servers.retain(|id| naming.iter().all(|other| other == id));
            }
        }
        names.retain(|_, servers| !servers.is_empty());
        let vocabulary = vocabulary(&of_mode, mode_terms);
        ServerWords {
            of_mode,
            names,
            vocabulary,
        }
    }

    /// The servers whose name, or what users call them, `text` writes as
    /// a word of its own, and those it names only to rule them out ("not
    /// Slack", "a Gmail draft, not a Notion page").
    pub(super) fn named_in(&self, text: &str) -> Named {
        if self.names.is_empty() {
            return Named::default();
        }
        let words = words_of(text);
        let question = text.contains('?');
        let (mut meant, mut ruled_out) = (Vec::new(), Vec::new());
        for (at, word) in words.iter().enumerate() {
            let Some(servers) = self.names.get(word.as_str()) else {
                continue;
            };
            // "not on github yet": where something is not, so far.
            let so_far = words.get(at + 1).is_some_and(|next| next == "yet");
            let target = if !so_far && rules_out(&words[..at], !question) {
                &mut ruled_out
            } else {
                &mut meant
            };
            target.extend(servers.iter().copied());
        }
        let servers = sorted(meant.into_iter());
        let ruled_out = sorted(ruled_out.into_iter().filter(|s| !servers.contains(s)));
        Named { servers, ruled_out }
    }

    /// The servers one of whose own words the request's terms (`ids`, its
    /// vocabulary ids) hold.
    pub(super) fn worded_in(&self, ids: &[(Option<u32>, f32)]) -> Vec<u32> {
        if self.vocabulary.is_empty() {
            return Vec::new();
        }
        sorted(
            ids.iter()
                .filter_map(|(id, _)| self.vocabulary.get(&(*id)?))
                .copied(),
        )
    }
}

/// What a request says of the catalog's servers by name.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Named {
    /// The servers it names as the place to act ("in notion", "on jira").
    pub(super) servers: Vec<u32>,
    /// The servers it names only after a word that rules them out: a
    /// look-alike the writer says is not meant. The encoder reads "not
    /// Slack" much as "Slack" (bi-encoders ignore negation), so without
    /// this the very server ruled out got the lift of a named one.
    pub(super) ruled_out: Vec<u32>,
}

/// Words that rule out the server named right after them, with at most
/// two [`BETWEEN`] words between: "not Slack", "not a Notion page", "this
/// isn't jira"; "no" too ("no browser needed"), but not in a question,
/// where it asks whether there are none ("no slack messages from bob
/// today?"). A negated verb ("don't delete the confluence page") does
/// not: its server is still the one meant.
const RULING_OUT: &[&str] = &["not", "nor", "isnt", "arent", "wasnt"];

/// Words that may stand between a ruling-out word and the server's name.
const BETWEEN: &[&str] = &[
    "a", "an", "the", "my", "our", "their", "your", "his", "her", "in", "on", "to", "from", "via",
    "into", "through", "using", "with", "over",
];

/// The request's words, lower-cased, split where neither a letter, a
/// digit, an apostrophe nor an underscore stands; a possessive's "'s"
/// dropped and other apostrophes closed up ("isn't" -> "isnt"). An
/// identifier joined by underscores stays one word: the `STRIPE` of
/// `STRIPE_WEBHOOK_SECRET` is part of a value, not a server named.
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}' || c == '_'))
        .map(|word| {
            let word = word.to_lowercase().replace('\u{2019}', "'");
            let word = word.strip_suffix("'s").unwrap_or(&word);
            word.replace('\'', "")
        })
        .filter(|word| word.len() >= 2)
        .collect()
}

/// Whether the words before a server's name (`before`) rule it out:
/// "instead of" and "rather than" count as ruling-out words too, and "no"
/// where `no_rules_out`.
fn rules_out(before: &[String], no_rules_out: bool) -> bool {
    for back in 1..=3.min(before.len()) {
        let word = before[before.len() - back].as_str();
        let earlier = before
            .len()
            .checked_sub(back + 1)
            .map(|at| before[at].as_str());
        if RULING_OUT.contains(&word)
            || (word == "no" && no_rules_out)
            || (word == "of" && earlier == Some("instead"))
            || (word == "than" && earlier == Some("rather"))
        {
            return true;
        }
        if !BETWEEN.contains(&word) {
            return false;
        }
    }
    false
}

fn add_name(names: &mut HashMap<String, Vec<u32>>, word: &str, id: u32) {
    let word = word.trim().to_lowercase();
    if word.len() < 2 || GENERIC.contains(&word.as_str()) {
        return;
    }
    let entry = names.entry(word).or_default();
    if !entry.contains(&id) {
        entry.push(id);
    }
}

fn sorted(servers: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut servers: Vec<u32> = servers.collect();
    servers.sort_unstable();
    servers.dedup();
    servers
}

/// Each server's own words: a term of at least two of one server's tools
/// and of no other mode (another server's tool or one of zenmode's own).
/// None in a catalog of fewer than two servers, where they would only set
/// the server against zenmode's modes.
fn vocabulary(of_mode: &[Option<u32>], mode_terms: &[Vec<u32>]) -> HashMap<u32, u32> {
    if of_mode.iter().flatten().collect::<HashSet<_>>().len() < 2 {
        return HashMap::default();
    }
    #[derive(Clone, Copy, PartialEq)]
    enum Owner {
        One(u32),
        Several,
    }
    // term -> who uses it, and in how many modes
    let mut owners: HashMap<u32, (Owner, u32)> = HashMap::default();
    for (server, terms) in of_mode.iter().zip(mode_terms) {
        for &term in terms {
            let owner = server.map_or(Owner::Several, Owner::One);
            let entry = owners.entry(term).or_insert((owner, 0));
            if entry.0 != owner {
                entry.0 = Owner::Several;
            }
            entry.1 += 1;
        }
    }
    owners
        .into_iter()
        .filter_map(|(term, (owner, modes))| match owner {
            Owner::One(server) if modes >= 2 => Some((term, server)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_own_words_are_those_two_of_its_tools_use_and_nothing_else_does() {
        // Modes 0-1 of server 0, 2-3 of server 1, 4 one of zenmode's.
        let of_mode = [Some(0), Some(0), Some(1), Some(1), None];
        let terms = [
            vec![10, 11, 12],
            vec![10, 12, 13],
            vec![20, 21, 12],
            vec![20, 22],
            vec![13],
        ];
        let own = vocabulary(&of_mode, &terms);
        // 10 and 20: two tools of one server. 11, 21, 22: one tool only.
        // 12: both servers. 13: zenmode's mode uses it too.
        assert_eq!(own.get(&10), Some(&0));
        assert_eq!(own.get(&20), Some(&1));
        for term in [11, 12, 13, 21, 22] {
            assert_eq!(own.get(&term), None, "{term}");
        }
    }

    /// Servers named slack (0), discord (1), notion (2), confluence (3),
    /// jira (3, what users call Atlassian's).
    fn named_servers() -> ServerWords {
        let mut names = HashMap::default();
        for (name, id) in [
            ("slack", 0),
            ("discord", 1),
            ("notion", 2),
            ("confluence", 3),
            ("jira", 3),
        ] {
            add_name(&mut names, name, id);
        }
        ServerWords {
            names,
            ..ServerWords::default()
        }
    }

    fn named(text: &str) -> (Vec<u32>, Vec<u32>) {
        let named = named_servers().named_in(text);
        (named.servers, named.ruled_out)
    }

    #[test]
    fn a_server_named_after_a_ruling_out_word_is_ruled_out() {
        assert_eq!(
            named("Post in our Discord #general, not Slack"),
            (vec![1], vec![0])
        );
        assert_eq!(
            named("a calendar event, not a Notion page"),
            (vec![], vec![2])
        );
        assert_eq!(
            named("show MOB's statuses (this isn\u{2019}t Jira)"),
            (vec![], vec![3])
        );
        assert_eq!(
            named("Not Slack, not Discord: her LINE chat"),
            (vec![], vec![0, 1])
        );
        assert_eq!(
            named("instead of slack, post it on discord"),
            (vec![1], vec![0])
        );
        assert_eq!(
            named("rather than notion, use slack's canvas"),
            (vec![0], vec![2])
        );
    }

    #[test]
    fn a_name_inside_an_identifier_names_no_server() {
        assert_eq!(
            named("set SLACK_BOT_TOKEN=xoxb-1 as a secret on the worker"),
            (vec![], vec![])
        );
        assert_eq!(named("read $NOTION_API_KEY from .env"), (vec![], vec![]));
        // The name on its own, beside such an identifier, still names it.
        assert_eq!(
            named("post the SLACK_BOT_TOKEN rotation notice in slack"),
            (vec![0], vec![])
        );
    }

    #[test]
    fn a_negated_verb_leaves_its_server_meant() {
        assert_eq!(
            named("don't delete confluence page 771201, show it"),
            (vec![3], vec![])
        );
        assert_eq!(
            named("not now: archive the notion page later"),
            (vec![2], vec![])
        );
        // Named once ruled out and once meant: meant.
        assert_eq!(
            named("not the slack thread, the slack canvas"),
            (vec![0], vec![])
        );
        assert_eq!(
            named("no slack messages from bob today?"),
            (vec![0], vec![])
        );
        assert_eq!(named("read it to me, no slack needed"), (vec![], vec![0]));
        assert_eq!(
            named("the notes are not in notion yet, add them"),
            (vec![2], vec![])
        );
    }

    /// Tools of `servers` (server, tool name), without texts.
    fn servers_of(tools: &[(&str, &str)]) -> ServerWords {
        let catalog = Catalog::from_modes(tools.iter().map(|(server, tool)| {
            let manifest = serde_json::json!({
                "name": format!("{server}__{tool}").replace('-', "_").to_lowercase(),
                "title": tool, "summary": tool,
                "description": tool, "category": "utility", "server": server,
                "upstream_tool": tool, "schema": {"type": "object", "properties": {}}
            });
            crate::catalog::Mode::new(
                crate::catalog::Manifest::parse(&manifest.to_string(), None).unwrap(),
                crate::catalog::Origin::Builtin,
            )
        }));
        ServerWords::of(&catalog, &vec![Vec::new(); tools.len()])
    }

    #[test]
    fn a_word_another_server_names_its_tools_by_does_not_name_a_server() {
        let calendar_alone =
            servers_of(&[("acme-calendar", "create_event"), ("mailer", "send_mail")]);
        assert_eq!(calendar_alone.named_in("on my calendar").servers, vec![0]);
        let beside_office = servers_of(&[
            ("acme-calendar", "create_event"),
            ("office", "list-calendar-events"),
            ("office", "getCalendarView"),
        ]);
        let named = beside_office.named_in("my office calendar, not the acme one");
        assert_eq!((named.servers, named.ruled_out), (vec![1], vec![0]));
        assert_eq!(
            beside_office.named_in("on my calendar").servers,
            Vec::<u32>::new()
        );
    }

    #[test]
    fn a_lone_server_has_no_words_of_its_own() {
        let own = vocabulary(&[Some(0), Some(0), None], &[vec![1], vec![1], vec![2]]);
        assert!(own.is_empty());
    }
}
