//! Where the demo database lives, and the rule that keeps the demo from
//! deleting anything it did not write: a directory is wiped only if it
//! holds the demo's marker file and nothing but Sift's own files.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Context, Failure, Outcome};

/// The file that marks a directory as the demo's (its content says so, for
/// whoever finds it).
pub const MARKER: &str = "SIFT-DEMO";

/// What the marker file says.
const MARKER_TEXT: &str = "A database written by `sift demo`; the next demo run deletes it.\n";

/// The default directory: `sift-demo` in the OS temporary directory, so a
/// demo started anywhere leaves nothing in the working tree.
pub fn default_dir() -> PathBuf {
    std::env::temp_dir().join("sift-demo")
}

/// The demo's directory, ready for a fresh database.
#[derive(Debug)]
pub struct DemoDir {
    /// Its path.
    pub path: PathBuf,
    /// Whether the demo created the directory itself (else it was empty
    /// and is emptied, not removed, at the end).
    created: bool,
}

impl DemoDir {
    /// Creates `path`, or wipes a previous demo database there. Refuses
    /// (exit 2) a path holding anything else.
    pub fn prepare(path: &Path) -> Outcome<Self> {
        let created = match fs::read_dir(path).map(|mut entries| entries.next().is_none()) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(path).context(format!("creating {}", path.display()))?;
                true
            }
            Err(e) => return Err(e).context(format!("reading {}", path.display())),
            Ok(true) => false,
            Ok(false) => {
                check_is_demo(path)?;
                fs::remove_dir_all(path)
                    .context(format!("removing the previous demo in {}", path.display()))?;
                fs::create_dir(path).context(format!("creating {}", path.display()))?;
                true
            }
        };
        fs::write(path.join(MARKER), MARKER_TEXT)
            .context(format!("writing {}", path.join(MARKER).display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            created,
        })
    }

    /// Deletes the demo database (the whole directory if the demo created
    /// it, else only its files).
    pub fn remove(self) -> Outcome {
        check_is_demo(&self.path)?;
        if self.created {
            return fs::remove_dir_all(&self.path)
                .context(format!("removing {}", self.path.display()));
        }
        for entry in fs::read_dir(&self.path).context(format!("reading {}", self.path.display()))? {
            let path = entry
                .context(format!("reading {}", self.path.display()))?
                .path();
            fs::remove_file(&path).context(format!("removing {}", path.display()))?;
        }
        Ok(())
    }
}

/// Fails unless `path` holds the marker and only files Sift writes.
fn check_is_demo(path: &Path) -> Outcome {
    let refuse = |why: &str| {
        Failure::usage(format!(
            "{} is not a demo database ({why}): not deleting it; pick another --dir",
            path.display()
        ))
    };
    if !path.join(MARKER).is_file() {
        return Err(refuse(&format!("no {MARKER} file")));
    }
    for entry in fs::read_dir(path).context(format!("reading {}", path.display()))? {
        let entry = entry.context(format!("reading {}", path.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if !is_file || !is_ours(&name) {
            return Err(refuse(&format!("it holds {name:?}")));
        }
    }
    Ok(())
}

/// Whether `name` is the marker or a file name Sift's engine writes.
fn is_ours(name: &str) -> bool {
    let base = name.strip_suffix(".tmp").unwrap_or(name);
    let numbered = |digits: &str| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    matches!(base, MARKER | "LOCK" | "CURRENT")
        || base.strip_prefix("MANIFEST-").is_some_and(numbered)
        || base.strip_suffix(".sst").is_some_and(numbered)
        || base.strip_suffix(".wal").is_some_and(numbered)
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn creates_wipes_its_own_and_refuses_others() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("demo");
        let dir = DemoDir::prepare(&path).unwrap();
        assert!(dir.created);
        fs::write(path.join("000001.sst"), "table").unwrap();
        fs::write(path.join("MANIFEST-000002"), "manifest").unwrap();
        // A second run wipes the first one's files.
        let dir = DemoDir::prepare(&path).unwrap();
        assert!(!path.join("000001.sst").exists());
        dir.remove().unwrap();
        assert!(!path.exists());

        // A directory without the marker, or with a foreign file, is left alone.
        fs::create_dir(&path).unwrap();
        fs::write(path.join("notes.txt"), "mine").unwrap();
        let refused = DemoDir::prepare(&path).unwrap_err();
        assert_eq!(refused.kind, crate::error::Kind::Usage);
        fs::write(path.join(MARKER), MARKER_TEXT).unwrap();
        assert!(DemoDir::prepare(&path).is_err());
        assert!(path.join("notes.txt").exists());
    }

    #[test]
    fn an_empty_directory_is_used_and_emptied_not_removed() {
        let root = tempfile::tempdir().unwrap();
        let dir = DemoDir::prepare(root.path()).unwrap();
        assert!(!dir.created);
        fs::write(root.path().join("000007.wal"), "log").unwrap();
        dir.remove().unwrap();
        assert!(root.path().exists());
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
    }

    #[test]
    fn knows_the_engine_file_names() {
        for name in [
            "LOCK",
            "CURRENT",
            "MANIFEST-000003",
            "000012.sst",
            "000013.wal",
            "CURRENT.tmp",
        ] {
            assert!(is_ours(name), "{name}");
        }
        for name in ["notes.txt", "x.sst", ".sst", "MANIFEST-", "data"] {
            assert!(!is_ours(name), "{name}");
        }
    }
}
