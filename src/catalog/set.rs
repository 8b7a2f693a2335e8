//! The catalog itself: every mode a process serves, in a stable order,
//! loaded from its sources and looked up by name (with the one "did you
//! mean" rule).

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
};

use super::manifest::{self, Manifest};
use super::{
    foreign, gateway_modes,
    mode::{LoadError, Mode, Origin},
};

/// Manifests embedded from `modes/*.json` by `build.rs`, sorted by file name,
/// each with its schema's required fields.
type EmbeddedMode = (&'static str, &'static str, &'static [&'static str]);
static EMBEDDED: &[EmbeddedMode] = include!(concat!(env!("OUT_DIR"), "/embedded_modes.rs"));

/// Every known mode, in a stable order (by name), with lookup by name.
/// Cloning shares the modes.
#[derive(Debug, Clone)]
pub struct Catalog {
    modes: Vec<Arc<Mode>>,
    by_name: HashMap<String, usize>,
}

/// What to load into a catalog.
#[derive(Debug, Clone, Default)]
pub struct CatalogSources {
    /// Leave out the embedded modes (evaluation on a foreign catalog alone).
    pub no_builtin: bool,
    pub modes_dirs: Vec<PathBuf>,
    pub foreign_catalogs: Vec<PathBuf>,
}

impl Catalog {
    /// The embedded modes only.
    pub fn builtin() -> Result<Self, LoadError> {
        Self::load(&CatalogSources::default())
    }

    pub fn load(sources: &CatalogSources) -> Result<Self, LoadError> {
        let mut modes: Vec<Mode> = Vec::new();
        if !sources.no_builtin {
            for (file_name, text, required) in EMBEDDED {
                modes.push(Mode::embedded(
                    file_name.trim_end_matches(".json"),
                    text,
                    required,
                ));
            }
        }
        for dir in &sources.modes_dirs {
            modes.extend(load_modes_dir(dir)?);
        }
        for path in &sources.foreign_catalogs {
            modes.extend(foreign::load(path)?);
        }
        Ok(Self::from_modes(modes))
    }

    /// This catalog plus `extra` modes (a later mode with the same name wins).
    pub fn with_modes(self, extra: impl IntoIterator<Item = Mode>) -> Self {
        Self::from_shared(
            self.modes
                .into_iter()
                .chain(extra.into_iter().map(Arc::new)),
        )
    }

    /// This catalog plus `extra` modes that are shared already (the
    /// gateway keeps its modes, so a rebuilt catalog holds the same ones).
    pub fn with_shared_modes(self, extra: impl IntoIterator<Item = Arc<Mode>>) -> Self {
        Self::from_shared(self.modes.into_iter().chain(extra))
    }

    /// The catalog minus the modes whose origin `drop` matches.
    pub fn without_origin(&self, drop: impl Fn(&Origin) -> bool) -> Self {
        Self::from_shared(
            self.modes
                .iter()
                .filter(|mode| !drop(&mode.origin))
                .cloned(),
        )
    }

    /// Builds a catalog; a later mode with the same name replaces an earlier one.
    pub fn from_modes(modes: impl IntoIterator<Item = Mode>) -> Self {
        Self::from_shared(modes.into_iter().map(Arc::new))
    }

    /// Sorts by name, keeping the last of each name. Modes move as pointers:
    /// a `Mode` is large, and the gateway adds hundreds at start-up.
    fn from_shared(modes: impl IntoIterator<Item = Arc<Mode>>) -> Self {
        let mut modes: Vec<Arc<Mode>> = modes.into_iter().collect();
        // Stable: among equal names the later mode stays last.
        modes.sort_by(|a, b| a.name().cmp(b.name()));
        let mut kept: Vec<Arc<Mode>> = Vec::with_capacity(modes.len());
        for mode in modes {
            match kept.last_mut() {
                Some(last) if last.name() == mode.name() => *last = mode,
                _ => kept.push(mode),
            }
        }
        let by_name = kept
            .iter()
            .enumerate()
            .map(|(index, mode)| (mode.name().to_owned(), index))
            .collect();
        Catalog {
            modes: kept,
            by_name,
        }
    }

