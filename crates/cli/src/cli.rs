//! The command line: global flags and one variant per subcommand.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use sift_raft::Limits;

/// Where `--db` points when it is not given.
pub const DEFAULT_DB: &str = "./sift-data";

/// `sift`: read, write, import, search by value, inspect and verify a Sift
/// database.
///
/// Exit codes: 0 ok, 1 not found (a key, an index, a search without
/// results), 2 usage (bad arguments or input), 3 corruption or I/O.
#[derive(Parser, Debug)]
#[command(name = "sift", version, about, long_about)]
pub struct Cli {
    /// The database directory.
    #[arg(long, global = true, default_value = DEFAULT_DB)]
    pub db: PathBuf,

    /// Print data as JSON (one object per line for listings).
    #[arg(long, global = true)]
    pub json: bool,

    /// Keys and values are hex, both in arguments and in output (for binary data).
    #[arg(long, global = true)]
    pub hex: bool,

    /// A node of a replicated cluster (`host:port`): put, get, delete, scan
    /// and cluster go through it instead of a local database.
    #[arg(long, global = true)]
    pub server: Option<String>,

    /// A file holding the cluster's token (its contents, trimmed; not
    /// readable by every user): `serve` refuses requests without it, and
    /// commands with --server send it.
    #[arg(long, global = true, value_name = "PATH", env = "SIFT_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Stores VALUE under KEY (synced before `sift` exits).
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Prints the value stored under KEY (exit 1 if there is none).
    Get {
        /// The key.
        key: String,
    },
    /// Deletes KEY (deleting an absent key is not an error).
    Delete {
        /// The key.
        key: String,
    },
    /// Lists entries in key order.
    Scan(ScanArgs),
    /// Searches by value through a value index (exit 1 if nothing matches).
    Find(FindArgs),
    /// Loads records from a CSV or JSON-lines file.
    Import(ImportArgs),
    /// Writes every entry (or a prefix's) as JSON lines or CSV; keys or
    /// values that are not UTF-8 need --hex (exit 2 without it).
    Export(ExportArgs),
    /// Adds, lists or drops value indexes.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Per-level tables, bytes and filters, and the value indexes.
    Stats(StatsArgs),
    /// Checks every checksum and every filter; exit 3 on any problem.
    Verify,
    /// Prints a table file's properties and entries.
    DumpSst(DumpSstArgs),
    /// Compacts the whole database into its last level.
    Compact,
    /// Loads a demo data set and shows what Sift's filters do with it.
    Demo(crate::demo::DemoArgs),
    /// Runs a node of a replicated cluster (until interrupted).
    ///
    /// With --token-file, every request but GET /health must carry the
    /// token (give every node and client the same); without it, anyone
    /// who can reach the listening address can read and write every key,
    /// change the cluster's members, and act as a peer. Nothing is
    /// encrypted, the token included: put TLS in front (a reverse proxy),
    /// or listen on a private network or loopback only.
    Serve(ServeArgs),
    /// Forms a cluster, shows it, or changes its members (with --server).
    #[command(subcommand)]
    Cluster(ClusterCommand),
}

