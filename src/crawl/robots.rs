//! robots.txt, fetched once per host and obeyed for every page request.
//!
//! As RFC 9309 says: a 4xx robots.txt means no rules (allow all); a 5xx or an
//! unreachable one means "try later" — after the fetcher's retries the host's
//! pages are not fetched and are reported as failed, never silently dropped.

use std::collections::HashMap;
use std::sync::Arc;

use texting_robots::Robot;
use tokio::sync::Mutex;

use super::fetch::{Fetcher, Validators};

#[derive(Clone)]
enum Rules {
    AllowAll,
    Parsed(Arc<Robot>),
    Unavailable(String),
}

/// Why a URL may not be fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// robots.txt disallows it.
    Disallowed,
    /// robots.txt could not be read (5xx, network): try again later.
    Unavailable(String),
}

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denied::Disallowed => write!(f, "disallowed by robots.txt"),
            Denied::Unavailable(why) => write!(f, "robots.txt unavailable ({why}); retry later"),
        }
    }
}

/// Per-host robots.txt rules, fetched on first use.
#[derive(Clone)]
pub struct RobotsCache {
    fetcher: Arc<Fetcher>,
    agent: String,
    hosts: Arc<Mutex<HashMap<String, Rules>>>,
}

impl RobotsCache {
    pub fn new(fetcher: Arc<Fetcher>, agent: String) -> RobotsCache {
        RobotsCache {
            fetcher,
            agent,
            hosts: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// `Ok(())` when `url` may be fetched; `Err(reason)` when robots.txt
    /// disallows it or could not be read.
    pub async fn allowed(&self, url: &str) -> Result<(), Denied> {
        let Ok(u) = url::Url::parse(url) else {
            return Err(Denied::Unavailable(format!("`{url}` is not a URL")));
        };
        let origin = u.origin().ascii_serialization();
        let rules = {
            // Held across the fetch so each host's robots.txt is fetched once.
            let mut hosts = self.hosts.lock().await;
            match hosts.get(&origin) {
                Some(r) => r.clone(),
                None => {
                    let r = self.fetch_rules(&origin).await;
                    hosts.insert(origin.clone(), r.clone());
                    r
                }
            }
        };
        match rules {
            Rules::AllowAll => Ok(()),
            Rules::Parsed(robot) => {
                if robot.allowed(url) {
                    Ok(())
                } else {
                    Err(Denied::Disallowed)
                }
            }
            Rules::Unavailable(why) => Err(Denied::Unavailable(why)),
        }
    }

    async fn fetch_rules(&self, origin: &str) -> Rules {
        let robots_url = format!("{origin}/robots.txt");
        let same_host = |u: &str| u.starts_with(origin);
        match self
            .fetcher
            .get(&robots_url, &Validators::default(), &same_host)
            .await
        {
            Ok(f) if f.status == 200 => match Robot::new(&self.agent, &f.body) {
                Ok(r) => Rules::Parsed(Arc::new(r)),
                Err(_) => Rules::AllowAll,
            },
            Ok(f) if (400..500).contains(&f.status) => Rules::AllowAll,
            Ok(f) => Rules::Unavailable(format!("HTTP {}", f.status)),
            Err(e) => Rules::Unavailable(e.message),
        }
    }
}
