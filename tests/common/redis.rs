//! A real `redis-server` for the tests of the shared stores.

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use super::REPLY_TIMEOUT;

/// A `redis-server` on a free loopback port, without persistence; killed
/// on drop.
pub struct Redis {
    child: Child,
    pub port: u16,
}

impl Redis {
    /// `None` (test skipped) when redis-server is missing and not required.
    pub fn start() -> Option<Self> {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Self::start_on(port)
    }

    pub fn start_on(port: u16) -> Option<Self> {
        let spawned = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(error) => {
                assert!(
                    std::env::var("ZEN_REQUIRE_REDIS").as_deref() != Ok("1"),
                    "ZEN_REQUIRE_REDIS=1 but redis-server cannot start: {error}"
                );
                eprintln!("skipped: redis-server is not installed ({error})");
                return None;
            }
        };
        let redis = Redis { child, port };
        let deadline = Instant::now() + REPLY_TIMEOUT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(redis)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn stop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}