/// `sift serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The node's id in the cluster (a positive integer).
    #[arg(long)]
    pub id: u64,
    /// The address to listen on (peers and clients use it).
    #[arg(long)]
    pub listen: std::net::SocketAddr,
    /// Declare value index NAME on the JSON field FIELD of the values
    /// (NAME=FIELD, repeatable; FIELD may be a JSON Pointer such as
    /// /user/name). Every node must be started with the same; `sift
    /// cluster index add` defines one on every node through the log instead.
    #[arg(long = "index", value_name = "NAME=FIELD")]
    pub indexes: Vec<String>,
    /// Heartbeat interval in milliseconds (default 1,000: a new leader
    /// within about 3 to 4.5 s of a failure). It is also the time one
    /// replication message may take, so it must cover sending the largest
    /// write to a follower: give 1500 for values near the 64 MiB limit.
    #[arg(long, value_name = "MS", default_value_t = sift_raft::DEFAULT_HEARTBEAT_MS)]
    pub heartbeat_ms: u64,
    /// Build a snapshot every N applied entries and keep N entries of log
    /// behind it; a follower further behind catches up by snapshot
    /// (default: every 10,000, keeping 1,000).
    #[arg(long, value_name = "N")]
    pub snapshot_every: Option<u64>,
    /// The data's memtable size in MiB; one more may wait for its flush
    /// (default 16).
    #[arg(long, value_name = "MIB", default_value_t = 16)]
    pub memtable_mib: u64,
    /// The data's block cache in MiB (default 16). The node's memory is
    /// about 100 MiB plus twice the memtable plus the cache.
    #[arg(long, value_name = "MIB", default_value_t = 16)]
    pub cache_mib: u64,
    /// Read the data's table files around the page cache (O_DIRECT), so
    /// that the node's memory is what its caches hold; refused by a file
    /// system without it (tmpfs).
    #[arg(long)]
    pub direct_reads: bool,
    /// The most connections open at once; more wait until one closes.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_connections)]
    pub max_connections: usize,
    /// Milliseconds a connection may take to send a request's headers, or
    /// stay idle between requests, before it is closed.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().header_read_timeout.as_millis() as u64)]
    pub header_timeout_ms: u64,
    /// The most client requests (writes and reads) served at once; more
    /// are refused, and clients retry.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_client_requests)]
    pub max_client_requests: usize,
    /// The most MiB of request bodies held at once (at least 96: one
    /// largest request); a client request past it is refused.
    #[arg(long, value_name = "MIB", default_value_t = Limits::default().max_body_bytes_in_flight as u64 >> 20)]
    pub max_request_mib: u64,
}

/// `sift cluster`.
#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Forms a new cluster of MEMBERS at the node --server names (one of them).
    Init {
        /// The members: `ID=HOST:PORT`, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        members: Vec<String>,
    },
    /// Prints the leader, members and last applied index (one JSON object with --json).
    Status,
    /// Adds a non-voting member, which receives the log; returns once it caught up.
    AddLearner {
        /// Its id.
        #[arg(long)]
        id: u64,
        /// Its address.
        #[arg(long)]
        addr: String,
    },
    /// Makes VOTERS (members or learners) the voting members.
    ChangeMembership {
        /// The voters' ids, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        voters: Vec<u64>,
    },
    /// Removes a node (voter or learner) from the cluster; then stop it and delete its directory.
    RemoveNode {
        /// Its id.
        #[arg(long)]
        id: u64,
    },
    /// Defines or drops a value index on every node, through the log.
    #[command(subcommand)]
    Index(ClusterIndexCommand),
}

/// `sift cluster index`.
#[derive(Subcommand, Debug)]
pub enum ClusterIndexCommand {
    /// Defines value index NAME on the JSON field FIELD of the values (FIELD may be a JSON Pointer
    /// such as /user/name); `find --index NAME` then searches it through any node.
    Add {
        /// The index's name.
        name: String,
        /// The JSON field.
        #[arg(long)]
        field: String,
    },
    /// Drops value index NAME.
    Drop {
        /// The index's name.
        name: String,
    },
}

/// `sift scan`.
#[derive(Args, Debug)]
pub struct ScanArgs {
    /// Only keys starting with this prefix.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub prefix: Option<String>,
    /// First key (inclusive), also with --reverse; not after --to.
    #[arg(long)]
    pub from: Option<String>,
    /// End key (exclusive), also with --reverse.
    #[arg(long)]
    pub to: Option<String>,
    /// Largest key first.
    #[arg(long)]
    pub reverse: bool,
    /// At most this many entries.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Print keys only.
    #[arg(long)]
    pub keys_only: bool,
}

