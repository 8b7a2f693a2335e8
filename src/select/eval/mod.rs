//! `zenmode eval`: scores the selection ranking on a labeled set.
//!
//! A labels file has one JSON object per line:
//! `{"query": "...", "expected": "mode", "acceptable": ["other_mode"]}`
//! (`acceptable` optional; blank lines are skipped); `"expected": null`
//! marks a query that no mode of the catalog fits. Every named mode must
//! exist in the catalog, so a typo fails loudly instead of scoring as a miss.
//!
//! [`hold_out`] makes no-fit queries out of any labeled set: it removes a
//! share of the expected modes from the catalog, so their queries have no
//! right answer left, only neighbours.
//!
//! The report gives top-1 (exactly the expected mode first), top-1 counting
//! acceptable modes too, top-3 and mean reciprocal rank (of the expected
//! mode; a mode not ranked at all counts 0), per expected mode, the most
//! frequent confusions, and how the confidence behaves: how often the select
//! tool would flag a reply as low-confidence or fall back to the general
//! mode, and the expected calibration error (the gap between the stated
//! confidence and the observed accuracy, averaged over confidence bins).
//!
//! Labels may name `traps`: tools that would do harm if run for the query
//! (a destructive neighbour of the right one). The report counts the queries
//! whose `next_call` (the mode the select reply hands to the execute tool) is
//! one of their traps, and lists them. With [`evaluate_with`] the next call
//! is read from the real select reply; [`evaluate`] takes the first-ranked
//! mode. It also times each ranking (and each reply) on the built index:
//! the latency of select in a running server, p50 and p99.
//!
//! The served reply is scored apart from the ranking: its mode's top-1
//! (a fallback to `chat` counts as the reply's answer), recall of the modes
//! it shows, and, for labels marked `"benign": true` (requests that ask
//! for no change), how many get a `next_call` to a tool that changes
//! state ([`crate::select::changes_state`]: annotations first, else its
//! name and description, the rule the select holds such tools back by).
//!
//! The labeled sets are read and checked in `labels.rs`, scored in
//! `metrics.rs` and printed in `report.rs`, each file using only the ones
//! before it. The command line around them (`zenmode eval`'s arguments)
//! lives with the other subcommands in `src/cli/`.

mod labels;
mod metrics;
mod report;

pub use labels::{Label, LabelsError, check_labels, hold_out, parse_labels, read_labels};
pub use metrics::{
    ChangingCall, Latency, Miss, ReliabilityBin, Report, Scores, Separation, Served, ServedReply,
    TrapTaken, evaluate, evaluate_with, separation,
};
pub use report::{to_json, to_table};
