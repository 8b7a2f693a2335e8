//! The list of modes and their required fields appended to `zen_execute`'s
//! description, so a model that recognises its mode can call `zen_execute`
//! at once instead of asking `zen_select_mode` first.
//!
//! The session benchmark (tests/peers/session_bench.py) decided this: in
//! Claude Code a task that skips select costs one model request fewer, which
//! outweighs the index's tokens on every request. The index stays within a
//! byte budget (Claude Code truncates descriptions over 2 KB); what does not
//! fit is counted and left to `zen_select_mode`.

use crate::catalog::{Catalog, Origin};

/// Most bytes the whole `zen_execute` description may reach.
pub const DESCRIPTION_BUDGET: usize = 2_000;

/// `base` followed by the catalog's own modes grouped by their required
/// fields, as many groups as fit in [`DESCRIPTION_BUDGET`], then the modes
/// of other servers counted per source: their names would cost tokens on
/// every request without sparing a call, since their fields are unknown.
pub fn describe_execute(base: &str, catalog: &Catalog) -> String {
    // Groups in order of their first mode's name.
    let mut groups: Vec<(Vec<&str>, Vec<&str>)> = Vec::new();
    let mut sources: Vec<(String, usize)> = Vec::new();
    for mode in catalog.modes() {
        if let Some(source) = other_server(&mode.origin) {
            match sources.iter_mut().find(|(known, _)| *known == source) {
                Some((_, count)) => *count += 1,
                None => sources.push((source, 1)),
            }
            continue;
        }
        let fields = mode.required_fields();
        match groups.iter_mut().find(|(known, _)| *known == fields) {
            Some((_, names)) => names.push(mode.name()),
            None => groups.push((fields, vec![mode.name()])),
        }
    }
    let mut text = format!("{base}\nModes, by required fields:");
    let mut left_out = 0;
    for (index, (fields, names)) in groups.iter().enumerate() {
        let line = format!(
            "\n- {}: {}",
            fields_text(&groups[..index], fields),
            names.join(", ")
        );
        if text.len() + line.len() <= DESCRIPTION_BUDGET - RESERVE {
            text.push_str(&line);
        } else {
            left_out += names.len();
        }
    }
    if !sources.is_empty() {
        sources.sort();
        let mut line = String::from("\n- other servers' tools (zen_select_mode finds them):");
        let mut listed = 0;
        for (source, count) in &sources {
            let item = format!(" {source} ({count}),");
            if text.len() + line.len() + item.len() > DESCRIPTION_BUDGET - RESERVE {
                break;
            }
            line.push_str(&item);
            listed += 1;
        }
        if listed > 0 {
            line.pop();
            text.push_str(&line);
        }
        left_out += sources[listed..]
            .iter()
            .map(|(_, count)| count)
            .sum::<usize>();
    }
    if left_out > 0 {
        text.push_str(&format!(
            "\n- and {left_out} more: zen_select_mode finds them"
        ));
    }
    text
}

/// The server a mode was imported from, or `None` for the catalog's own
/// modes (built-in or from a modes directory).
fn other_server(origin: &Origin) -> Option<String> {
    match origin {
        Origin::Builtin | Origin::ModesDir(_) => None,
        Origin::Upstream(server) => Some(server.clone()),
        Origin::ForeignCatalog(path) => Some(
            path.file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_else(|| "catalog".to_owned()),
        ),
    }
}

/// `fields`, written as an earlier group's fields plus the rest when it
/// extends one (workflow modes share five fields and add their own).
fn fields_text(earlier: &[(Vec<&str>, Vec<&str>)], fields: &[&str]) -> String {
    if fields.is_empty() {
        return "nothing".to_owned();
    }
    let base = earlier
        .iter()
        .filter(|(known, _)| !known.is_empty() && known.iter().all(|field| fields.contains(field)))
        .max_by_key(|(known, _)| known.len());
    match base {
        Some((known, names)) if known.len() > 1 => {
            let extra: Vec<&str> = fields
                .iter()
                .copied()
                .filter(|field| !known.contains(field))
                .collect();
            format!("{}'s + {}", names[0], extra.join(", "))
        }
        _ => fields.join(", "),
    }
}

