//! Transactions on the database: the [`Transaction`] handle
//! (`transaction.rs`), its range scan ([`TxnIter`], `iter.rs`), and the
//! database's side of beginning and committing one (`commit.rs`). What they
//! are built from and what does not need the hub (the commit log, the
//! Bloom-fronted key sets, the counters) lives in `txn/`.

mod commit;
mod iter;
mod transaction;

pub use iter::TxnIter;
pub use transaction::Transaction;
