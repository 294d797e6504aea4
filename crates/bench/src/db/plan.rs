//! What `sift-bench db` runs: the read workloads `--workloads` selects,
//! with the settings, keys and thread counts every engine gets.

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
    /// The thread counts each read workload runs at, in this order.
    pub threads: &'a [usize],
}

/// The read workloads `--workloads` names (`all`: every one), in the order
/// of [`Workload::READS`]; none named: those that run by default
/// ([`Workload::by_default`]).
pub fn select(names: &[String]) -> anyhow::Result<Vec<Workload>> {
    let known: Vec<&str> = Workload::READS.iter().map(|w| w.name()).collect();
    if let Some(bad) = names
        .iter()
        .find(|w| *w != "all" && !known.contains(&w.as_str()))
    {
        bail!(
            "unknown read workload {bad:?}: choose from {}, or all",
            known.join(", ")
        );
    }
    let all = names.iter().any(|n| n == "all");
    Ok(Workload::READS
        .into_iter()
        .filter(|w| {
            if names.is_empty() {
                w.by_default()
            } else {
                all || names.iter().any(|n| n == w.name())
            }
        })
        .collect())
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
        assert_eq!(names(&["all"])?.len(), Workload::READS.len());
        assert_eq!(
            names(&["prefixmissing", "seekempty16"])?,
            ["seekempty16", "prefixmissing"]
        );
        let bad = format!("{:#}", select(&["seekempty".to_owned()]).unwrap_err());
        assert!(bad.contains("seekempty1024, prefixhit"), "{bad}");
        Ok(())
    }
}