/// Room kept for the closing "and N more" line.
const RESERVE: usize = 60;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Manifest, Mode, gateway_modes::upstream_mode};
    use serde_json::json;

    #[test]
    fn builtin_modes_are_grouped_by_required_fields() {
        let catalog = Catalog::builtin().unwrap();
        let text = describe_execute("Run a mode.", &catalog);
        assert!(text.starts_with("Run a mode.\n"), "{text}");
        assert!(text.contains("\n- nothing: listmodels, version"), "{text}");
        assert!(
            text.contains("\n- prompt: apilookup, challenge, clink"),
            "{text}"
        );
        assert!(
            text.contains("\n- step, step_number, total_steps, next_step_required, findings: analyze, codereview, consensus, debug"),
            "{text}"
        );
        for mode in catalog.names() {
            assert!(text.contains(mode), "{mode} missing: {text}");
        }
        assert!(!text.contains("more:"), "{text}");
        assert!(text.len() <= DESCRIPTION_BUDGET);
        // Nothing was parsed to write it.
        assert!(catalog.parsed_modes().is_empty());
    }

    #[test]
    fn other_servers_are_counted_not_listed() {
        let tools = |server: &str, count: usize| -> Vec<Mode> {
            (0..count)
                .map(|i| {
                    upstream_mode(
                        server,
                        server,
                        &json!({"name": format!("tool_{i}"), "inputSchema": {"type": "object"}}),
                        Default::default(),
                    )
                    .unwrap()
                })
                .collect()
        };
        let catalog = Catalog::builtin()
            .unwrap()
            .with_modes(tools("git", 12).into_iter().chain(tools("big", 400)));
        let text = describe_execute("Run a mode.", &catalog);
        assert!(text.len() <= DESCRIPTION_BUDGET, "{}", text.len());
        assert!(
            text.ends_with(
                "\n- other servers' tools (zen_select_mode finds them): big (400), git (12)"
            ),
            "{text}"
        );
        assert!(!text.contains("tool_0"), "{text}");
        // The built-in modes are all still there, unparsed.
        for mode in ["chat", "debug", "version"] {
            assert!(text.contains(mode), "{mode}: {text}");
        }
        assert!(catalog.parsed_modes().is_empty());
    }

    #[test]
    fn groups_that_do_not_fit_are_counted() {
        let modes: Vec<Mode> = (0..300)
            .map(|i| {
                let manifest = Manifest::parse(
                    &json!({"name": format!("mode_{i:03}"), "title": "M", "summary": "A mode",
                        "description": "D", "category": "utility",
                        "schema": {"type": "object", "properties": {"q": {"type": "string"}},
                            "required": [format!("field_{i}")]}})
                    .to_string(),
                    None,
                )
                .unwrap();
                Mode::new(manifest, Origin::ModesDir("/m".into()))
            })
            .collect();
        let catalog = Catalog::from_modes(modes);
        let text = describe_execute("Run.", &catalog);
        assert!(text.len() <= DESCRIPTION_BUDGET, "{}", text.len());
        let listed = text.matches("\n- field_").count();
        let more: usize = text
            .rsplit_once("- and ")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("an 'and N more' line");
        assert!(listed > 10, "{text}");
        assert_eq!(listed + more, 300, "{text}");
    }

    #[test]
    fn parsed_manifests_show_their_required_fields() {
        let manifest = Manifest::parse(
            &json!({"name": "extra", "title": "Extra", "summary": "An extra mode",
                "description": "D", "category": "utility",
                "schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}})
            .to_string(),
            Some("extra"),
        )
        .unwrap();
        let catalog = Catalog::from_modes([Mode::new(manifest, Origin::Builtin)]);
        assert_eq!(
            describe_execute("Run.", &catalog),
            "Run.\nModes, by required fields:\n- q: extra"
        );
    }
}