/// `sift find`.
#[derive(Args, Debug)]
pub struct FindArgs {
    /// The value index to search.
    #[arg(long)]
    pub index: String,
    /// The value searched for (as the index's extractor yields it).
    pub value: String,
    /// How to search the value filters.
    #[arg(long, value_enum, default_value_t = FindMethod::Auto)]
    pub method: FindMethod,
    /// Print what the search did (filters probed, tables scanned) after the results.
    #[arg(long)]
    pub explain: bool,
    /// At most this many results (1 or more).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Print keys only.
    #[arg(long)]
    pub keys_only: bool,
}

/// How `sift find` searches.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindMethod {
    /// The planner picks the cheapest method for the current tables.
    Auto,
    /// Read every table (no filters): the baseline.
    Scan,
    /// Probe every table's value filter, read those that say "maybe".
    BloomScan,
    /// Descend the Bloom-filter hierarchy over the value filters.
    Hierarchy,
    /// AND the bit-sliced rows of every value filter.
    Flat,
}

/// Input formats of `sift import`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportFormat {
    /// Comma-separated with a header row.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

/// `sift import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The file to read (`-` for standard input).
    pub file: PathBuf,
    /// Its format.
    #[arg(long, value_enum)]
    pub format: ImportFormat,
    /// The column(s) forming each record's key, comma-separated; several
    /// columns are joined with `--key-separator`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub key: Vec<String>,
    /// Joins the columns of a composite key.
    #[arg(long, default_value = "/")]
    pub key_separator: String,
    /// Store only this column as the value (default: the whole record, as a
    /// JSON object). With `--hex`, the column holds hex.
    #[arg(long)]
    pub value: Option<String>,
    /// Declare value index NAME on column COL before loading (NAME=COL,
    /// repeatable; COL may be a JSON Pointer such as /user/name).
    #[arg(long = "index", value_name = "NAME=COL")]
    pub indexes: Vec<String>,
    /// Records per write batch.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
}

/// Output formats of `sift export`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// `{"key": ..., "value": ...}` per line.
    Jsonl,
    /// A `key,value` header, then one row per entry.
    Csv,
}

/// `sift export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The file to write (default: standard output); not inside --db. It
    /// is replaced only once the export is complete.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Its format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    pub format: ExportFormat,
    /// Only keys starting with this prefix.
    #[arg(long)]
    pub prefix: Option<String>,
}

/// `sift index ...`.
#[derive(Subcommand, Debug)]
pub enum IndexCommand {
    /// Declares a value index and fills it for the existing tables.
    Add(IndexAddArgs),
    /// Lists the value indexes.
    List,
    /// Drops a value index.
    Drop {
        /// The index's name.
        name: String,
    },
}

/// `sift index add`: what the index extracts from each value.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("extractor").required(true)
    .args(["field", "column", "whole_value"])))]
pub struct IndexAddArgs {
    /// The index's name.
    pub name: String,
    /// A field of JSON values: a name (`origin`) or a JSON Pointer (`/user/name`).
    #[arg(long)]
    pub field: Option<String>,
    /// A column (0 first) of delimited values.
    #[arg(long)]
    pub column: Option<usize>,
    /// The byte between columns, with `--column`.
    #[arg(long, default_value = ",", requires = "column")]
    pub separator: String,
    /// The whole value.
    #[arg(long)]
    pub whole_value: bool,
    /// Bits of each table's value filter (default: sized from the table's entries).
    #[arg(long)]
    pub leaf_bits: Option<u64>,
}

/// `sift stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Absent keys to probe for the observed false-positive rate per level
    /// (0: shape only). Each is an existing key with a suffix, so it lands
    /// inside a table's key range and reaches its filter.
    #[arg(long, default_value_t = 10_000)]
    pub sample: u64,
}

/// `sift dump-sst`.
#[derive(Args, Debug)]
pub struct DumpSstArgs {
    /// The table file (`NNNNNN.sst` in a database directory).
    pub file: PathBuf,
    /// Properties only, no entries.
    #[arg(long)]
    pub summary: bool,
    /// At most this many entries.
    #[arg(long)]
    pub limit: Option<usize>,
}