    /// The catalog minus the modes `drop` names (evaluations hold tools out
    /// to measure how "no mode fits" is detected).
    pub fn without(&self, drop: impl Fn(&str) -> bool) -> Self {
        Self::from_shared(self.modes.iter().filter(|mode| !drop(mode.name())).cloned())
    }

    /// The mode with this name, or with this alias (`aliases` in its manifest).
    pub fn get(&self, name: &str) -> Option<&Arc<Mode>> {
        match self.by_name.get(name) {
            Some(&index) => Some(&self.modes[index]),
            None => self.by_alias(name),
        }
    }

    /// The index in [`Catalog::modes`] of the mode named `name` (not an
    /// alias).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Looks `name` up among the manifests' aliases. Start-up parses no
    /// manifest, so this reads only manifests already parsed and embedded
    /// ones whose text holds the name (parsing just those).
    fn by_alias(&self, name: &str) -> Option<&Arc<Mode>> {
        if !manifest::is_valid_mode_name(name) {
            return None;
        }
        let quoted = format!("\"{name}\"");
        self.modes.iter().find(|mode| {
            let worth_reading = mode.is_parsed()
                || mode
                    .embedded_text
                    .is_some_and(|text| text.contains("\"aliases\"") && text.contains(&quoted));
            worth_reading && mode.manifest().aliases.iter().any(|alias| alias == name)
        })
    }

    pub fn modes(&self) -> &[Arc<Mode>] {
        &self.modes
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.modes.iter().map(|mode| mode.name())
    }

    pub fn len(&self) -> usize {
        self.modes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.modes.is_empty()
    }

    /// Names of the modes whose manifest has been parsed so far.
    pub fn parsed_modes(&self) -> Vec<&str> {
        self.modes
            .iter()
            .filter(|mode| mode.is_parsed())
            .map(|mode| mode.name())
            .collect()
    }

    /// Names of the modes whose schema has been compiled so far.
    pub fn compiled_modes(&self) -> Vec<&str> {
        self.modes
            .iter()
            .filter(|mode| mode.is_compiled())
            .map(|mode| mode.name())
            .collect()
    }

    /// The known modes nearest to `wanted` by edit distance, closest first.
    fn closest_names(&self, wanted: &str, limit: usize) -> Vec<&str> {
        let wanted = wanted.to_ascii_lowercase();
        let mut scored: Vec<(usize, &str)> = self
            .names()
            .map(|name| (strsim::levenshtein(&wanted, name), name))
            .filter(|(distance, name)| *distance <= name.len().max(wanted.len()) / 2 + 1)
            .collect();
        scored.sort();
        scored.into_iter().take(limit).map(|(_, n)| n).collect()
    }

    /// The names closest to `wanted` that are safe to offer as "did you
    /// mean": another server's destructive tool is never among them, so a
    /// typo cannot lead the model to delete something on a server it did
    /// not name. Built-in and `--modes-dir` modes, the named server's own
    /// tools and tools that change nothing may be offered. Every strategy and
    /// the engine answer an unknown name with this list.
    pub fn suggestions(&self, wanted: &str, limit: usize) -> Vec<&str> {
        let wanted_server = wanted
            .split_once(gateway_modes::SEPARATOR)
            .map(|(prefix, _)| prefix);
        self.closest_names(wanted, limit.saturating_mul(4))
            .into_iter()
            .filter_map(|candidate| self.get(candidate))
            .filter(|mode| {
                matches!(mode.origin, Origin::Builtin | Origin::ModesDir(_))
                    || mode
                        .name()
                        .split_once(gateway_modes::SEPARATOR)
                        .map(|(prefix, _)| prefix)
                        == wanted_server
                    || !mode.manifest().destructive()
            })
            .take(limit)
            .map(|mode| mode.name())
            .collect()
    }
}

