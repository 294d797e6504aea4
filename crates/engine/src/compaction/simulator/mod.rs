//! The planner against a model of the store (in the spirit of mini-lsm's
//! compaction simulator): random flushes of random key ranges into L0,
//! planned tasks applied to the shape by a small `apply` that really merges
//! the tables' contents (`model.rs`), and every invariant checked after
//! every step.

mod model;
mod scale;

use std::collections::BTreeSet;

use self::model::{KEY_SPACE, MAX_STEPS, Model, Rng, TARGET_TABLE_BYTES, encode};
use super::full::last_level;
use super::leveled::Leveled;
use super::shape::{Busy, KeyRange};
use super::{plan, plan_beside, plan_full};
use crate::options::CompactionStyle;

impl Model {
    /// Plans and applies tasks until the planner finds nothing to do.
    fn quiesce(&mut self, style: &CompactionStyle) {
        for _ in 0..MAX_STEPS {
            let Some(task) = plan(&self.levels, style, &Busy::none(), TARGET_TABLE_BYTES) else {
                return;
            };
            self.apply(&task);
            self.check(style);
        }
        panic!("the planner did not converge in {MAX_STEPS} steps");
    }

    /// Plans once with a random set of tables marked busy, and applies the
    /// task if it leaves them alone (it must).
    fn plan_around_busy(&mut self, style: &CompactionStyle, rng: &mut Rng) {
        let busy: BTreeSet<u64> = self
            .contents
            .keys()
            .copied()
            .filter(|_| rng.one_in(4))
            .collect();
        if let Some(task) = plan(
            &self.levels,
            style,
            &Busy::tables(busy.iter().copied()),
            TARGET_TABLE_BYTES,
        ) {
            let touched = task.inputs.iter().flat_map(|(_, ids)| ids);
            assert!(
                touched.clone().all(|id| !busy.contains(id)),
                "task {task:?} touches busy tables {busy:?}"
            );
            self.apply(&task);
            self.check(style);
        }
    }

    /// Plans up to `runners` tasks as that many compaction threads would,
    /// each beside the ones planned before it, then applies them in a
    /// random order: each must still be valid when it lands, whatever
    /// landed before it. `false` when there was nothing to do.
    fn run_concurrently(&mut self, style: &CompactionStyle, rng: &mut Rng, runners: usize) -> bool {
        let mut running = Vec::new();
        for _ in 0..runners {
            let Some(task) = plan_beside(&self.levels, style, &running, TARGET_TABLE_BYTES) else {
                break;
            };
            running.push(task);
        }
        self.side_by_side += usize::from(running.len() >= 2);
        let planned = !running.is_empty();
        while !running.is_empty() {
            let task = running.swap_remove(rng.below(running.len() as u64) as usize);
            self.apply(&task);
            self.check(style);
        }
        planned
    }

    /// Compacts `range` to the last level as the runner does, checking that
    /// it takes one task and leaves the range in one run of the last level.
    fn compact_range(&mut self, style: &CompactionStyle, range: Option<(u32, u32)>) {
        let bytes = range.map(|(lo, hi)| (encode(lo), encode(hi)));
        let borrowed = bytes.as_ref().map(|(lo, hi)| (&lo[..], &hi[..]));
        let mut steps = 0;
        loop {
            let tasks = plan_full(&self.levels, style, TARGET_TABLE_BYTES, borrowed);
            let Some(task) = tasks.first() else { break };
            assert_eq!(tasks.len(), 1);
            assert!(
                task.bottommost,
                "a closed range has nothing outside it: {task:?}"
            );
            steps += 1;
            assert!(
                steps <= 1,
                "plan_full still has work after its task: {task:?}"
            );
            self.apply(task);
            self.check(style);
        }
        let last = last_level(&self.levels);
        let mut holders = BTreeSet::new();
        for (i, level) in self.levels.iter().enumerate() {
            for run in &level.runs {
                let touched = run.tables.iter().any(|t| {
                    borrowed.is_none_or(|(lo, hi)| KeyRange::of(t).overlaps(&KeyRange { lo, hi }))
                });
                if touched {
                    holders.insert((i, run.id));
                }
            }
        }
        assert!(
            holders.len() <= 1,
            "range {range:?} left in runs {holders:?}"
        );
        assert!(
            holders.iter().all(|(level, _)| *level == last),
            "range {range:?} not in the last level {last}"
        );
    }
}

