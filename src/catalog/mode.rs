//! One mode: its manifest (parsed on first use for embedded modes), where
//! it came from, and its validator, compiled on first use and cached.

use std::{fmt, path::PathBuf, sync::OnceLock};

use serde_json::Value;

use super::manifest::Manifest;

/// Where a mode's definition came from; shown by `modes list` and in errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Builtin,
    ModesDir(PathBuf),
    ForeignCatalog(PathBuf),
    /// A tool of the gateway upstream with this name.
    Upstream(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Builtin => f.write_str("builtin"),
            Origin::ModesDir(path) => write!(f, "{}", path.display()),
            Origin::ForeignCatalog(path) => write!(f, "catalog {}", path.display()),
            Origin::Upstream(server) => write!(f, "upstream {server}"),
        }
    }
}

/// A compiled request validator, or the reason the schema would not compile.
pub type CompiledSchema = Result<jsonschema::Validator, String>;

/// Builds a mode's manifest on first use (gateway modes).
type BuildManifest = Box<dyn Fn() -> Manifest + Send + Sync>;

/// One mode: its manifest plus the state derived from it lazily.
pub struct Mode {
    name: String,
    pub origin: Origin,
    /// Embedded manifest text, parsed on first use (`build.rs` checked its
    /// JSON and name; the test suite and `modes check` parse every one).
    pub(crate) embedded_text: Option<&'static str>,
    /// The embedded manifest's required fields, read by `build.rs`.
    embedded_required: &'static [&'static str],
    /// Or a builder run on first use, so start-up only learns the name.
    build: Option<BuildManifest>,
    manifest: OnceLock<Manifest>,
    validator: OnceLock<CompiledSchema>,
}

impl fmt::Debug for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mode")
            .field("name", &self.name)
            .field("origin", &self.origin)
            .field("compiled", &self.is_compiled())
            .finish()
    }
}

impl Mode {
    pub fn new(manifest: Manifest, origin: Origin) -> Self {
        Mode {
            name: manifest.name.clone(),
            origin,
            embedded_text: None,
            embedded_required: &[],
            build: None,
            manifest: OnceLock::from(manifest),
            validator: OnceLock::new(),
        }
    }

    /// A mode whose manifest `build` makes on first use.
    pub fn deferred(
        name: String,
        origin: Origin,
        build: impl Fn() -> Manifest + Send + Sync + 'static,
    ) -> Self {
        Mode {
            name,
            origin,
            embedded_text: None,
            embedded_required: &[],
            build: Some(Box::new(build)),
            manifest: OnceLock::new(),
            validator: OnceLock::new(),
        }
    }

    /// A built-in mode whose manifest is parsed on first use: a server that
    /// lists only the meta tools never parses the mode bodies at start-up.
    pub(crate) fn embedded(
        name: &str,
        text: &'static str,
        required: &'static [&'static str],
    ) -> Self {
        Mode {
            name: name.to_owned(),
            origin: Origin::Builtin,
            embedded_text: Some(text),
            embedded_required: required,
            build: None,
            manifest: OnceLock::new(),
            validator: OnceLock::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema's required fields; an embedded mode answers from the list
    /// `build.rs` wrote, so listing them parses nothing.
    pub fn required_fields(&self) -> Vec<&str> {
        if self.embedded_text.is_some() {
            return self.embedded_required.to_vec();
        }
        self.manifest().schema["required"]
            .as_array()
            .map(|fields| fields.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The manifest, parsed on first use for embedded modes.
    pub fn manifest(&self) -> &Manifest {
        self.manifest.get_or_init(|| {
            if let Some(build) = &self.build {
                return build();
            }
            let text = self.embedded_text.unwrap_or_default();
            Manifest::parse(text, Some(&self.name)).unwrap_or_else(|problem| {
                // Unreachable for a tested build: build.rs, the unit tests and
                // `modes check` all parse every embedded manifest.
                panic!(
                    "embedded manifest modes/{}.json is invalid: {problem}",
                    self.name
                )
            })
        })
    }

    /// Whether the manifest has been parsed; the laziness tests read this.
    pub fn is_parsed(&self) -> bool {
        self.manifest.get().is_some()
    }

    /// The request schema (a JSON object).
    pub fn schema(&self) -> &Value {
        &self.manifest().schema
    }

    /// The request validator, compiled on first call and cached for the process.
    pub fn validator(&self) -> &CompiledSchema {
        self.validator.get_or_init(|| {
            tracing::debug!(mode = self.name(), "compiling request schema");
            jsonschema::draft202012::new(self.schema()).map_err(|e| {
                format!(
                    "the request schema of mode {:?} does not compile: {e}",
                    self.name()
                )
            })
        })
    }

    /// Whether [`Mode::validator`] has run; the laziness tests read this.
    pub fn is_compiled(&self) -> bool {
        self.validator.get().is_some()
    }
}

/// A failure to load the catalog; always names the file at fault.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {problem}")]
pub struct LoadError {
    pub source_name: String,
    pub problem: String,
}

impl LoadError {
    pub(crate) fn new(source_name: impl fmt::Display, problem: impl Into<String>) -> Self {
        LoadError {
            source_name: source_name.to_string(),
            problem: problem.into(),
        }
    }
}