fn load_modes_dir(dir: &Path) -> Result<Vec<Mode>, LoadError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| LoadError::new(dir.display(), format!("cannot read modes directory: {e}")))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| LoadError::new(path.display(), format!("cannot read: {e}")))?;
            let stem = path.file_stem().and_then(|s| s.to_str());
            let manifest =
                Manifest::parse(&text, stem).map_err(|p| LoadError::new(path.display(), p))?;
            Ok(Mode::new(manifest, Origin::ModesDir(path)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_names_rank_by_edit_distance_and_drop_far_ones() {
        let catalog = Catalog::builtin().unwrap();
        assert_eq!(catalog.closest_names("codereviw", 1), ["codereview"]);
        assert_eq!(catalog.closest_names("DEBGU", 3)[0], "debug");
        assert!(catalog.closest_names("zzzzzzzzzzzzzzzz", 3).is_empty());
    }

    #[test]
    fn an_alias_finds_its_mode_and_parses_few_manifests() {
        let catalog = Catalog::builtin().unwrap();
        assert_eq!(catalog.get("security").unwrap().name(), "secaudit");
        assert!(catalog.parsed_modes().len() < catalog.len() / 2);
        assert!(catalog.get("securityy").is_none());
        assert!(catalog.get("Not A Name").is_none());
    }

    #[test]
    fn a_one_step_request_gets_its_aliases_and_defaults() {
        let catalog = Catalog::builtin().unwrap();
        let debug = catalog.get("debug").unwrap().manifest();
        let mut request = serde_json::json!({"problem": "tokens vanish", "files": ["/a.py"], "confidence": "exploring"});
        debug.prepare_request(&mut request);
        assert_eq!(request["step"], "tokens vanish");
        assert_eq!(request["relevant_files"], serde_json::json!(["/a.py"]));
        assert_eq!(request["step_number"], 1);
        assert_eq!(request["next_step_required"], false);
        assert!(request.get("problem").is_none());
        // A request that names a step field is left to say what it means.
        let mut later = serde_json::json!({"step": "s", "step_number": 2, "problem": "p"});
        debug.prepare_request(&mut later);
        assert!(later.get("total_steps").is_none());
        assert_eq!(later["problem"], "p", "step is given: the alias stays put");
    }

    #[test]
    fn builtin_catalog_loads_without_parsing_or_compiling_anything() {
        let catalog = Catalog::builtin().expect("embedded manifests load");
        assert_eq!(catalog.len(), 19);
        assert!(catalog.parsed_modes().is_empty());
        assert!(catalog.compiled_modes().is_empty());
    }

    #[test]
    fn every_embedded_manifest_parses() {
        for (file_name, text, required) in EMBEDDED {
            let stem = file_name.trim_end_matches(".json");
            match Manifest::parse(text, Some(stem)) {
                Err(problem) => panic!("modes/{file_name}: {problem}"),
                // build.rs's copy of the required fields matches the schema.
                Ok(manifest) => {
                    let parsed = Mode::new(manifest, Origin::Builtin);
                    assert_eq!(parsed.required_fields(), required.to_vec(), "{file_name}");
                }
            }
        }
    }

    #[test]
    fn modes_dir_overrides_and_reports_the_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let good = serde_json::json!({
            "name": "extra", "title": "Extra", "summary": "An extra mode", "description": "D",
            "category": "utility", "schema": {"type": "object", "properties": {}}
        });
        std::fs::write(dir.path().join("extra.json"), good.to_string()).unwrap();
        let sources = CatalogSources {
            modes_dirs: vec![dir.path().to_owned()],
            ..Default::default()
        };
        let catalog = Catalog::load(&sources).unwrap();
        assert!(catalog.get("extra").is_some());

        std::fs::write(dir.path().join("broken.json"), "{not json").unwrap();
        let err = Catalog::load(&sources).unwrap_err();
        assert!(err.to_string().contains("broken.json"), "{err}");
    }

    #[test]
    fn missing_modes_dir_is_a_clear_error() {
        let sources = CatalogSources {
            modes_dirs: vec![PathBuf::from("/definitely/not/here")],
            ..Default::default()
        };
        let err = Catalog::load(&sources).unwrap_err().to_string();
        assert!(err.contains("/definitely/not/here"), "{err}");
    }
}
