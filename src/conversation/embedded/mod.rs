//! Threads in one SQLite file: they survive restarts, and every process on
//! the machine that opens the same file sees the same threads (a `zenmode
//! exec` can continue what a server started).
//!
//! Several processes may write at once: the file is in WAL mode, writers
//! wait for each other (busy timeout), and every change is one `IMMEDIATE`
//! transaction that checks the limits and writes together, so two appends
//! to one thread never lose a turn or pass the turn cap. The limits are the
//! in-memory store's: idle expiry, turns per thread, thread count and total
//! bytes (least recently updated threads go first).
//!
//! The file can change under a running process. Before every batch of work
//! each connection's thread checks that the files can still be written
//! (else the call fails with `Unavailable`: SQLite would fault on its
//! mapping of `-shm` and end the process) and that the file at the path is
//! still the one it has open (device and inode); a file removed or
//! replaced is opened again at the path, created if need be. A write is
//! reported saved only if, after its commit, the file at the path is still
//! the one written.
//!
//! The files, from the top down (each uses only files below it):
//!
//! - `store`: the [`EmbeddedStore`] and its three operations;
//! - `worker`: the thread that owns a connection and commits the jobs
//!   waiting for it in one transaction;
//! - `connection`: a connection kept on the file now at the path, and the
//!   thread that checkpoints its WAL;
//! - `rows`: the SQL of threads, turns and ended ids, within the limits;
//! - `schema`: opening the file, its tables, and the move from the first
//!   layout;
//! - `file_checks`: the checks against SIGBUS: the files can be written,
//!   and are still the ones opened;
//! - `health`: a failure that lasts logged once, and its end once.

mod connection;
mod file_checks;
mod health;
mod rows;
mod schema;
mod store;
#[cfg(test)]
mod tests;
mod worker;

pub use store::EmbeddedStore;
