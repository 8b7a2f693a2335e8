//! What in a request points at one of a catalog's servers: a word that
//! names it ("in notion", "on jira", what its examples file says users call
//! it), or a word only its own tools use ("outlook", "namespace", "pod"
//! beside servers that never say them).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::catalog::Catalog;

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
        let of_mode: Vec<Option<u32>> = catalog
            .modes()
            .iter()
            .map(|m| {
                let manifest = m.manifest();
                let server = manifest.server.as_deref()?;
                let next = ids.len() as u32;
                let id = *ids.entry(server.to_lowercase()).or_insert(next);
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
        let vocabulary = vocabulary(&of_mode, mode_terms);
        ServerWords {
            of_mode,
            names,
            vocabulary,
        }
    }

    /// The servers whose name, or what users call them, `text` writes as
    /// a word of its own.
    pub(super) fn named_in(&self, text: &str) -> Vec<u32> {
        if self.names.is_empty() {
            return Vec::new();
        }
        let named = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| word.len() >= 2)
            .filter_map(|word| self.names.get(&word.to_lowercase()))
            .flatten()
            .copied();
        sorted(named)
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

    #[test]
    fn a_lone_server_has_no_words_of_its_own() {
        let own = vocabulary(&[Some(0), Some(0), None], &[vec![1], vec![1], vec![2]]);
        assert!(own.is_empty());
    }
}
