//! What `sift-bench db` runs: the read and threaded write workloads
//! `--workloads` selects, with the settings, keys and thread counts every
//! engine gets.

use anyhow::bail;

use super::engine::Settings;
use super::workload::{Keys, Workload};

/// What every engine runs.
#[derive(Clone, Copy, Debug)]
pub struct Plan<'a> {
    /// The engines' settings.
    pub settings: &'a Settings,
    /// The main store's keys (the scan stores hold as many of their own).
    pub keys: &'a Keys,
    /// The read workloads, in the order of [`Workload::READS`].
    pub workloads: &'a [Workload],
    /// The threaded write workloads, in the order of [`Workload::WRITES`].
    pub writes: &'a [Workload],
    /// The thread counts each read and threaded write workload runs at, in
    /// this order.
    pub threads: &'a [usize],
}

/// The workloads `--workloads` names (`all`: every one), reads in the
/// order of [`Workload::READS`] then threaded writes in that of
/// [`Workload::WRITES`]; none named: those that run by default
/// ([`Workload::by_default`]).
pub fn select(names: &[String]) -> anyhow::Result<Vec<Workload>> {
    let known: Vec<&str> = selectable().map(Workload::name).collect();
    if let Some(bad) = names
        .iter()
        .find(|w| *w != "all" && !known.contains(&w.as_str()))
    {
        bail!(
            "unknown workload {bad:?}: choose from {}, or all",
            known.join(", ")
        );
    }
    let all = names.iter().any(|n| n == "all");
    Ok(selectable()
        .filter(|w| {
            if names.is_empty() {
                w.by_default()
            } else {
                all || names.iter().any(|n| n == w.name())
            }
        })
        .collect())
}

/// Every workload `--workloads` can name, in the order they run.
fn selectable() -> impl Iterator<Item = Workload> {
    Workload::READS.into_iter().chain(Workload::WRITES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_are_selected_by_name_default_or_all() -> anyhow::Result<()> {
        let names = |list: &[&str]| -> anyhow::Result<Vec<&'static str>> {
            let list: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
            Ok(select(&list)?.into_iter().map(Workload::name).collect())
        };
        let default = names(&[])?;
        assert_eq!(default.len(), 7, "{default:?}");
        assert!(default.contains(&"seekrandombounded"), "{default:?}");
        assert!(!default.contains(&"seekempty16"), "{default:?}");
        assert!(!default.contains(&"fillsync"), "{default:?}");
        assert_eq!(
            names(&["all"])?.len(),
            Workload::READS.len() + Workload::WRITES.len()
        );
        assert_eq!(
            names(&["prefixmissing", "seekempty16"])?,
            ["seekempty16", "prefixmissing"]
        );
        assert_eq!(
            names(&["fillsync", "readrandom", "fillthreads"])?,
            ["readrandom", "fillthreads", "fillsync"]
        );
        let bad = format!("{:#}", select(&["seekempty".to_owned()]).unwrap_err());
        assert!(bad.contains("seekempty1024, prefixhit"), "{bad}");
        assert!(
            bad.contains("prefixmissing, fillthreads, fillsync"),
            "{bad}"
        );
        Ok(())
    }
}
