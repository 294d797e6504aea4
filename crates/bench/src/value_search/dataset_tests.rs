//! Tests of the generated shapes: answers against a model of the load,
//! cardinalities, record sizes, clustering and spread, golden records.

use std::collections::{BTreeMap, HashMap};

use super::*;

const SEED: u64 = 0x5eed;
const N: u64 = 20_000;

fn data(shape: Shape) -> Dataset {
    Dataset::new(shape, SEED, N).unwrap()
}

fn extract(data: &Dataset, record: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    data.extractor().extract(record, &mut |v| out = v.to_vec());
    out
}

/// The store after the load (last write of each key wins), grouped by the
/// extracted field.
fn model(data: &Dataset) -> BTreeMap<Vec<u8>, Vec<Vec<u8>>> {
    let mut store: BTreeMap<&[u8], &[u8]> = BTreeMap::new();
    for w in data.writes() {
        assert_eq!(
            extract(data, w.record),
            w.value,
            "the value is the indexed field"
        );
        store.insert(w.key, w.record);
    }
    let mut groups: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
    for (key, record) in store {
        groups
            .entry(extract(data, record))
            .or_default()
            .push(key.to_vec());
    }
    groups
}

#[test]
fn expected_answers_match_a_model_of_the_load() {
    for shape in Shape::ALL {
        let data = data(shape);
        let model = model(&data);
        assert_eq!(model.len() as u64, data.distinct(), "{shape}");
        let mut seen = 0;
        for id in 0..data.distinct {
            let text = data.table.value_text(id);
            let want = model.get(text.as_bytes()).cloned().unwrap_or_default();
            let got: Vec<Vec<u8>> = data.expected(id).map(<[u8]>::to_vec).collect();
            assert_eq!(got, want, "{shape} value {text}");
            seen += got.len() as u64;
        }
        assert_eq!(seen, N, "{shape}: every record in one group");
        for class in Class::ALL {
            for q in 0..200 {
                let query = data.query(class, 0, q);
                let stored = model.contains_key(query.value.as_bytes());
                assert_eq!(
                    stored,
                    class != Class::Absent,
                    "{shape} {class:?} {}",
                    query.value
                );
                if let Some(id) = query.id {
                    assert_eq!(data.table.value_text(id), query.value);
                }
            }
        }
    }
}

#[test]
fn a_tenth_of_the_records_is_rewritten_after_its_first_write() {
    for shape in Shape::ALL {
        let data = data(shape);
        let updates = data.write_count() - N;
        // Binomial(N, 0.1): sd 42; allow 5 sd.
        assert!(updates.abs_diff(N / 10) < 210, "{shape}: {updates}");
        let mut writes: HashMap<&[u8], u32> = HashMap::new();
        for w in data.writes() {
            *writes.entry(w.key).or_default() += 1;
        }
        assert_eq!(writes.len() as u64, N);
        assert!(writes.values().all(|&n| n <= 2));
    }
}

#[test]
fn cardinalities_are_as_described() {
    let small = data(Shape::Small);
    assert_eq!(small.distinct(), N * 9 / 10);

    let clustered = data(Shape::Clustered);
    let sizes: Vec<usize> = (0..clustered.distinct() as u32)
        .map(|id| clustered.expected(id).len())
        .collect();
    let (last, full) = sizes.split_last().unwrap();
    assert!(full.iter().all(|n| (50..=500).contains(n)), "{sizes:?}");
    assert!((1..=500).contains(last));
    let mean = N as f64 / sizes.len() as f64;
    assert!((225.0..=325.0).contains(&mean), "{mean}");

    let spread = data(Shape::Spread);
    assert_eq!(spread.distinct(), N / 100);
    assert!((0..200).all(|id| spread.expected(id).len() == 100));

    for (shape, distinct, top) in [
        (Shape::Zipf3, 3, 6.0 / 11.0),
        (Shape::Zipf20, 20, 0.2778),
        (Shape::Zipf16, 16, 0.2958),
        (Shape::Zipf105, 105, 0.1910),
    ] {
        let data = data(shape);
        assert_eq!(data.distinct(), distinct);
        let share = data.expected(0).len() as f64 / N as f64;
        // sd of a share of 20,000 draws is below 0.0036.
        assert!((share - top).abs() < 0.02, "{shape}: {share}");
        let frequent = (0..1_000)
            .filter(|&q| data.query(Class::Frequency, 0, q).id == Some(0))
            .count() as f64
            / 1_000.0;
        assert!((frequent - top).abs() < 0.08, "{shape}: {frequent}");
    }

    let hitters = data(Shape::Hitters);
    // 40% of the records over N / 4 rare ids: about 1 - e^-1.6 = 80% drawn.
    let rare = hitters.distinct() - 3;
    assert!((3_700..=4_300).contains(&rare), "{rare}");
}

