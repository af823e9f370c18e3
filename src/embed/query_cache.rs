//! A bounded memory of query vectors, so that a question asked again (an
//! agent retrying, several agents on one project, a tool called twice
//! with the same words) costs a hash lookup instead of a transformer pass.
//!
//! First in, first out: cheaper to keep than recency order and, for a
//! server's stream of questions, about as good. The lock is held for the
//! lookup and the insertion only, never while a vector is computed; two
//! threads missing on the same text both compute it, and the second
//! insertion is a no-op.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Question texts → their unit vectors, at most `capacity` of them.
#[derive(Debug)]
pub struct QueryCache {
    capacity: usize,
    state: Mutex<State>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// What a [`QueryCache`] has done since it was made (for `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryCacheStats {
    /// Questions answered from memory.
    pub hits: u64,
    /// Questions whose vector was computed.
    pub misses: u64,
    /// Vectors kept now.
    pub kept: usize,
}

#[derive(Debug, Default)]
struct State {
    vectors: HashMap<String, Arc<[f32]>>,
    /// Keys in insertion order, oldest first.
    order: VecDeque<String>,
}

impl QueryCache {
    /// An empty cache of at most `capacity` vectors (0 keeps nothing).
    pub fn new(capacity: usize) -> QueryCache {
        QueryCache {
            capacity,
            state: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Hits, misses and size so far.
    pub fn stats(&self) -> QueryCacheStats {
        QueryCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            kept: self.len(),
        }
    }

    /// The vector of `text`: the one kept, or `compute(text)`, kept.
    pub fn get_or_compute(&self, text: &str, compute: impl FnOnce(&str) -> Vec<f32>) -> Arc<[f32]> {
        if let Some(v) = self.lock().vectors.get(text) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Arc::clone(v);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let v: Arc<[f32]> = compute(text).into();
        if self.capacity > 0 {
            let mut s = self.lock();
            if !s.vectors.contains_key(text) {
                while s.order.len() >= self.capacity {
                    let oldest = s.order.pop_front().expect("non-empty");
                    s.vectors.remove(&oldest);
                }
                s.order.push_back(text.to_owned());
                s.vectors.insert(text.to_owned(), Arc::clone(&v));
            }
        }
        v
    }

    /// Vectors kept now.
    pub fn len(&self) -> usize {
        self.lock().vectors.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The state, even after a panic elsewhere while it was held: each
    /// change leaves the map and the order consistent before the next
    /// statement can panic, so the data is sound.
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn computes_once_per_text_and_stays_bounded() {
        let cache = QueryCache::new(2);
        let calls = Cell::new(0);
        let f = |t: &str| {
            calls.set(calls.get() + 1);
            vec![t.len() as f32]
        };
        assert_eq!(&*cache.get_or_compute("ab", f), &[2.0]);
        assert_eq!(&*cache.get_or_compute("ab", f), &[2.0]);
        assert_eq!(calls.get(), 1, "a repeated text is not recomputed");
        cache.get_or_compute("abc", f);
        cache.get_or_compute("abcd", f);
        assert_eq!(cache.len(), 2, "the oldest is dropped at capacity");
        assert_eq!(calls.get(), 3);
        cache.get_or_compute("ab", f);
        assert_eq!(calls.get(), 4, "the dropped text is computed again");
        cache.get_or_compute("abcd", f);
        assert_eq!(calls.get(), 4, "the newest stayed");
        let st = cache.stats();
        assert_eq!((st.hits, st.misses, st.kept), (2, 4, 2));
    }

    #[test]
    fn capacity_zero_keeps_nothing() {
        let cache = QueryCache::new(0);
        let v = cache.get_or_compute("x", |_| vec![1.0]);
        assert_eq!(&*v, &[1.0]);
        assert!(cache.is_empty());
    }
}