/// Runs `flushes` random flushes under `style`, quiescing after each, with
/// occasional busy-table plans and range compactions; returns the model.
fn simulate(style: &CompactionStyle, seed: u64, flushes: usize) -> Model {
    let mut rng = Rng(seed);
    let mut model = Model::default();
    for _ in 0..flushes {
        model.flush(&mut rng);
        model.check(style);
        if rng.one_in(3) {
            model.plan_around_busy(style, &mut rng);
        }
        if rng.one_in(8) {
            // Debt on several levels at once, worked off by several
            // compaction threads.
            for _ in 0..rng.below(12) {
                model.flush(&mut rng);
            }
            let runners = 2 + rng.below(3) as usize;
            while model.run_concurrently(style, &mut rng, runners) {}
        }
        model.quiesce(style);
        check_quiet(&model, style);
        if rng.one_in(40) {
            let range = if rng.one_in(3) {
                None
            } else {
                let lo = rng.below(u64::from(KEY_SPACE)) as u32;
                Some((lo, lo + rng.below(300) as u32))
            };
            model.compact_range(style, range);
            model.quiesce(style);
        }
    }
    model
}

/// What must hold once the planner has nothing left to do.
fn check_quiet(model: &Model, style: &CompactionStyle) {
    match *style {
        CompactionStyle::Leveled {
            l0_trigger,
            size_ratio,
            l1_bytes,
        } => {
            let leveled = Leveled::new(l0_trigger, size_ratio, l1_bytes);
            assert!(
                model
                    .levels
                    .first()
                    .is_none_or(|l0| l0.runs.len() < l0_trigger),
                "L0 unbounded"
            );
            for (i, level) in model.levels.iter().enumerate().skip(1) {
                assert!(
                    level.size() < leveled.target(i),
                    "level {i} over target after quiescing"
                );
            }
        }
        CompactionStyle::Tiered { runs_per_level } => {
            for (i, level) in model.levels.iter().enumerate() {
                assert!(
                    level.runs.len() < runs_per_level,
                    "level {i} has {} runs",
                    level.runs.len()
                );
            }
        }
    }
}

const LEVELED: CompactionStyle = CompactionStyle::Leveled {
    l0_trigger: 4,
    size_ratio: 4,
    l1_bytes: 4_000,
};
const TIERED: CompactionStyle = CompactionStyle::Tiered { runs_per_level: 3 };

#[test]
fn leveled_keeps_every_invariant_on_random_histories() {
    for seed in 0..12 {
        let model = simulate(&LEVELED, seed, 250);
        // The data outgrew L1: the simulation exercised deeper levels.
        assert!(
            model.levels.len() >= 3,
            "seed {seed}: only {} levels",
            model.levels.len()
        );
        assert!(
            model.side_by_side > 0,
            "seed {seed}: no tasks ran side by side"
        );
    }
}

#[test]
fn tiered_keeps_every_invariant_on_random_histories() {
    for seed in 100..112 {
        let model = simulate(&TIERED, seed, 250);
        assert!(
            model.levels.len() >= 4,
            "seed {seed}: only {} levels",
            model.levels.len()
        );
    }
}

#[test]
fn full_compaction_leaves_one_run_from_any_state() {
    for (seed, style) in (200..216).zip([LEVELED, TIERED].iter().cycle()) {
        let mut rng = Rng(seed);
        let mut model = Model::default();
        // Flushes only, no compaction: as messy as a shape gets.
        for _ in 0..30 {
            model.flush(&mut rng);
        }
        let lo = rng.below(u64::from(KEY_SPACE)) as u32;
        model.compact_range(style, Some((lo, lo + 50)));
        model.compact_range(style, None);
        let last = last_level(&model.levels);
        assert_eq!(
            model.levels.iter().filter(|l| !l.runs.is_empty()).count(),
            1
        );
        assert_eq!(model.levels[last].runs.len(), 1);
    }
}

#[test]
fn switching_from_tiered_to_leveled_repairs_the_levels() {
    let mut repaired = 0;
    for seed in 300..312 {
        let mut model = simulate(&TIERED, seed, 100);
        if model.levels.iter().skip(1).all(|l| l.runs.len() <= 1) {
            continue;
        }
        repaired += 1;
        let mut steps = 0;
        while let Some(task) = plan(&model.levels, &LEVELED, &Busy::none(), TARGET_TABLE_BYTES) {
            model.apply(&task);
            // Several runs per level are expected until the repair is done.
            model.check(&TIERED);
            steps += 1;
            assert!(steps < MAX_STEPS, "seed {seed}: no convergence");
        }
        check_quiet(&model, &LEVELED);
        model.check(&LEVELED);
    }
    assert!(
        repaired >= 3,
        "only {repaired} histories had levels to repair"
    );
}