#[test]
fn the_first_zipf_value_is_the_most_frequent() {
    for shape in [Shape::Zipf3, Shape::Zipf16, Shape::Zipf20, Shape::Zipf105] {
        let data = data(shape);
        let first = data.expected(0).len();
        assert!(
            (1..data.distinct() as u32).all(|id| data.expected(id).len() < first),
            "{shape}"
        );
    }
}

#[test]
fn three_heavy_hitters_hold_sixty_percent_and_the_rest_are_rare() {
    let data = data(Shape::Hitters);
    for (id, share) in [(0, 0.3), (1, 0.2), (2, 0.1)] {
        let got = data.expected(id).len() as f64 / N as f64;
        // sd of a share of 20,000 draws is below 0.0033.
        assert!((got - share).abs() < 0.02, "tag {id}: {got}");
    }
    let rare: Vec<usize> = (3..data.distinct)
        .map(|id| data.expected(id).len())
        .filter(|&n| n > 0)
        .collect();
    let held = rare.iter().sum::<usize>() as f64 / N as f64;
    assert!((held - 0.4).abs() < 0.02, "{held}");
    // Poisson(1.6) given at least one: 2.0 on average, 95% at most 4.
    let few = rare.iter().filter(|&&n| n <= 4).count() as f64 / rare.len() as f64;
    assert!(few > 0.9, "{few}");
    assert!(rare.iter().all(|&n| n <= 12), "{:?}", rare.iter().max());
}

#[test]
fn record_sizes_are_as_described() {
    for (shape, low, high) in [
        (Shape::Small, 27.0, 32.0),
        (Shape::Clustered, 75.0, 90.0),
        (Shape::Spread, 32.0, 40.0),
        (Shape::Zipf3, 50.0, 75.0),
        (Shape::Zipf20, 50.0, 75.0),
        (Shape::Zipf16, 50.0, 75.0),
        (Shape::Zipf105, 50.0, 75.0),
        (Shape::Hitters, 50.0, 75.0),
    ] {
        let mean = data(shape).mean_record_bytes();
        assert!((low..=high).contains(&mean), "{shape}: {mean}");
    }
}

/// Ranks, in key order, of the keys of value `id`.
fn ranks(data: &Dataset, id: u32) -> Vec<usize> {
    let mut sorted: Vec<&[u8]> = data.keys.iter().map(Vec::as_slice).collect();
    sorted.sort_unstable();
    data.expected(id)
        .map(|k| sorted.binary_search(&k).unwrap())
        .collect()
}

#[test]
fn clustered_values_are_contiguous_and_spread_values_cover_the_keys() {
    let clustered = data(Shape::Clustered);
    for id in 0..clustered.distinct() as u32 {
        let r = ranks(&clustered, id);
        assert_eq!(
            r.last().unwrap() - r.first().unwrap() + 1,
            r.len(),
            "value {id}"
        );
    }
    let spread = data(Shape::Spread);
    for id in 0..50 {
        let r = ranks(&spread, id);
        // 100 uniform ranks: the extremes fall in the outer 10% with
        // probability 1 - 0.9^100 each.
        assert!(
            r[0] < N as usize / 10 && r[99] > N as usize * 9 / 10,
            "{id}"
        );
    }
}

#[test]
fn primary_keys_are_text_and_distinct() {
    for shape in Shape::ALL {
        let data = data(shape);
        let keys: std::collections::HashSet<&Vec<u8>> = data.keys.iter().collect();
        assert_eq!(keys.len() as u64, N);
        assert!(
            data.keys
                .iter()
                .all(|k| k.iter().all(u8::is_ascii_alphanumeric))
        );
    }
}

#[test]
fn golden_first_writes() {
    let first = |shape| {
        let data = Dataset::new(shape, 1, 1_000).unwrap();
        let w = data.writes().next().unwrap();
        format!(
            "{} {}",
            String::from_utf8_lossy(w.key),
            String::from_utf8_lossy(w.record)
        )
    };
    let golden: Vec<String> = Shape::ALL.iter().map(|&s| first(s)).collect();
    assert_eq!(
        golden, GOLDEN,
        "the generators changed: recorded runs are no longer comparable"
    );
}

const GOLDEN: [&str; 8] = [
    "7c42caed337e117d YR1S27GS,11,758.49,WH12,2024-04",
    r#"c0000001o000011 {"customer":"C0000001","sku":"SKU-04821","qty":4,"total":277.91,"state":"delivered"}"#,
    "482c985a63f917f3 2024-04-14,WN,1368,N103AA,DFW,JFK,71",
    r#"ad936c4c541fa609 {"user":"u8405358","status":"active","plan":"pro","logins":20}"#,
    r#"5a1c9d883d613214 {"user":"u5618130","country":"IT","plan":"team","logins":419}"#,
    r#"2b4abf4eb0ed55c3 {"user":"u2473530","region":"us-east-2","plan":"pro","logins":373}"#,
    r#"7146e33f0d2e6841 {"user":"u0415849","city":"city-003","plan":"free","logins":321}"#,
    r#"a45cd4429b32fc37 {"session":"s881f8535","tag":"promo-0000232","device":"ios","ms":1065}"#,
];
