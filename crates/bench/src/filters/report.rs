//! Output: the run header, the human table, and JSON lines.

use super::measure::Summary;
use serde::Serialize;

/// One JSON line per filter. Exactly these fields, so consumers can rely on
/// the shape; the spread of the timings is in the human table only.
#[derive(Serialize, Debug, PartialEq)]
pub struct JsonRow<'a> {
    /// Contender name.
    pub filter: &'a str,
    /// Member keys.
    pub n: usize,
    /// Measured memory of the structure, bits per member key.
    pub bits_per_key: f64,
    /// Measured false-positive rate over the non-member probes (a fraction).
    pub fpr: f64,
    /// Members the filter rejected (worst repetition).
    pub false_negatives: u64,
    /// Median build time, ns per key.
    pub build_ns_per_key: f64,
    /// Median positive query time, ns.
    pub query_pos_ns: f64,
    /// Median negative query time, ns.
    pub query_neg_ns: f64,
    /// Median negative query time on prehashed probes (the probe alone),
    /// ns; `null` for a filter that takes only keys.
    pub probe_neg_ns: Option<f64>,
}

/// The JSON line for `s`.
pub fn json_line(s: &Summary) -> anyhow::Result<String> {
    Ok(serde_json::to_string(&JsonRow {
        filter: s.filter,
        n: s.n,
        bits_per_key: s.bits_per_key,
        fpr: s.fpr,
        false_negatives: s.false_negatives,
        build_ns_per_key: s.build_ns_per_key.median,
        query_pos_ns: s.query_pos_ns.median,
        query_neg_ns: s.query_neg_ns.median,
        probe_neg_ns: s.probe_neg_ns.map(|t| t.median),
    })?)
}

/// Column headers of the human table, units included.
const HEADERS: [&str; 10] = [
    "filter",
    "bits/key",
    "FPR %",
    "formula FPR %",
    "false neg",
    "build ns/key",
    "pos query ns",
    "neg query ns",
    "neg probe ns",
    "spread %",
];

/// The human table: one row per filter, timings are medians; "spread" is
/// the largest `(max - min) / median` of the three query and build
/// timings; "neg probe" is the negative query on prehashed probes.
pub fn table(summaries: &[Summary]) -> String {
    let cells: Vec<Vec<String>> = summaries
        .iter()
        .map(|s| {
            vec![
                s.filter.to_owned(),
                format!("{:.2}", s.bits_per_key),
                format!("{:.3}", s.fpr * 100.0),
                s.expected_fpr
                    .map_or_else(|| "-".to_owned(), |p| format!("{:.3}", p * 100.0)),
                s.false_negatives.to_string(),
                format!("{:.1}", s.build_ns_per_key.median),
                format!("{:.1}", s.query_pos_ns.median),
                format!("{:.1}", s.query_neg_ns.median),
                s.probe_neg_ns
                    .map_or_else(|| "-".to_owned(), |t| format!("{:.1}", t.median)),
                format!(
                    "{:.0}",
                    100.0
                        * [s.build_ns_per_key, s.query_pos_ns, s.query_neg_ns]
                            .iter()
                            .map(|t| t.relative_range())
                            .fold(0.0, f64::max)
                ),
            ]
        })
        .collect();
    render(&HEADERS, &cells)
}

/// Aligns `rows` under `headers`: the first column left-aligned, the others
/// right-aligned, two spaces between columns, a rule under the header.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.zip(&widths).enumerate() {
            let pad = w.saturating_sub(cell.chars().count());
            if i == 0 {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str("  ");
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.trim_end().to_owned()
    };
    let mut out = line(&mut headers.iter().copied());
    out.push('\n');
    out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
    out.push('\n');
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
        out.push('\n');
    }
    out
}

/// Prints the rows of a run: one JSON object per line with `json`, else
/// the table; then the load average, to stderr, so the reader can judge
/// the noise.
pub fn emit<R>(
    json: bool,
    rows: &[R],
    to_json: impl Fn(&R) -> anyhow::Result<String>,
    table: impl FnOnce(&[R]) -> String,
) -> anyhow::Result<()> {
    if json {
        for row in rows {
            println!("{}", to_json(row)?);
        }
    } else {
        print!("{}", table(rows));
    }
    eprintln!("load average at end: {}", load_average());
    Ok(())
}

/// The 1-, 5- and 15-minute load averages from `/proc/loadavg`, as `uptime`
/// prints them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unavailable".to_owned())
}

/// The CPU model from `/proc/cpuinfo` and the cores this process may use.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    format!("{model}, {cores} cores available")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::measure::Spread;

    fn summary() -> Summary {
        let t = |x| Spread {
            median: x,
            min: x * 0.9,
            max: x * 1.1,
        };
        Summary {
            filter: "sift-standard",
            ours: true,
            n: 1_000_000,
            bits_per_key: 10.0,
            fpr: 0.00819,
            expected_fpr: Some(0.00819),
            detail: String::new(),
            false_negatives: 0,
            build_ns_per_key: t(20.0),
            query_pos_ns: t(10.0),
            query_neg_ns: t(5.0),
            probe_neg_ns: Some(t(2.0)),
        }
    }

    #[test]
    fn json_line_has_exactly_the_documented_fields() {
        let line = json_line(&summary()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        let object = value.as_object().unwrap();
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "bits_per_key",
                "build_ns_per_key",
                "false_negatives",
                "filter",
                "fpr",
                "n",
                "probe_neg_ns",
                "query_neg_ns",
                "query_pos_ns"
            ]
        );
        assert_eq!(object["filter"], "sift-standard");
        assert_eq!(object["n"], 1_000_000);
        assert_eq!(object["query_neg_ns"], 5.0);
        assert!(!line.contains('\n'));
    }

    #[test]
    fn render_aligns_columns() {
        let rows = vec![
            vec!["a".to_owned(), "1.5".to_owned()],
            vec!["longer".to_owned(), "10.25".to_owned()],
        ];
        let out = render(&["name", "x"], &rows);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "name        x",
                "-------------",
                "a         1.5",
                "longer  10.25"
            ]
        );
    }

    #[test]
    fn table_shows_percentages_and_spread() {
        let out = table(&[summary()]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("filter"));
        assert!(lines[0].ends_with("spread %"));
        let cells: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "sift-standard",
                "10.00",
                "0.819",
                "0.819",
                "0",
                "20.0",
                "10.0",
                "5.0",
                "2.0",
                "20"
            ]
        );
    }
}
